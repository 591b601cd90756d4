package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/sharedtest"
)

// runTrace runs "fabemu ARGS..." and returns stdout.
func runTrace(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func ajwPath(t *testing.T) string { return sharedtest.Trace(t, "ajw.1week.srt") }

func TestTraceStatsAJW(t *testing.T) {
	path := ajwPath(t)
	out, err := runTrace(t, "trace", "stats", path, "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Records      int64   `json:"records"`
		DurationS    float64 `json:"duration_s"`
		ReadFraction float64 `json:"read_fraction"`
		MeanSize     float64 `json:"mean_size_bytes"`
		Devices      []struct {
			Name     string `json:"name"`
			Requests int64  `json:"requests"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.Records != 44519 || int(st.ReadFraction*1000+0.5) != 293 || int(st.MeanSize+0.5) != 5914 ||
		len(st.Devices) != 2 || st.Devices[0].Requests != 42252 || st.Devices[1].Requests != 2267 ||
		st.Devices[0].Name != "disk unit 0" {
		t.Errorf("stats %+v", st)
	}
	table, err := runTrace(t, "trace", "stats", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"44519", "29.3%", "5914 bytes", "disk unit 1", "2267"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestTraceGenConvertStats(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "g.csv.gz")
	if _, err := runTrace(t, "trace", "gen", gen, "--like", "cello92", "--records", "2000", "--seed", "3", "--disks", "4", "--sizes", "4k:1"); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "g.disksim")
	if _, err := runTrace(t, "trace", "convert", gen, ds, "--to", "disksim"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{gen, ds} {
		out, err := runTrace(t, "trace", "stats", p, "--json", "-")
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Records int64   `json:"records"`
			Mean    float64 `json:"mean_size_bytes"`
			Devices []any   `json:"devices"`
		}
		json.Unmarshal([]byte(out), &st)
		if st.Records != 2000 || st.Mean != 4096 || len(st.Devices) != 4 {
			t.Errorf("%s: %+v", p, st)
		}
	}
	if _, err := runTrace(t, "trace", "convert", gen, filepath.Join(dir, "x"), "--to", "msr"); err == nil {
		t.Error("convert to msr accepted")
	}
	if _, err := runTrace(t, "trace", "gen", filepath.Join(dir, "x.txt"), "--records", "5"); err == nil {
		t.Error("gen with unknown extension accepted")
	}
	if _, err := runTrace(t, "trace", "gen", filepath.Join(dir, "x.csv"), "--like", "cello2000"); err == nil {
		t.Error("unknown profile accepted")
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arrival_ns,initiator,device,offset,size,op,sync,service_ns\n1,2,3\n"), 0o644)
	_, err := runTrace(t, "trace", "stats", bad)
	if err == nil || !strings.Contains(err.Error(), "bad.csv: line 2:") {
		t.Errorf("bad input error: %v", err)
	}
}

func TestTraceStatsSample(t *testing.T) {
	out, err := runTrace(t, "trace", "stats", "--sample", "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"records": 24000`) {
		t.Errorf("sample stats:\n%s", out)
	}
	if _, err := runTrace(t, "trace", "stats"); err == nil {
		t.Error("stats with no input accepted")
	}
}
