package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsNeverFailSilently runs every command's every file output
// against a device that refuses writes (/dev/full, reached through a
// symbolic link whose name carries the extension the output wants), a
// directory, and one of the command's inputs. Each must end in an error
// naming the path, and the input must be left as it was.
func TestOutputsNeverFailSilently(t *testing.T) {
	dir := t.TempDir()
	_, haveFull := os.Stat("/dev/full")

	// Inputs.
	trace := filepath.Join(dir, "in.csv")
	if _, err := runTrace(t, "trace", "gen", trace, "--records", "300", "--rate", "2000"); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "model.yaml")
	exp := filepath.Join(dir, "exp.yaml")
	for path, text := range map[string]string{
		config: "traffic:\n  load: 0.3\n",
		exp: `name: outputs
kind: replay
base: {preset: paper004-torus4x4, set: [replay.limit=100, replay.compression=40]}
rows:
  - {name: DET, delivery: deterministic}
columns: [time]
plot: {kind: bar, y: time, title: outputs}
`,
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inputs := map[string][]byte{}
	for _, p := range []string{trace, config, exp} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = b
	}

	sim := []string{"sim", "--preset", "torus8x8-dor", "--duration", "10us", "--warmup", "10us"}
	sweep := append(append([]string{}, sim...), "--sweep-load", "0.1:0.2:0.1", "--jobs", "1")
	replay := []string{"replay", "--limit", "100", "--compression", "40"}
	tests := []struct {
		name string
		// args builds the command line with the output at out.
		args func(out string) []string
		ext  string // the extension the output needs
		// input is a file the command reads, for the onto-the-input case
		// ("" when the command reads none).
		input string
	}{
		{"sim --json", func(o string) []string { return append(sim, "--config", config, "--json", o) }, ".json", config},
		{"sim --timeseries", func(o string) []string { return append(sim, "--config", config, "--timeseries", o) }, ".csv", config},
		{"sim sweep --json", func(o string) []string { return append(sweep, "--json", o, "--plot", filepath.Join(dir, "sweep.svg")) }, ".json", ""},
		{"sim sweep --plot", func(o string) []string { return append(sweep, "--config", config, "--plot", o) }, ".svg", config},
		{"replay --json", func(o string) []string { return append(replay, "--trace", trace, "--json", o) }, ".json", trace},
		{"replay --timeseries", func(o string) []string { return append(replay, "--trace", trace, "--timeseries", o) }, ".jsonl", trace},
		{"replay --plot", func(o string) []string { return append(replay, "--trace", trace, "--plot", o) }, ".png", trace},
		{"replay --pcap-out", func(o string) []string { return append(replay, "--trace", trace, "--pcap-out", o) }, ".pcapng", trace},
		{"experiment --json", func(o string) []string { return []string{"experiment", exp, "--json", o} }, ".json", exp},
		{"experiment --plot", func(o string) []string { return []string{"experiment", exp, "--plot", o} }, ".svg", exp},
		{"trace stats --json", func(o string) []string { return []string{"trace", "stats", trace, "--json", o} }, ".json", trace},
		{"trace convert", func(o string) []string { return []string{"trace", "convert", trace, o, "--to", "srt"} }, ".srt", trace},
		{"trace convert .gz", func(o string) []string { return []string{"trace", "convert", trace, o, "--to", "csv"} }, ".csv.gz", trace},
		{"trace gen", func(o string) []string { return []string{"trace", "gen", o, "--records", "30000"} }, ".fio", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(kind, out, want string) {
				t.Helper()
				_, err := runTrace(t, tt.args(out)...)
				t.Logf("%s: %v", kind, err)
				if err == nil {
					t.Errorf("%s: %s succeeded", kind, out)
					return
				}
				if msg := err.Error(); !strings.Contains(msg, out) || !strings.Contains(msg, want) || strings.Contains(msg, ".tmp") ||
					strings.Contains(msg, "\n") {
					t.Errorf("%s: error %q, want one line naming %s and saying %q", kind, msg, out, want)
				}
			}
			if haveFull == nil {
				full := filepath.Join(dir, "full"+string(rune('a'+i))+tt.ext)
				if err := os.Symlink("/dev/full", full); err != nil {
					t.Fatal(err)
				}
				check("/dev/full", full, "no space left on device")
			}
			sub := filepath.Join(dir, "dir"+string(rune('a'+i))+tt.ext)
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			check("directory", sub, sub+" is a directory")
			if tt.input != "" {
				check("onto the input", tt.input, "input")
			}
		})
	}
	// The two commands of the report, on /dev/full itself.
	if haveFull == nil {
		for _, args := range [][]string{
			append(sim, "--json", "/dev/full"),
			{"trace", "convert", trace, "/dev/full", "--to", "csv"},
		} {
			_, err := runTrace(t, args...)
			if want := "write /dev/full: no space left on device"; err == nil || err.Error() != want {
				t.Errorf("fabemu %s: %v, want %q", strings.Join(args, " "), err, want)
			}
		}
	}
	for p, b := range inputs {
		if got, _ := os.ReadFile(p); string(got) != string(b) {
			t.Errorf("input %s changed", p)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
	if st, err := os.Stat("/dev/full"); haveFull == nil && (err != nil || st.Mode()&os.ModeCharDevice == 0) {
		t.Fatalf("/dev/full is no longer a character device")
	}
}

// TestFailedConvertKeepsPreviousFile: a conversion whose input breaks
// after many records (well past the first buffer flush) fails naming the
// record and leaves the previous output as it was.
func TestFailedConvertKeepsPreviousFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if _, err := runTrace(t, "trace", "gen", good, "--records", "20000"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, append(b, "this,is,not,a,record\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.srt")
	if _, err := runTrace(t, "trace", "convert", good, out, "--to", "srt"); err != nil {
		t.Fatal(err)
	}
	prev, _ := os.ReadFile(out)
	_, err = runTrace(t, "trace", "convert", bad, out, "--to", "srt")
	if err == nil || !strings.Contains(err.Error(), "20002") {
		t.Fatalf("convert of a broken trace: %v, want an error naming line 20002", err)
	}
	if got, _ := os.ReadFile(out); string(got) != string(prev) {
		t.Fatalf("previous output replaced: %d bytes, was %d", len(got), len(prev))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestStdoutFull: the table on standard output is an output too; a
// failed write to it is an error and a non-zero exit.
func TestStdoutFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full on this system")
	}
	defer full.Close()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "trace", "stats", "--sample")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &stderr
	err = cmd.Run()
	if want := "fabemu: write /dev/stdout: no space left on device\n"; err == nil || stderr.String() != want {
		t.Fatalf("exit %v, stderr %q; want a failure saying %q", err, stderr.String(), want)
	}
}
