package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
)

// zeroMeaning lists every parameter of `config explain` whose explicit 0
// is accepted, with what that 0 means. Every other parameter refuses an
// explicit 0, naming the key and its range (TestExplicitZero checks both
// directions, so a new parameter whose 0 quietly stands for a default
// fails until it is refused or listed here with a meaning of its own). A
// 0 here is a real zero, a documented "none"/"off", or a documented
// selector of a value computed from other keys; none is a constant
// default in disguise.
var zeroMeaning = map[string]string{
	"topology.n":                      "len(topology.k): a cube's dimensions from the list",
	"topology.ports":                  "exactly the ports the cube needs (hosts_per_switch + 2n)",
	"topology.hosts":                  "ignored outside MINs (a MIN refuses it)",
	"topology.min_radix":              "ignored outside MINs (a MIN refuses it)",
	"topology.stages":                 "the fewest stages for the hosts and radix",
	"topology.switches":               "ignored outside irregular networks (they refuse it)",
	"topology.seed":                   "seed 0, a seed like any other",
	"topology.hosts_per_switch":       "ignored by MINs (tori, meshes and irregular networks refuse it)",
	"routing.adaptive_vls":            "no adaptive lanes: deterministic routing (adaptive routing refuses it)",
	"routing.updown_root":             "switch 0",
	"fabric.link_length_m":            "no cable: no propagation delay",
	"fabric.propagation_per_m":        "no propagation delay",
	"fabric.routing_delay":            "no routing time",
	"fabric.output_buffer":            "no output buffer (iq-like architectures; the others refuse it)",
	"fabric.escape_vl_buffer":         "one largest packet, computed from nic.mtu",
	"fabric.deadlock.threshold":       "not set: threshold_cycles applies",
	"nic.header_bytes":                "no header bytes",
	"nic.injection_control.u1":        "paper 001 Table 1's value for the topology and lanes (resolved and noted)",
	"nic.injection_control.u2":        "a real zero",
	"nic.injection_control.u3":        "a real zero",
	"nic.injection_control.u4":        "a real zero",
	"nic.injection_control.threshold": "a real zero",
	"nic.injection_queues.capacity":   "unbounded",
	"traffic.load":                    "no traffic",
	"run.seed":                        "seed 0, a seed like any other",
	"run.warmup":                      "no warm-up",
	"run.bin":                         "one fiftieth of the measured duration",
	"run.drain":                       "no drain",
	"run.max_source_packets":          "what half the memory left after the estimate holds",
	"replay.sort_window":              "no window: file order (late records issued at their predecessor's time and counted)",
	"replay.from":                     "the first record's arrival",
	"replay.to":                       "the end of the trace",
	"replay.limit":                    "every record of the window",
	"replay.initiator_hosts":          "every host that is not a disk",
	"replay.request_bytes":            "header-only request and completion messages",
}

// TestExplicitZero: `--set KEY=0` for every parameter of `config explain`,
// over presets that use the keys (VCT and wormhole, RECN and RECN-IQ, the
// admittance NIC, deadlock recovery), and for replay's own keys: either
// refused with one line naming the key and the range it takes, or
// accepted for a key of zeroMeaning.
// An explicit 0 no longer becomes a default behind the user's back
// (nic.admittance.*, fabric.flit_bytes, fabric.lane_flits,
// fabric.deadlock.threshold_cycles and cycle_bytes,
// fabric.recn_iq.post_processing_delay were the last).
func TestExplicitZero(t *testing.T) {
	presets := []struct {
		name string
		sets []string
	}{
		{"tap-pair-10g", nil},
		{"paper000-min64", []string{"nic.model=admittance"}},
		{"paper001-8ary3cube-wh", nil},
		{"paper003-min256-8x8", nil},
	}
	accepted := map[string]bool{}
	for _, p := range presets {
		base, err := model.LookupPreset(p.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range params.Explain(&base) {
			if e.Type == "string" || e.Type == "bool" || strings.HasPrefix(e.Type, "[") || strings.HasPrefix(e.Type, "map") {
				continue // not a number: "0" is a name, refused or not by what the key accepts
			}
			sets := append(append([]string(nil), p.sets...), e.Path+"=0")
			cfg, _, err := model.Resolve(model.Layers{Preset: p.name, Sets: model.Sets("--set", sets)}, model.LookupPreset)
			if err == nil {
				_, err = workloadOf(&cfg)
			}
			if err == nil {
				accepted[e.Path] = true
				if _, ok := zeroMeaning[e.Path]; !ok {
					t.Errorf("%s: --set %s=0 is accepted, and the key is not among those whose 0 has a meaning of its own: refuse it (a nonzero tag) or list what 0 means", p.name, e.Path)
				}
				continue
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !namesKey(msg, e.Path) {
				t.Errorf("%s: --set %s=0: %q: want one line naming the key", p.name, e.Path, msg)
			}
		}
	}
	// The keys only a replay has (the model's are checked above).
	rbase, err := replay.ReplayPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range params.Explain(&rbase) {
		if !strings.HasPrefix(e.Path, "replay.") && !strings.HasPrefix(e.Path, "run.") ||
			e.Type == "string" || e.Type == "bool" || strings.HasPrefix(e.Type, "[") {
			continue
		}
		cfg, _, err := model.Resolve(model.Layers{Preset: "torus8x8-dor", Sets: model.Sets("--set", []string{e.Path + "=0"})}, replay.ReplayPreset)
		if err == nil {
			_, err = workloadOf(&cfg)
		}
		if err == nil {
			if _, ok := zeroMeaning[e.Path]; !ok {
				t.Errorf("replay: --set %s=0 is accepted, and the key is not among those whose 0 has a meaning of its own", e.Path)
			}
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !namesKey(msg, e.Path) {
			t.Errorf("replay: --set %s=0: %q: want one line naming the key", e.Path, msg)
		}
	}
	for _, key := range []string{"nic.admittance.messages", "nic.admittance.injection_packets", "fabric.flit_bytes", "fabric.lane_flits",
		"fabric.deadlock.threshold_cycles", "fabric.deadlock.cycle_bytes", "fabric.recn_iq.post_processing_delay"} {
		if accepted[key] {
			t.Errorf("--set %s=0 is accepted; want it refused", key)
		}
	}
}

// TestZeroIsNotDefaultRound3: the last keys whose explicit 0 became their
// default (a dump wrote them as 0, so refusing 0 would have broken reading
// a dump back; DefaultConfig now holds the defaults and a dump writes
// them) are refused naming the key and the range, by --set and in a file,
// on the binary; their smallest real values run.
func TestZeroIsNotDefaultRound3(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	wh := []string{"sim", "--preset", "tap-pair-10g", "--duration", "1us", "--set", "fabric.switch=iq", "--set", "fabric.switching=wormhole"}
	recniq := []string{"sim", "--preset", "paper003-min256-8x8", "--duration", "1us"}
	adm := []string{"sim", "--preset", "paper000-min64", "--duration", "1us", "--set", "nic.model=admittance"}
	cases := []struct {
		key, want string
		base      []string
		one       string // the smallest value, which runs
	}{
		{"nic.admittance.messages", "want 1 to 1048576 messages (leave the key out for the default, 4)", adm, "1"},
		{"nic.admittance.injection_packets", "want 1 to 1048576 packets (leave the key out for the default, 4)", adm, "1"},
		{"fabric.flit_bytes", "want 1 byte to 1GiB (leave the key out for the default, 16B)", wh, "1B"},
		{"fabric.lane_flits", "want 1 to 1048576 flits (leave the key out for the default, 4)", wh, "1"},
		{"fabric.deadlock.threshold_cycles", "want 1 to 1048576 cycles (leave the key out for the default, 32)", wh, "1"},
		{"fabric.deadlock.cycle_bytes", "want 1 byte to 1GiB (leave the key out for the default, 16B)", wh, "1B"},
		{"fabric.recn_iq.post_processing_delay", "want a positive time; post_processing instant for none (leave the key out for the default, 10ns)", recniq, "1ps"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			with := func(args ...string) []string { return append(append([]string(nil), c.base...), args...) }
			expectRefusal(t, bin, with("--set", c.key+"=0"), "--set "+c.key+": 0: "+c.want, 0)
			parts := strings.Split(c.key, ".")
			body := ""
			for i, p := range parts {
				body += strings.Repeat("  ", i) + p + ":"
				if i < len(parts)-1 {
					body += "\n"
				}
			}
			file := writeFile(t, dir, c.key+".yaml", text(body+" 0\n"))
			expectRefusal(t, bin, with("--config", file), c.key+".yaml:"+strconv.Itoa(len(parts))+": "+c.key+": 0: "+c.want, 0)
			if _, err := run(t, with("--set", c.key+"="+c.one, "--set", "fabric.deadlock.detection=true")...); err != nil {
				t.Errorf("--set %s=%s: %v", c.key, c.one, err)
			}
		})
	}
}

// TestDumpRoundTripEveryPreset: for every preset, sim's and replay's
// resolved configuration dumped and read back as --config over another
// preset is the same configuration, field for field (also the fields no
// key names), and the same JSON (the summaries' config and the sweeps'
// hashes); two small presets are run both ways and give byte-identical
// summaries. A dump writes every value a run uses, defaults filled in, so
// no key of it is an explicit 0 that reading it back would refuse.
func TestDumpRoundTripEveryPreset(t *testing.T) {
	dir := t.TempDir()
	// Non-default values of the keys whose defaults used to be written
	// as 0, so that a dump carries them and not the defaults.
	changed := []string{"nic.model=admittance", "nic.admittance.messages=2", "nic.admittance.injection_packets=7",
		"fabric.deadlock.detection=true", "fabric.deadlock.threshold_cycles=40", "fabric.deadlock.cycle_bytes=32B",
		"fabric.recn_iq.post_processing_delay=3ns"}
	for _, p := range model.Presets() {
		for _, sets := range [][]string{nil, changed} {
			name := p.Name
			if sets != nil {
				name += "/changed"
			}
			t.Run("sim/"+name, func(t *testing.T) {
				first, _, err := model.Resolve(model.Layers{Preset: p.Name, Sets: model.Sets("--set", sets)}, model.LookupPreset)
				if err != nil {
					if sets != nil {
						return // a preset whose architecture refuses the changes
					}
					t.Fatal(err)
				}
				path := dumpTo(t, dir, name, &first)
				for _, over := range []string{"torus8x8-dor", "paper001-16ary2cube-wh"} {
					second, _, err := model.Resolve(model.Layers{Preset: over, File: path}, model.LookupPreset)
					if err != nil {
						t.Fatalf("reading the dump over %s: %v", over, err)
					}
					sameConfig(t, over, first, second)
				}
			})
		}
		t.Run("replay/"+p.Name, func(t *testing.T) {
			first, _, err := model.Resolve(model.Layers{Preset: p.Name}, replay.ReplayPreset)
			if err != nil {
				t.Fatal(err)
			}
			path := dumpTo(t, dir, "replay-"+p.Name, &first)
			second, _, err := model.Resolve(model.Layers{Preset: "torus8x8-dor", File: path}, replay.ReplayPreset)
			if err != nil {
				t.Fatalf("reading the dump: %v", err)
			}
			sameConfig(t, "torus8x8-dor", first, second)
		})
	}
	for _, preset := range []string{"tap-pair-10g", "paper001-8ary3cube-wh"} {
		t.Run("run/"+preset, func(t *testing.T) {
			sets := model.Sets("--set", []string{"run.duration=5us", "run.warmup=1us"})
			first, _, err := model.Resolve(model.Layers{Preset: preset, Sets: sets}, model.LookupPreset)
			if err != nil {
				t.Fatal(err)
			}
			path := dumpTo(t, dir, "run-"+preset, &first)
			second, _, err := model.Resolve(model.Layers{Preset: "torus8x8-dor", File: path}, model.LookupPreset)
			if err != nil {
				t.Fatal(err)
			}
			var out [2][]byte
			for i, cfg := range []model.SimConfig{first, second} {
				sum, err := synth.RunSim(cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !sum.Invariants.OK {
					t.Fatalf("invariants: %v", sum.Invariants.Violations)
				}
				sum.Run = nil // wall-clock figures
				if out[i], err = json.Marshal(sum); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(out[0], out[1]) {
				t.Errorf("the run of the dump differs from the preset's:\n%s\n---\n%s", out[0], out[1])
			}
		})
	}
}

// dumpTo writes the dump of cfg to a file of dir and returns its path.
func dumpTo(t *testing.T, dir, name string, cfg any) string {
	t.Helper()
	b, err := params.Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sameConfig fails unless a and b are equal field for field and as JSON.
func sameConfig[C any](t *testing.T, over string, a, b C) {
	t.Helper()
	if d := fieldDiff(reflect.ValueOf(a), reflect.ValueOf(b), "config"); d != "" {
		da, _ := params.Dump(&a)
		db, _ := params.Dump(&b)
		t.Fatalf("read back over %s, the dump resolves to another configuration: %s\n%s", over, d, lineDiff(string(da), string(db)))
	}
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	// An empty list read from a dump is [] where the preset's is nil:
	// the same configuration, printed two ways in JSON.
	ja, jb = bytes.ReplaceAll(ja, []byte("[]"), []byte("null")), bytes.ReplaceAll(jb, []byte("[]"), []byte("null"))
	if !bytes.Equal(ja, jb) {
		i := 0
		for i < len(ja) && i < len(jb) && ja[i] == jb[i] {
			i++
		}
		t.Fatalf("read back over %s, the JSON differs at byte %d: %q and %q", over, i, ja[max(0, i-80):min(len(ja), i+40)], jb[max(0, i-80):min(len(jb), i+40)])
	}
}

// lineDiff lists the lines of a and b that the other lacks.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d []string
	for l := range ma {
		if !mb[l] {
			d = append(d, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			d = append(d, "+ "+l)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// fieldDiff names the first field where a and b differ, with both values
// (a nil and an empty list are the same configuration).
func fieldDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if d := fieldDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil and not nil"
			}
			return ""
		}
		return fieldDiff(a.Elem(), b.Elem(), path)
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d and %d entries", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := fieldDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %#v and %#v", path, a.Interface(), b.Interface())
	}
	return ""
}

// TestSlurmArrayStep: a Slurm array with a step (sbatch --array=0-2:2,
// tasks 0 and 2 of SLURM_ARRAY_TASK_COUNT=2) runs shards 0 and 1, and the
// sweep merges complete. Task 2 used to be shard 2 of 2 (refused) and
// shard 1 never ran; a task ID off the step is refused naming the
// variables.
func TestSlurmArrayStep(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "step.yaml")
	if err := os.WriteFile(spec, []byte(`name: step
grid:
  preset: tap-pair-10g
  set: [run.duration=5us, run.warmup=1us]
  loads: [0.2, 0.5]
shards: 2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "res")
	t.Setenv("SLURM_ARRAY_TASK_COUNT", "2")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "0")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "2")
	t.Setenv("SLURM_ARRAY_TASK_STEP", "2")
	for _, id := range []string{"0", "2"} {
		t.Setenv("SLURM_ARRAY_TASK_ID", id)
		if _, err := runTrace(t, "sweep", "run", spec, "--out", res); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
	}
	if _, err := runTrace(t, "sweep", "merge", res, "--out", filepath.Join(dir, "merged.json")); err != nil {
		t.Fatalf("merge after tasks 0 and 2 of a stepped array: %v", err)
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "1")
	_, err := runTrace(t, "sweep", "run", spec, "--out", res)
	if err == nil || !strings.Contains(err.Error(), "SLURM_ARRAY_TASK_ID=1 is not SLURM_ARRAY_TASK_MIN=0 plus a multiple of SLURM_ARRAY_TASK_STEP=2") {
		t.Fatalf("task 1 of an array in steps of 2: %v", err)
	}
}

// TestCaptureJSONWriteErrorNamesJSON: `capture --json /dev/full` fails
// naming --json and the device, not the pcapng path (the issue saw the
// error blamed on the capture file); the capture file itself is whole.
func TestCaptureJSONWriteErrorNamesJSON(t *testing.T) {
	privtest.Require(t, "a network namespace and eBPF")
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this machine")
	}
	bin := buildBinary(t)
	nsA, _, devA, _ := vethBetweenNamespaces(t, "f5j", "f5j")
	out := filepath.Join(t.TempDir(), "c.pcapng")
	cmd := exec.Command(bin, "capture", "--iface", devA, "--netns", nsA, "--out", out, "--json", "/dev/full", "--duration", "200ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if err == nil || last != "fabemu: capture: --json: write /dev/full: no space left on device" {
		t.Fatalf("capture --json /dev/full: %v, last line %q\n%s", err, last, stderr.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("the capture file: %v", err)
	}
}

// TestDaemonZeroIsNotDefault: the daemon's keys whose 0 stood for a
// default (taps[].mtu 1500, background.capture_ring 4 MiB) refuse an
// explicit 0 naming the file, line, key and range, before anything is
// created; left out they keep their defaults.
func TestDaemonZeroIsNotDefault(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cases := []struct{ name, body, want string }{
		{"mtu", "taps:\n  - name: fzt0\n    mtu: 0\n", "mtu.yaml:3: taps[0].mtu: 0: want 68 to 65521 bytes (leave the key out for 1500)"},
		{"ring", "background:\n  capture_ring: 0\n", "ring.yaml:2: background.capture_ring: 0: want 4096 to 1073741824 bytes (leave the key out for 4 MiB)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, []string{"run", "--config", writeFile(t, dir, c.name+".yaml", text(c.body))}, c.want, 0)
		})
	}
}

// TestSweepShardsZero: `sweep plan --shards 0` and `sweep submit --shards
// 0` used to show or submit the spec's shard count, and a spec's
// `shards: 0` was the same as leaving it out; each is refused naming the
// flag or the file, line and key. Left out, the spec's count applies.
func TestSweepShardsZero(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	spec := "name: s\ngrid:\n  preset: tap-pair-10g\n  set: [run.duration=5us]\n  loads: [0.2, 0.5]\n"
	two := writeFile(t, dir, "two.yaml", text(spec+"shards: 2\n"))
	zero := writeFile(t, dir, "zero.yaml", text(spec+"shards: 0\n"))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"plan --shards 0", []string{"sweep", "plan", two, "--shards", "0"}, "--shards 0: want at least 1 (leave the flag out for the spec's shards)"},
		{"plan --shards -3", []string{"sweep", "plan", two, "--shards", "-3"}, "--shards -3: want at least 1"},
		{"submit --shards 0", []string{"sweep", "submit", two, "--slurm", "--out", filepath.Join(dir, "out"), "--shards", "0"}, "--shards 0: want at least 1"},
		{"spec shards: 0", []string{"sweep", "plan", zero}, "zero.yaml:6: shards: 0: want a positive shard count (leave the key out to let the command choose)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
	out, err := runTrace(t, "sweep", "plan", two)
	if err != nil || !strings.Contains(out, "2 shards") {
		t.Fatalf("plan of a 2-shard spec: %v\n%s", err, out)
	}
}

// TestIgnoredKeysStillChecked: a value no run would accept is refused even
// where the key is not read, and under --dry-run: the RECN-IQ section on
// a cioq fabric, the topology file's path and format for a cube, the
// injection process and load phases (read only when the run starts) used
// to be accepted by sim --dry-run, or by every run for the first four.
func TestIgnoredKeysStillChecked(t *testing.T) {
	bin := buildBinary(t)
	sim := []string{"sim", "--preset", "tap-pair-10g", "--duration", "1us"}
	cases := []struct{ set, want string }{
		{"fabric.recn_iq.post_processing=bogus", `fabric.recn_iq.post_processing "bogus": want timed, bypass or instant`},
		{"fabric.recn_iq.detection=bogus", `fabric.recn_iq.detection "bogus": want cycle or events`},
		{"fabric.recn.xon_threshold=4KiB", "fabric.recn.xon_threshold"},
		{"topology.path=x.json", `topology: path: "x.json": only kind file reads a topology file, and kind is mesh`},
		{"topology.format=json", `topology: format: "json": only kind file reads a topology file, and kind is mesh`},
		{"traffic.process=bogus", `traffic.process: unknown injection process "bogus"`},
		{"traffic.phases=bogus", `traffic.phases: load phases "bogus"`},
	}
	for _, c := range cases {
		for _, dry := range []bool{false, true} {
			args := append(append([]string(nil), sim...), "--set", c.set)
			name := c.set
			if dry {
				args, name = append(args, "--dry-run"), name+"/dry-run"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				expectRefusal(t, bin, args, c.want, 0)
			})
		}
	}
}
