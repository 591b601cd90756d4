package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayCmd(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	ts := filepath.Join(dir, "r.csv")
	plot := filepath.Join(dir, "r.svg")
	out, err := runTrace(t, "replay", "--limit", "500", "--compression", "40", "--routing", "adaptive", "--seed", "3",
		"--json", js, "--timeseries", ts, "--plot", plot, "--set", "replay.initiators=random")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cello99-sample (embedded)", "compression factor", "trace execution time", "every request completed", "500 / 500"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "config", "requests", "completed", "trace_execution_time_ns", "latency_ns", "accepted_bytes_per_ns_per_switch", "run", "timeseries"} {
		if _, ok := s[k]; !ok {
			t.Errorf("JSON summary lacks %q", k)
		}
	}
	if s["schema"] != "fabemu.replay/v1" || s["requests"].(float64) != 500 || s["completed"].(float64) != 500 {
		t.Errorf("schema %v, requests %v, completed %v", s["schema"], s["requests"], s["completed"])
	}
	run := s["run"].(map[string]any)
	if _, ok := run["records_per_second"]; !ok {
		t.Error("run lacks records_per_second")
	}
	for _, p := range []string{ts, plot} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
}

// TestReplayCmdSameSeed: same flags, same JSON apart from the run object.
func TestReplayCmdSameSeed(t *testing.T) {
	dir := t.TempDir()
	get := func() []byte {
		js := filepath.Join(dir, "s.json")
		if _, err := runTrace(t, "replay", "--limit", "300", "--compression", "100", "--json", js); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		delete(s, "run")
		b, _ = json.Marshal(s)
		return b
	}
	if a, b := get(), get(); !bytes.Equal(a, b) {
		t.Fatal("same seed, different JSON")
	}
}

func TestReplayCmdErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", "no/such/trace.srt"}, "no/such/trace.srt"},
		{[]string{"--compression", "0"}, "--compression"},
		{[]string{"--compression", "-3"}, "must be positive"},
		{[]string{"--format", "tar"}, "unknown trace format"},
		{[]string{"--preset", "nope"}, "unknown preset"},
		{[]string{"--routing", "random"}, "deterministic or adaptive"},
		{[]string{"--from", "yesterday"}, "--from"},
		{[]string{"--set", "replay.disks=0"}, "replay.disks"},
		{[]string{"--set", "replay.nodisks=3"}, "nodisks"},
	} {
		_, err := runTrace(t, append([]string{"replay"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("replay %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestReplayCmdAJW(t *testing.T) {
	p := ajwPath(t)
	out, err := runTrace(t, "replay", "--trace", p, "--compression", "1e6", "--limit", "2000")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ajw.1week.srt (srt)") || !strings.Contains(out, "2,000 / 2,000") {
		t.Fatalf("output:\n%s", out)
	}
}
