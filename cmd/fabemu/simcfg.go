package main

import (
	"fmt"
	"os"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/reorder"
	"github.com/spf13/cobra"
)

// modelFlags are the flags that select and adjust a model configuration,
// shared by the commands that run one (sim, sweep, replay).
type modelFlags struct {
	preset   string
	config   string
	sets     []string
	routing  string
	pattern  string
	process  string
	sizes    string
	load     float64
	seed     uint64
	duration string
	warmup   string
	dl       deliveryFlags
}

// deliveryFlags set the end-to-end delivery of nic.delivery; sim and
// replay both register them.
type deliveryFlags struct {
	delivery  string
	reorder   string
	injection string
}

func (m *modelFlags) register(cmd *cobra.Command, defaultPreset string) {
	fs := cmd.Flags()
	fs.StringVar(&m.preset, "preset", defaultPreset, "named configuration to start from (--list-presets shows them)")
	fs.StringVar(&m.config, "config", "", "YAML file overriding preset fields (unknown keys are errors)")
	fs.StringArrayVar(&m.sets, "set", nil, "override one field, e.g. --set fabric.link_rate=10Gbps (repeatable; applied last)")
	fs.StringVar(&m.routing, "routing", "", "deterministic or adaptive")
	fs.StringVar(&m.pattern, "pattern", "", "traffic pattern: uniform, bitrev, butterfly, complement, shuffle, transpose, hotspot[:frac[@node]], hotregion, corner1, corner2")
	fs.StringVar(&m.process, "process", "", "injection process: bernoulli, exponential or periodic")
	fs.StringVar(&m.sizes, "sizes", "", "message payload bytes, fixed (256) or a mix (256:0.5,4096:0.5)")
	fs.Float64Var(&m.load, "load", 0, "offered load per host, fraction of the host link's data rate")
	fs.Uint64Var(&m.seed, "seed", 0, "random seed")
	fs.StringVar(&m.duration, "duration", "", "simulated time measured after warm-up, e.g. 200us")
	fs.StringVar(&m.warmup, "warmup", "", "simulated warm-up time, e.g. 50us")
	m.dl.register(cmd)
}

func (m *deliveryFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&m.delivery, "delivery", "", "deterministic (escape routing only), adaptive-ooo (adaptive, deliver on arrival) or adaptive-inorder (adaptive + rearrangement + ACK/NACK); forces the routing mode")
	fs.StringVar(&m.reorder, "reorder", "", "rearrangement memory per NIC for adaptive-inorder: static:2KiB, static:32KiB, dynamic:256KiB,cap=128KiB, dynamic:4MiB,cap=1MiB or unlimited")
	fs.StringVar(&m.injection, "injection", "", "injection policy for adaptive-inorder: unlimited, li (ADAP-LI) or lw (ADAP-LW, static memory only)")
}

// apply sets the end-to-end delivery fields of d from the --delivery,
// --reorder and --injection flags that were given.
func (m *deliveryFlags) apply(cmd *cobra.Command, d *nic.DeliveryConfig) error {
	fs := cmd.Flags()
	if fs.Changed("delivery") {
		mode, err := nic.ParseDeliveryMode(m.delivery)
		if err != nil {
			return fmt.Errorf("--delivery: %w", err)
		}
		d.Mode = mode
	}
	if fs.Changed("reorder") {
		if _, err := reorder.ParseMemorySpec(m.reorder); err != nil {
			return fmt.Errorf("--reorder: %w", err)
		}
		d.Reorder = m.reorder
	}
	if fs.Changed("injection") {
		k, err := injection.ParseKind(m.injection)
		if err != nil {
			return fmt.Errorf("--injection: %w", err)
		}
		d.Injection.Policy = k
	}
	return nil
}

// resolveSim builds a synthetic-run configuration: the preset, then
// --config, then the individual flags that were given, then every --set.
func (m *modelFlags) resolveSim(cmd *cobra.Command) (model.SimConfig, error) {
	cfg, err := model.LookupPreset(m.preset)
	if err != nil {
		return cfg, err
	}
	if m.config != "" {
		if err := params.LoadYAML(m.config, &cfg); err != nil {
			return cfg, err
		}
	}
	fs := cmd.Flags()
	var ferr error
	set := func(flag string, f func() error) {
		if ferr == nil && fs.Changed(flag) {
			if err := f(); err != nil {
				ferr = fmt.Errorf("--%s: %w", flag, err)
			}
		}
	}
	set("routing", func() (err error) { cfg.Routing.Mode, err = parseMode(m.routing); return })
	set("pattern", func() error { cfg.Traffic.Pattern = m.pattern; return nil })
	set("process", func() error { cfg.Traffic.Process = m.process; return nil })
	set("sizes", func() error { cfg.Traffic.Sizes = m.sizes; return nil })
	set("load", func() error { cfg.Traffic.Load = m.load; return nil })
	set("seed", func() error { cfg.Run.Seed = m.seed; return nil })
	set("duration", func() (err error) { cfg.Run.Duration, err = parseDur(m.duration); return })
	set("warmup", func() (err error) { cfg.Run.Warmup, err = parseDur(m.warmup); return })
	if ferr != nil {
		return cfg, ferr
	}
	if err := m.dl.apply(cmd, &cfg.NIC.Delivery); err != nil {
		return cfg, err
	}
	for _, s := range m.sets {
		if err := params.Set(&cfg, s); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.Validate()
}

func parseDur(s string) (des.Time, error) {
	var t des.Time
	err := t.UnmarshalText([]byte(s))
	return t, err
}

func parseMode(s string) (route.Mode, error) {
	switch route.Mode(s) {
	case route.Deterministic, route.Adaptive:
		return route.Mode(s), nil
	}
	return "", fmt.Errorf("%q: want deterministic or adaptive", s)
}

// writeOut writes JSON to path ("-" for stdout) if path is set.
func writeOut(path string, v any) error {
	if path == "" {
		return nil
	}
	return report.WriteJSON(path, v)
}

// progressFor returns a progress callback drawing on stderr when it is a
// terminal, and a function to finish the line.
func progressFor(label string) (func(done, total des.Time), func()) {
	var p *report.Progress
	return func(done, total des.Time) {
			if p == nil {
				p = report.NewProgress(os.Stderr, label, total.Seconds()*1e6, "us")
			}
			p.Update(done.Seconds() * 1e6)
		}, func() {
			if p != nil {
				p.Done()
			}
		}
}
