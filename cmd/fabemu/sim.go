package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/synth"
	"github.com/spf13/cobra"
)

func init() { register(newSimCmd) }

type simFlags struct {
	model       modelFlags
	listPresets bool
	jsonPath    string
	timeseries  string
	sweep       string
	plot        string
	jobs        int
	mem         memFlags
	cpuprofile  string
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run synthetic traffic through a fabric and report throughput, latency and invariants",
		Long: `Run synthetic traffic through a simulated fabric.

The configuration starts from a preset (--preset, default torus8x8-dor),
is overridden by a YAML file (--config) and by flags, and last by --set.
With --sweep-load FROM:TO:STEP it runs one simulation per offered load
(in parallel, --jobs) and writes the latency versus accepted traffic curve.`,
		Example: `  fabemu sim --preset torus8x8-dor --load 0.5
  fabemu sim --preset paper004-irregular16 --routing adaptive --sweep-load 0.1:1.0:0.1 --plot curve.svg
  fabemu sim --list-presets`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if f.listPresets {
				return listPresets(cmd.OutOrStdout())
			}
			if err := f.checkSweepFlags(cmd); err != nil {
				return err
			}
			if f.sweep != "" && f.cpuprofile != "" {
				return fmt.Errorf("--cpuprofile profiles one simulation; it cannot be used with --sweep-load")
			}
			plot := output{"--plot", f.plot}
			if f.sweep != "" && f.plot == "" {
				plot = output{"the default plot", defaultSweepPlot}
			}
			if err := checkOutputs([]string{f.model.config}, output{"--json", f.jsonPath},
				output{"--timeseries", f.timeseries}, plot, output{"--cpuprofile", f.cpuprofile}); err != nil {
				return err
			}
			cfg, res, err := f.model.resolveSim(cmd)
			if err != nil {
				return err
			}
			jobs := 1
			if f.sweep != "" {
				jobs = max(f.jobs, 1)
			}
			wl, err := workloadOf(&cfg)
			if err != nil {
				return err
			}
			if stop, err := f.mem.check(cmd.OutOrStdout(), &cfg.Model, wl, jobs); stop || err != nil {
				return err
			}
			out := tableWriter(cmd, f.jsonPath)
			if f.sweep != "" {
				for _, n := range res.Notes {
					fmt.Fprintln(out, n)
				}
				return runSweep(out, cfg, f)
			}
			stopProfile, err := startCPUProfile(f.cpuprofile, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer func() {
				if perr := stopProfile(); perr != nil && err == nil {
					err = perr
				}
			}()
			prog, done := progressFor("sim", f.mem.progress)
			sum, err := synth.RunSim(cfg, prog)
			done()
			if sum != nil {
				writeSimTable(out, sum, res.Notes)
				if werr := writeOut(f.jsonPath, sum); werr != nil {
					return werr
				}
				if f.timeseries != "" {
					if werr := writeTimeseries(f.timeseries, sum); werr != nil {
						return werr
					}
				}
			}
			if err != nil {
				return err
			}
			if !sum.Invariants.OK {
				return fmt.Errorf("invariants violated: %s", strings.Join(sum.Invariants.Violations, "; "))
			}
			return nil
		},
	}
	f.model.register(cmd, "torus8x8-dor")
	f.mem.register(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.listPresets, "list-presets", false, "list the presets and exit")
	fs.StringVar(&f.jsonPath, "json", "", "write the JSON summary to PATH (- for stdout)")
	fs.StringVar(&f.timeseries, "timeseries", "", "write accepted and offered traffic and switch efficiency per time bin to PATH (.csv, else JSON lines)")
	fs.StringVar(&f.sweep, "sweep-load", "", "run a load sweep FROM:TO:STEP, e.g. 0.1:1.0:0.1")
	fs.StringVar(&f.plot, "plot", "", "with --sweep-load: write the latency vs accepted traffic plot to PATH (.svg or .png; default sweep.svg, which is never overwritten unless named)")
	fs.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "with --sweep-load: simulations run at once")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the simulation to this file (go tool pprof; not with --sweep-load)")
	_ = fs.MarkHidden("cpuprofile")
	return cmd
}

// tableWriter is where the human table goes: stdout, unless the JSON is
// written there (--json -), in which case the table goes to stderr so that
// stdout stays parseable.
func tableWriter(cmd *cobra.Command, jsonPath string) io.Writer {
	if jsonPath == "-" {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
}

func listPresets(w io.Writer) error {
	t := report.Table{Columns: []report.Column{{Name: "preset"}, {Name: "source"}, {Name: "description"}}}
	for _, p := range model.Presets() {
		t.AddRow(p.Name, p.Source, p.Description)
	}
	return t.Write(w)
}

func f3(v float64) string { return report.FormatFloat(v, 4) }

func writeSimTable(w io.Writer, s *synth.Summary, notes []model.Note) {
	c := s.Config
	cfgSec := report.Section{Title: "Configuration"}
	cfgSec.Add("topology", s.Topology.Describe, "")
	cfgSec.Add("routing", routingLine(s.Routing, notes), "")
	cfgSec.Add("escape check", s.Routing.EscapeCheck, "")
	cfgSec.Add("links", fmt.Sprintf("%v %s, %g m", c.Fabric.LinkRate, c.Fabric.LineCoding, c.Fabric.LinkLength), "")
	cfgSec.Add("traffic", fmt.Sprintf("%s, %s, load %g, sizes %s", c.Traffic.Pattern, c.Traffic.Process, c.Traffic.Load, c.Traffic.Sizes), "")
	cfgSec.Add("measured", fmt.Sprintf("%v after %v warm-up, seed %d", c.Run.Duration, c.Run.Warmup, c.Run.Seed), "")
	res := report.Section{Title: "Results"}
	res.Add("offered load", f3(s.OfferedLoad), "of host link")
	res.Add("accepted load", f3(s.AcceptedLoad), "of host link")
	res.Add("accepted traffic", f3(s.AcceptedBytesPerNsPerSwitch), "bytes/ns/switch (payload)")
	res.Add("per-host accepted min/mean/max", fmt.Sprintf("%s / %s / %s", f3(s.PerHostAcceptedLoad.Min), f3(s.PerHostAcceptedLoad.Mean), f3(s.PerHostAcceptedLoad.Max)), "of host link")
	res.Add("latency mean / p50 / p99 / max", latStr(s.LatencyNs), "ns (from generation)")
	res.Add("network latency mean / p50 / p99 / max", latStr(s.NetworkLatencyNs), "ns (from injection)")
	res.Add("hops mean / max", fmt.Sprintf("%s / %d", f3(s.Hops.Mean), s.Hops.Max), "switches")
	res.Add("link utilisation mean / max", fmt.Sprintf("%s / %s", f3(s.LinkUtilisation.Mean), f3(s.LinkUtilisation.Max)), "")
	p := s.Packets
	res.Add("packets generated / delivered", fmt.Sprintf("%s / %s", report.FormatUint(p.Generated), report.FormatUint(p.Delivered)), "")
	res.Add("in flight / queued at sources", fmt.Sprintf("%s / %s", report.FormatUint(p.InFlight), report.FormatUint(p.QueuedAtSources)), "")
	res.Add("delivered out of order", report.FormatUint(p.OutOfOrder), "packets")
	if d := p.Deadlock; d != nil {
		res.Add("deadlocks detected / recovered", fmt.Sprintf("%s / %s", report.FormatUint(d.Detections), report.FormatUint(d.Recovered)),
			fmt.Sprintf("messages (threshold %s ns)", report.FormatFloat(d.ThresholdNs, 6)))
		if d.FalseDetections != nil {
			res.Add("false deadlock detections", report.FormatUint(*d.FalseDetections), "messages not deadlocked when detected")
		}
	}
	if d := s.Drain; d != nil {
		what := "ns: every packet delivered"
		if !d.AllDelivered {
			what = fmt.Sprintf("ns: run.drain reached with %d packets undelivered", d.Undelivered)
		}
		res.Add("drain: last delivery at", report.FormatFloat(d.LastDeliveryNs, 6), what)
	}
	secs := []report.Section{cfgSec, res}
	if del, ok := deliverySection(s.DeliveryReport); ok {
		secs = append(secs, del)
	}
	secs = append(secs, invariantSection(s.Invariants, s.Delivery))
	if s.Run != nil {
		run := report.Section{Title: "Run"}
		run.Add("wall time", report.FormatFloat(s.Run.WallSeconds, 3), "s")
		run.Add("events", fmt.Sprintf("%s (%s/s)", report.FormatUint(s.Run.Events), report.FormatFloat(s.Run.EventsPerSecond, 3)), "")
		run.Add("delivered packets per second", report.FormatFloat(s.Run.DeliveredPacketsPerSecond, 3), "wall")
		if s.Run.PeakRSSBytes > 0 {
			run.Add("peak memory", model.FormatBytes(s.Run.PeakRSSBytes), "resident")
		}
		secs = append(secs, run)
	}
	report.WriteSections(w, secs...)
}

// invariantSection lists the invariants checked at the end of a run;
// extra lines (a replay's "every request completed") come first.
func invariantSection(iv model.InvariantReport, delivery string, extra ...report.KV) report.Section {
	inv := report.Section{Title: "Invariants", Items: extra}
	inv.Add("packets conserved", okStr(iv.PacketsConserved), "")
	inv.Add("credits non-negative / conserved", okStr(iv.CreditsNonNegative)+" / "+okStr(iv.CreditsConserved), "")
	inv.Add("buffers within capacity", okStr(iv.BuffersWithinCap), "")
	if iv.InOrder != nil {
		inv.Add("in order ("+orderCheckName(delivery)+")", okStr(*iv.InOrder), "")
	}
	inv.Add("no deadlock", okStr(iv.NoDeadlock), "")
	return inv
}

func latStr(h interface{ String() string }) string { return h.String() }

func okStr(b bool) string {
	if b {
		return "ok"
	}
	return "VIOLATED"
}

func writeTimeseries(path string, s *synth.Summary) error {
	sw, err := report.CreateSeries(path)
	if err != nil {
		return err
	}
	if err := sw.Header([]string{"time_us", "accepted_load", "offered_load", "accepted_bytes_per_ns_per_switch", "efficiency"}); err != nil {
		sw.Abort()
		return err
	}
	// efficiency: the switch efficiency of paper 003 §2.7, the accepted
	// load per host of the network rather than per active host.
	perHost := 0.0
	if s.Topology.Hosts > 0 {
		perHost = float64(s.ActiveHosts) / float64(s.Topology.Hosts)
	}
	for _, b := range s.Timeseries {
		if err := sw.Row([]float64{b.TimeUs, b.AcceptedLoad, b.OfferedLoad, b.AcceptedBytesPerNsPerSwitch, b.AcceptedLoad * perHost}); err != nil {
			sw.Abort()
			return err
		}
	}
	return sw.Close()
}

// parseRange parses FROM:TO:STEP into the list of values, inclusive of TO
// within rounding.
// defaultSweepPlot is where a load sweep's plot goes without --plot; an
// existing file of that name is never overwritten by default.
const defaultSweepPlot = "sweep.svg"

// checkSweepFlags refuses, before anything runs (under --dry-run too),
// the flag combinations that were silently accepted: --plot without
// --sweep-load, --timeseries beside it, --load beside
// --sweep-load (which sets the load itself), a bad --sweep-load, a
// negative --jobs, and a default plot path that would overwrite a file.
func (f *simFlags) checkSweepFlags(cmd *cobra.Command) error {
	fs := cmd.Flags()
	if f.jobs < 1 {
		return fmt.Errorf("--jobs %d: want at least 1", f.jobs)
	}
	if f.sweep == "" {
		if fs.Changed("plot") {
			return fmt.Errorf("--plot %s: only a load sweep (--sweep-load) writes a plot", f.plot)
		}
		return nil
	}
	if _, err := parseRange(f.sweep); err != nil {
		return err
	}
	if fs.Changed("load") {
		return fmt.Errorf("--load with --sweep-load %s: the sweep sets the load of each run; drop one", f.sweep)
	}
	if f.timeseries != "" {
		return fmt.Errorf("--timeseries with --sweep-load: a sweep writes no time series; drop one")
	}
	if f.plot == "" {
		if _, err := os.Lstat(defaultSweepPlot); err == nil {
			return fmt.Errorf("%s exists: a load sweep writes its plot there by default; name the plot with --plot (the same path to overwrite it)", defaultSweepPlot)
		}
	}
	return nil
}

func parseRange(s string) ([]float64, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--sweep-load %q: want FROM:TO:STEP, e.g. 0.1:1.0:0.1", s)
	}
	var v [3]float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("--sweep-load %q: %q is not a finite number", s, p)
		}
		v[i] = x
	}
	from, to, step := v[0], v[1], v[2]
	if step <= 0 || from < 0 || to < from {
		return nil, fmt.Errorf("--sweep-load %q: need 0 <= FROM <= TO and STEP > 0", s)
	}
	var out []float64
	for i := 0; ; i++ {
		x := from + float64(i)*step
		if x > to+step*1e-9 {
			break
		}
		if len(out) == 1000 {
			return nil, fmt.Errorf("--sweep-load %q: more than 1000 points", s)
		}
		out = append(out, x)
	}
	return out, nil
}

// SweepSchema versions the JSON of a load sweep.
const SweepSchema = "fabemu.sweep/v1"

type sweepResult struct {
	Schema string           `json:"schema"`
	Points []*synth.Summary `json:"points"`
}

func runSweep(w io.Writer, cfg model.SimConfig, f simFlags) error {
	loads, err := parseRange(f.sweep)
	if err != nil {
		return err
	}
	res := sweepResult{Schema: SweepSchema, Points: make([]*synth.Summary, len(loads))}
	errs := make([]error, len(loads))
	prog := report.NewProgress(os.Stderr, "sweep", float64(len(loads)), "runs")
	var mu sync.Mutex
	finished := 0
	sem := make(chan struct{}, max(1, f.jobs))
	var wg sync.WaitGroup
	for i, l := range loads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c := cfg
			c.Traffic.Load = l
			res.Points[i], errs[i] = synth.RunSim(c, nil)
			mu.Lock()
			finished++
			prog.Update(float64(finished))
			mu.Unlock()
		}()
	}
	wg.Wait()
	prog.Done()
	t := report.Table{Title: fmt.Sprintf("Load sweep: %s, %s routing, %s traffic", res.Points[0].Topology.Describe, cfg.Routing.Mode, cfg.Traffic.Pattern),
		Columns: []report.Column{{Name: "offered load"}, {Name: "accepted load", Align: report.AlignRight},
			{Name: "accepted", Unit: "bytes/ns/switch", Align: report.AlignRight},
			{Name: "latency mean", Unit: "ns", Align: report.AlignRight}, {Name: "latency p99", Unit: "ns", Align: report.AlignRight},
			{Name: "network latency mean", Unit: "ns", Align: report.AlignRight}, {Name: "invariants"}}}
	var xs, ys []float64
	for i, s := range res.Points {
		if errs[i] != nil {
			return fmt.Errorf("load %g: %w", loads[i], errs[i])
		}
		t.AddRow(f3(loads[i]), f3(s.AcceptedLoad), f3(s.AcceptedBytesPerNsPerSwitch), f3(s.LatencyNs.Mean), f3(s.LatencyNs.P99), f3(s.NetworkLatencyNs.Mean), okStr(s.Invariants.OK))
		xs = append(xs, s.AcceptedBytesPerNsPerSwitch)
		ys = append(ys, s.LatencyNs.Mean)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if err := writeOut(f.jsonPath, res); err != nil {
		return err
	}
	plotPath := f.plot
	if plotPath == "" {
		plotPath = defaultSweepPlot
	}
	title := fmt.Sprintf("%s, %s, %s", res.Points[0].Topology.Describe, cfg.Routing.Mode, cfg.Traffic.Pattern)
	if err := report.LinePlot(plotPath, title, "accepted traffic (bytes/ns/switch)", "average latency (ns)",
		[]report.Series{{Name: string(cfg.Routing.Mode), X: xs, Y: ys}}, report.PlotOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(w, "plot written to %s\n", plotPath)
	for _, s := range res.Points {
		if !s.Invariants.OK {
			return fmt.Errorf("invariants violated at offered load %g", s.Config.Traffic.Load)
		}
	}
	return nil
}
