package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/synth"
)

// extremeValues are the values every parameter is fed: zero, a negative
// number, the non-finite floats, the smallest and largest magnitudes and
// the largest int64.
var extremeValues = []string{"0", "-1", ".nan", ".inf", "-.inf", "1e-300", "1e300", "9223372036854775807", "1ps", "1TiB", "4GiB"}

// propertyRunLimit is the longest simulated run the property test carries
// out; a configuration that asks for more (a huge run.duration that was
// accepted) is validated and estimated but not run.
const propertyRunLimit = 200 * des.Microsecond

// TestEveryParameterExtremeValues feeds every parameter of `config
// explain` each extreme value, as --set does, to a small preset: the
// configuration is either refused with a one-line error that names the
// key, or it resolves, its `config dump` reads back as the same
// configuration, and it passes the memory estimate and runs (a short run)
// with every invariant holding. No value may panic. TestExplicitZero
// checks what an accepted 0 means.
func TestEveryParameterExtremeValues(t *testing.T) {
	// The bases: a small VCT fabric, RECN's MIN, and the small fabric
	// switched wormhole with deadlock detection, so that the wormhole and
	// deadlock keys (which VCT and a fabric without detection ignore)
	// are read by the runs.
	bases := []propertyBase{
		{name: "tap-pair-10g", preset: "tap-pair-10g"},
		{name: "paper000-min64", preset: "paper000-min64"},
		{name: "tap-pair-10g-wormhole", preset: "tap-pair-10g", sets: []string{"fabric.switch=iq", "fabric.switching=wormhole", "fabric.deadlock.detection=true"}},
	}
	if testing.Short() {
		bases = bases[:1]
	}
	for _, b := range bases {
		base, err := model.LookupPreset(b.preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params.Explain(&base) {
			for _, v := range extremeValues {
				t.Run(b.name+"/"+p.Path+"="+v, func(t *testing.T) {
					t.Parallel()
					propertyCase(t, b, p.Path, v, "")
				})
				t.Run(b.name+"/yaml/"+p.Path+"="+v, func(t *testing.T) {
					t.Parallel()
					propertyCase(t, b, p.Path, v, yamlFile(t, p.Path, v))
				})
			}
		}
	}
}

// propertyBase is a preset and the key=values applied to it before the
// key under test.
type propertyBase struct {
	name, preset string
	sets         []string
}

// yamlFile writes a config file that sets the dotted key to value.
func yamlFile(t *testing.T, key, value string) string {
	var b strings.Builder
	parts := strings.Split(key, ".")
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i < len(parts)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" " + value + "\n")
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// propertyCase sets key to value, by --set or (file != "") by a config
// file, and checks the outcome.
func propertyCase(t *testing.T, b propertyBase, key, value, file string) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("--set %s=%s panics: %v", key, value, r)
		}
	}()
	var sets []string
	for _, kv := range append([]string{"run.duration=5us", "run.warmup=1us", "traffic.load=0.3"}, b.sets...) {
		if file == "" || !strings.HasPrefix(kv, key+"=") { // the file's key is not overridden
			sets = append(sets, kv)
		}
	}
	if file == "" {
		sets = append(sets, key+"="+value)
	}
	cfg, _, err := model.Resolve(model.Layers{Preset: b.preset, File: file, Sets: model.Sets("--set", sets)}, model.LookupPreset)
	if err == nil {
		// What is accepted must survive `config dump`: the dump read back
		// over another preset is the same configuration (no key of it an
		// explicit 0 that reading refuses, no value printed otherwise).
		path := dumpTo(t, t.TempDir(), "dump", &cfg)
		back, _, err := model.Resolve(model.Layers{Preset: "torus8x8-dor", File: path}, model.LookupPreset)
		if err != nil {
			t.Fatalf("--set %s=%s: the dump of the accepted configuration is refused: %v", key, value, err)
		}
		if d := fieldDiff(reflect.ValueOf(cfg), reflect.ValueOf(back), "config"); d != "" {
			t.Fatalf("--set %s=%s: the dump reads back as another configuration: %s", key, value, d)
		}
	}
	if err == nil {
		var wl model.Workload
		if wl, err = workloadOf(&cfg); err == nil {
			var est model.MemoryEstimate
			if est, err = model.EstimateRun(&cfg.Model, wl); err == nil {
				err = model.CheckMemory(&cfg.Model, est, 1, 2<<30)
			}
		}
	}
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("--set %s=%s: error is not one line: %q", key, value, msg)
		}
		if !namesKey(msg, key) {
			t.Errorf("--set %s=%s: error does not name the key: %q", key, value, msg)
		}
		return
	}
	if end := cfg.Run.Warmup + cfg.Run.Duration + cfg.Run.Drain; end > propertyRunLimit || end < 0 {
		return
	}
	sum, err := synth.RunSim(cfg, nil)
	if err != nil {
		msg := err.Error()
		if !namesKey(msg, key) && !strings.Contains(msg, "source") {
			t.Errorf("--set %s=%s: the run fails with an error that does not name the key: %q", key, value, msg)
		}
		return
	}
	if !sum.Invariants.OK {
		t.Errorf("--set %s=%s: invariants violated: %s", key, value, strings.Join(sum.Invariants.Violations, "; "))
	}
}

// namesKey reports whether msg names key: the dotted key, or its last
// part when the message names the section (fabric.recn.max_saqs may be
// named "fabric.recn.max_saqs" or "max_saqs").
func namesKey(msg, key string) bool {
	if strings.Contains(msg, key) {
		return true
	}
	parts := strings.Split(key, ".")
	last := parts[len(parts)-1]
	if isIndex(last) && len(parts) > 1 {
		last = parts[len(parts)-2]
	}
	return strings.Contains(msg, last)
}

func isIndex(s string) bool {
	var n int
	_, err := fmt.Sscan(s, &n)
	return err == nil
}
