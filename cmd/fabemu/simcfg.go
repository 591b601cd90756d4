package main

import (
	"fmt"
	"os"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/spf13/cobra"
)

// modelFlags are the flags that select and adjust a model configuration,
// shared by sim (and its load sweep) and config dump.
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
	fs.StringVar(&m.pattern, "pattern", "", "traffic pattern: uniform, bitrev, butterfly, complement, shuffle, transpose, hotspot[:frac[@node]], hotregion, corner1, corner2, oddeven, halves")
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
	fs.StringVar(&m.delivery, "delivery", "", "deterministic (escape routing only), adaptive-ooo (adaptive, deliver on arrival) or adaptive-inorder (adaptive + rearrangement + ACK/NACK); sets the routing mode it needs (a contradicting --routing or --set routing.mode is refused)")
	fs.StringVar(&m.reorder, "reorder", "", "rearrangement memory per NIC for adaptive-inorder: static:2KiB, static:32KiB, dynamic:256KiB,cap=128KiB, dynamic:4MiB,cap=1MiB or unlimited")
	fs.StringVar(&m.injection, "injection", "", "injection control of every NIC: no-lim, trans-t or self-tuned (paper 001); or the delivery policy of adaptive-inorder: unlimited, li (ADAP-LI) or lw (ADAP-LW, static memory only)")
}

// shorthands returns the --delivery, --reorder and --injection flags that
// were given, for the resolver.
func (m *deliveryFlags) shorthands(cmd *cobra.Command) []model.Assignment {
	fs := cmd.Flags()
	given := func(name, v string) string {
		if fs.Changed(name) {
			return v
		}
		return ""
	}
	return model.Shorthands("--", given("delivery", m.delivery), given("reorder", m.reorder), given("injection", m.injection))
}

// flagKey binds a flag to the configuration key it sets; check, if set,
// vets the value first.
type flagKey struct {
	flag, key string
	check     func(string) error
}

// flagAssignments returns the flags of keys that were given, in that
// order, as assignments for the resolver.
func flagAssignments(cmd *cobra.Command, keys []flagKey) []model.Assignment {
	fs := cmd.Flags()
	var as []model.Assignment
	for _, k := range keys {
		if fs.Changed(k.flag) {
			as = append(as, model.Assignment{Source: "--" + k.flag, Flag: true, Key: k.key, Value: fs.Lookup(k.flag).Value.String(), Check: k.check})
		}
	}
	return as
}

func checkRouting(s string) error { _, err := model.ParseRoutingMode(s); return err }

// simFlagKeys are the individual flags of a synthetic run.
var simFlagKeys = []flagKey{
	{"routing", "routing.mode", checkRouting},
	{"pattern", "traffic.pattern", nil},
	{"process", "traffic.process", nil},
	{"sizes", "traffic.sizes", nil},
	{"load", "traffic.load", nil},
	{"seed", "run.seed", nil},
	{"duration", "run.duration", nil},
	{"warmup", "run.warmup", nil},
}

// resolveSim builds a synthetic-run configuration with the resolver: the
// preset, then --config, then the individual flags that were given, then
// the delivery shorthands, then every --set.
func (m *modelFlags) resolveSim(cmd *cobra.Command) (model.SimConfig, model.Resolution, error) {
	return model.Resolve(model.Layers{
		Preset:     m.preset,
		File:       m.config,
		Flags:      flagAssignments(cmd, simFlagKeys),
		Shorthands: m.dl.shorthands(cmd),
		Sets:       model.Sets("--set", m.sets),
	}, model.LookupPreset)
}

// writeOut writes JSON to path ("-" for stdout) if path is set.
func writeOut(path string, v any) error {
	if path == "" {
		return nil
	}
	return report.WriteJSON(path, v)
}

// progressFor returns a progress callback drawing on stderr when it is a
// terminal or force (--progress) is set: simulated time over the run's
// end, and events per second; and a function to finish the line.
func progressFor(label string, force bool) (func(done, total des.Time, events uint64), func()) {
	var p *report.Progress
	return func(done, total des.Time, events uint64) {
			if p == nil {
				p = report.NewProgressForced(os.Stderr, label, total.Seconds()*1e6, "us", force)
			}
			p.SetEvents(events)
			p.Update(done.Seconds() * 1e6)
		}, func() {
			if p != nil {
				p.Done()
			}
		}
}

// routingLine is the routing row of a summary table, with the resolver's
// note when the delivery mode forced the routing mode.
func routingLine(r model.RoutingSummary, notes []model.Note) string {
	line := fmt.Sprintf("%s, escape %s, %d lanes", r.Mode, r.Escape, r.VLs)
	for _, n := range notes {
		if n.Key == "routing" {
			line += " (" + n.Why + ")"
		}
	}
	return line
}
