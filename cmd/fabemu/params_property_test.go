package main

import (
	"fmt"
	"os"
	"path/filepath"
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
// key, or it resolves, passes the memory estimate and runs (a short run)
// with every invariant holding. No value may panic.
func TestEveryParameterExtremeValues(t *testing.T) {
	presets := []string{"tap-pair-10g", "paper000-min64"}
	if testing.Short() {
		presets = presets[:1]
	}
	for _, preset := range presets {
		base, err := model.LookupPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params.Explain(&base) {
			for _, v := range extremeValues {
				t.Run(preset+"/"+p.Path+"="+v, func(t *testing.T) {
					t.Parallel()
					propertyCase(t, preset, p.Path, v, "")
				})
				t.Run(preset+"/yaml/"+p.Path+"="+v, func(t *testing.T) {
					t.Parallel()
					propertyCase(t, preset, p.Path, v, yamlFile(t, p.Path, v))
				})
			}
		}
	}
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
func propertyCase(t *testing.T, preset, key, value, file string) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("--set %s=%s panics: %v", key, value, r)
		}
	}()
	sets := []string{"run.duration=5us", "run.warmup=1us", "traffic.load=0.3"}
	if file == "" {
		sets = append(sets, key+"="+value)
	} else if key == "run.duration" || key == "run.warmup" || key == "traffic.load" {
		sets = nil
	}
	cfg, _, err := model.Resolve(model.Layers{Preset: preset, File: file, Sets: model.Sets("--set", sets)}, model.LookupPreset)
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
