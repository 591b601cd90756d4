package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/outfile"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/spf13/cobra"
)

func init() { register(newReplayCmd) }

type replayFlags struct {
	trace, format, preset, config string
	sets                          []string
	mem                           memFlags
	compression                   float64
	routing                       string
	seed                          uint64
	from, to                      string
	limit                         int64
	jsonPath, timeseries, plot    string
	mapFile, mapBy, pcapOut       string
	dl                            deliveryFlags
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a block-I/O trace as request/reply traffic and report the trace execution time",
		Long: `Replay a block-I/O trace through a simulated fabric.

Each record becomes a request from an initiator host to a disk host and a
reply back (a read: small request, data reply; a write: data, small
completion), issued open loop at the record's arrival time divided by the
compression factor. The disks take random host positions (paper 004: 23 of
them), the other hosts issue the requests. The main figure is the trace
execution time: when the last reply is delivered. See docs/replay.md.

The configuration starts from a preset (default paper004-torus4x4), is
overridden by a YAML file (--config), by flags, and last by --set (e.g.
--set replay.initiators=random). With no --trace the embedded cello99-like
sample is replayed.`,
		Example: `  fabemu replay
  fabemu replay --trace ajw.1week.srt --compression 1000 --routing adaptive --json out.json --plot tput.svg
  fabemu replay --trace cello.csv.gz --from 1h --to 2h --limit 100000 --set replay.disks=8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, res, err := f.resolve(cmd)
			if err != nil {
				return err
			}
			if stop, err := f.mem.check(cmd.OutOrStdout(), &cfg.Model, cfg.Workload(), 1); stop || err != nil {
				return err
			}
			if err := checkOutputs([]string{cfg.Replay.Trace, f.config, cfg.Replay.Map}, output{"--json", f.jsonPath},
				output{"--timeseries", f.timeseries}, output{"--plot", f.plot}, output{"--pcap-out", f.pcapOut}); err != nil {
				return err
			}
			var prog *report.Progress
			opts := replay.Options{Progress: func(done, total uint64, at des.Time, events uint64) {
				if prog == nil {
					prog = report.NewProgressForced(os.Stderr, "replay", float64(total), "requests", f.mem.progress)
				}
				prog.SetEvents(events)
				prog.SetNote(func() string { return "at " + at.String() + " simulated" })
				prog.Update(float64(done))
			}}
			// The pcapng output appears only if the whole replay and every
			// write succeeded (package outfile); a failed run aborts it.
			var pout *outfile.File
			if f.pcapOut != "" {
				if pout, err = outfile.Create(f.pcapOut, cmd.OutOrStdout()); err != nil {
					return err
				}
				defer pout.Abort()
				opts.PcapOut = replay.PcapOut{W: pout, Name: f.pcapOut}
			}
			sum, err := replay.RunReplayWith(cfg, opts)
			prog.Done()
			if err == nil && pout != nil {
				if err = pout.Commit(); err == nil && f.pcapOut != outfile.Stdout {
					fmt.Fprintf(cmd.ErrOrStderr(), "pcapng written to %s\n", f.pcapOut)
				}
			}
			if sum != nil {
				tableOut := cmd.OutOrStdout()
				if f.jsonPath == "-" || f.pcapOut == outfile.Stdout { // keep stdout pure JSON or pcapng
					tableOut = cmd.ErrOrStderr()
				}
				writeReplayTable(tableOut, sum, res.Notes)
				if werr := writeOut(f.jsonPath, sum); werr != nil {
					return werr
				}
				if f.timeseries != "" {
					if werr := writeReplaySeries(f.timeseries, sum); werr != nil {
						return werr
					}
				}
				if f.plot != "" {
					if werr := plotReplay(f.plot, sum); werr != nil {
						return werr
					}
					fmt.Fprintf(cmd.OutOrStdout(), "plot written to %s\n", f.plot)
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
	f.register(cmd)
	f.mem.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.jsonPath, "json", "", "write the JSON summary (schema "+replay.ReplaySchema+") to PATH (- for stdout)")
	fs.StringVar(&f.timeseries, "timeseries", "", "write issued/completed requests and offered/accepted traffic per time bin to PATH (.csv, else JSON lines)")
	fs.StringVar(&f.plot, "plot", "", "write the accepted traffic over time plot to PATH (.svg or .png)")
	fs.StringVar(&f.pcapOut, "pcap-out", "", "write what left the fabric to PATH as pcapng: one interface per host, simulated timestamps, the fabric's metadata in each packet's comment (docs/capture.md)")
	return cmd
}

// register declares the flags that build the configuration (for replay
// and config dump replay).
func (f *replayFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.trace, "trace", "", "trace file or directory of SRT files (default: the embedded cello99-like sample)")
	fs.StringVar(&f.format, "format", "", "trace format: auto, srt, msr, spc, blkparse, fio, disksim, csv, or a packet capture: pcap, pcapng (default auto)")
	fs.StringVar(&f.preset, "preset", "paper004-torus4x4", "named configuration to start from (fabemu sim --list-presets shows them)")
	fs.StringVar(&f.config, "config", "", "YAML file overriding preset fields (unknown keys are errors)")
	fs.StringArrayVar(&f.sets, "set", nil, "override one field, e.g. --set replay.disks=8 (repeatable; applied last)")
	fs.Float64Var(&f.compression, "compression", 0, "time compression factor (default: the paper's for the preset, 2.5 on paper004-torus4x4, else 1)")
	fs.StringVar(&f.routing, "routing", "", "deterministic or adaptive")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (disk placement, random initiators)")
	fs.StringVar(&f.from, "from", "", "start of the replayed window in trace time since the first record, e.g. 1h")
	fs.StringVar(&f.to, "to", "", "end of the replayed window in trace time (exclusive), e.g. 2h30m")
	fs.Int64Var(&f.limit, "limit", 0, "replay at most this many records (0: all)")
	fs.StringVar(&f.mapFile, "map", "", "packet captures: YAML or CSV file of endpoint (MAC or IP) to host index (default: endpoints in order of appearance onto a seeded permutation of the hosts)")
	fs.StringVar(&f.mapBy, "map-by", "", "packet captures: auto, mac or ip: the address that names an endpoint (default auto: MACs where the link type has both)")
	f.dl.register(cmd)
}

// replayFlagKeys are the individual flags of a trace replay.
var replayFlagKeys = []flagKey{
	{"trace", "replay.trace", nil},
	{"format", "replay.format", nil},
	{"compression", "replay.compression", func(v string) error {
		if c, err := strconv.ParseFloat(v, 64); err != nil || !(c > 0) {
			return fmt.Errorf("%s: the compression factor must be positive", v)
		}
		return nil
	}},
	{"routing", "routing.mode", checkRouting},
	{"seed", "run.seed", nil},
	{"from", "replay.from", nil},
	{"map", "replay.map", nil},
	{"map-by", "replay.map_by", nil},
	{"to", "replay.to", nil},
	{"limit", "replay.limit", func(v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return fmt.Errorf("%s: must not be negative", v)
		}
		return nil
	}},
}

// resolve builds the replay configuration with the resolver: the preset,
// then --config, then the flags that were given, then the delivery
// shorthands, then every --set.
func (f *replayFlags) resolve(cmd *cobra.Command) (replay.ReplaySimConfig, model.Resolution, error) {
	return model.Resolve(model.Layers{
		Preset:     f.preset,
		File:       f.config,
		Flags:      flagAssignments(cmd, replayFlagKeys),
		Shorthands: f.dl.shorthands(cmd),
		Sets:       model.Sets("--set", f.sets),
	}, replay.ReplayPreset)
}

// timeStr prints a simulated time in nanoseconds with a readable unit,
// to the microsecond above a millisecond.
func timeStr(ns float64) string {
	d := time.Duration(ns)
	if d > time.Millisecond {
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// hostList prints host indexes, eliding the middle of a long list.
func hostList(hs []int) string {
	var b strings.Builder
	for i, h := range hs {
		if len(hs) > 12 && i == 10 {
			fmt.Fprintf(&b, " ... (%d more)", len(hs)-10)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, h)
	}
	return b.String()
}

func writeReplayTable(w io.Writer, s *replay.ReplaySummary, notes []model.Note) {
	c := s.Config
	r := c.Replay
	cfgSec := report.Section{Title: "Configuration"}
	cfgSec.Add("trace", fmt.Sprintf("%s (%s), %s records in the window", s.Trace.Name, s.Trace.Format, report.FormatInt(s.Trace.Records)), "")
	if s.Trace.Skipped > 0 {
		cfgSec.Add("skipped before the window", report.FormatInt(s.Trace.Skipped), "records before --from, read and not replayed")
	}
	cfgSec.Add("compression factor", report.FormatFloat(r.Compression, 6), "")
	win := "whole trace"
	if r.From != 0 || r.To != 0 || r.Limit != 0 {
		to := "end"
		if r.To != 0 {
			to = time.Duration(r.To).String()
		}
		win = fmt.Sprintf("trace time %v to %s", time.Duration(r.From), to)
		if r.Limit != 0 {
			win += fmt.Sprintf(", first %s records", report.FormatInt(r.Limit))
		}
	}
	cfgSec.Add("window", win, "")
	cfgSec.Add("topology", s.Topology.Describe, "")
	cfgSec.Add("routing", routingLine(s.Routing, notes), "")
	cfgSec.Add("links", fmt.Sprintf("%v %s, %g m; MTU %v", c.Fabric.LinkRate, c.Fabric.LineCoding, c.Fabric.LinkLength, c.NIC.MTU), "")
	if ci := s.Capture; ci != nil {
		place := fmt.Sprintf("by %s, in order of appearance onto hosts drawn with seed %d", ci.MapBy, c.Run.Seed)
		if ci.MapFile != "" {
			place = fmt.Sprintf("by %s, from %s", ci.MapBy, ci.MapFile)
		}
		cfgSec.Add("endpoints", fmt.Sprintf("%d, %s", len(ci.Endpoints), place), "")
		var eps []string
		for i, e := range ci.Endpoints {
			if i == 8 {
				eps = append(eps, fmt.Sprintf("... (%d more)", len(ci.Endpoints)-8))
				break
			}
			eps = append(eps, fmt.Sprintf("%s>%d", e.Endpoint, e.Host))
		}
		cfgSec.Add("endpoint hosts", strings.Join(eps, " "), "")
	} else {
		place := fmt.Sprintf("random, seed %d", c.Run.Seed)
		if len(r.DiskHosts) > 0 {
			place = "listed"
		}
		cfgSec.Add("disks", fmt.Sprintf("%d hosts (%s), %d trace devices seen, device map %s", len(s.Mapping.DiskHosts), place, s.Trace.Devices, s.Mapping.DeviceMap), "")
		cfgSec.Add("disk hosts", hostList(s.Mapping.DiskHosts), "")
		cfgSec.Add("initiators", fmt.Sprintf("%d hosts, %s", s.Mapping.InitiatorHosts, s.Mapping.Initiators), "")
		svc := "off"
		if r.ServiceTime {
			svc = "traced, compressed"
		}
		cfgSec.Add("request/completion size", fmt.Sprintf("%v; disk service time %s", r.RequestBytes, svc), "")
	}
	cfgSec.Add("seed", fmt.Sprint(c.Run.Seed), "")

	res := report.Section{Title: "Results"}
	res.Add("trace execution time", timeStr(s.TraceExecutionTimeNs), "last reply delivered")
	res.Add("last request issued", timeStr(s.LastIssueNs), "compressed trace span")
	if ci := s.Capture; ci != nil {
		res.Add("frames in the window", fmt.Sprintf("%s (%s local to one host, %s without a usable address)",
			report.FormatInt(ci.Frames), report.FormatInt(ci.Local), report.FormatInt(ci.Unmapped)), "")
		res.Add("frames sent / delivered", fmt.Sprintf("%s / %s", report.FormatUint(s.Requests), report.FormatUint(s.Completed)), "")
		res.Add("broadcast/multicast frames", fmt.Sprintf("%s; %s copies sent, %s delivered", report.FormatInt(ci.Group),
			report.FormatInt(ci.Copies), report.FormatInt(ci.CopiesDelivered)), "")
		res.Add("frame bytes", fmt.Sprintf("%s on the wire, %s captured", report.FormatInt(s.IssuedBytes), report.FormatInt(ci.CapturedBytes)), "bytes")
		order := func(fo replay.FlowOrder) string {
			return fmt.Sprintf("%s of %s (ratio %s, max extent %d, max late %s, %s 3-reordered)",
				report.FormatUint(fo.Reordered), report.FormatUint(fo.Received), report.FormatFloat(fo.ReorderedRatio, 4),
				fo.Extent.Max, timeStr(fo.LateTimeNs), report.FormatUint(fo.ThreeReordered))
		}
		res.Add("flow packets reordered at NIC arrival", order(ci.FlowOrderBefore), "RFC 4737, before rearrangement")
		res.Add("flow frames reordered at host delivery", order(ci.FlowOrder), fmt.Sprintf("after; %d flows x destination host", ci.FlowsMetered))
	} else {
		res.Add("requests issued / completed", fmt.Sprintf("%s / %s", report.FormatUint(s.Requests), report.FormatUint(s.Completed)), "")
		res.Add("reads / writes", fmt.Sprintf("%s / %s", report.FormatUint(s.Reads), report.FormatUint(s.Writes)), "")
		res.Add("issued bytes", report.FormatInt(s.IssuedBytes), "bytes")
	}
	res.Add("peak outstanding requests", report.FormatInt(int64(s.PeakOutstanding)), "")
	if s.LateRecords > 0 {
		res.Add("late (out-of-order) records", report.FormatUint(s.LateRecords), "stamped before an earlier record; issued at its time")
	}
	res.Add("accepted traffic", f3(s.AcceptedBytesPerNsPerSwitch), "bytes/ns/switch (payload, over the execution time)")
	res.Add("request latency mean / p50 / p99 / max", latStr(s.LatencyNs), "ns (issue to reply delivered)")
	res.Add("read latency", latStr(s.ReadLatencyNs), "ns")
	res.Add("write latency", latStr(s.WriteLatencyNs), "ns")
	res.Add("packet latency", latStr(s.PacketLatencyNs), "ns (from generation)")
	res.Add("network latency", latStr(s.NetworkLatencyNs), "ns (from injection)")
	res.Add("hops mean / max", fmt.Sprintf("%s / %d", f3(s.Hops.Mean), s.Hops.Max), "switches")
	p := s.Packets
	res.Add("packets generated / delivered", fmt.Sprintf("%s / %s", report.FormatUint(p.Generated), report.FormatUint(p.Delivered)), "")
	res.Add("delivered out of order", report.FormatUint(p.OutOfOrder), "packets")

	secs := []report.Section{cfgSec, res}
	if del, ok := deliverySection(s.DeliveryReport); ok {
		secs = append(secs, del)
	}
	secs = append(secs, invariantSection(s.Invariants.InvariantReport, s.Delivery,
		report.KV{Key: "every request completed", Value: okStr(s.Invariants.AllCompleted)}))
	if s.Run != nil {
		run := report.Section{Title: "Run"}
		run.Add("wall time", report.FormatFloat(s.Run.WallSeconds, 3), fmt.Sprintf("s (trace scan %s s)", report.FormatFloat(s.Run.ScanSeconds, 2)))
		run.Add("records per second", report.FormatFloat(s.Run.RecordsPerSecond, 3), "wall")
		run.Add("events", fmt.Sprintf("%s (%s/s)", report.FormatUint(s.Run.Events), report.FormatFloat(s.Run.EventsPerSecond, 3)), "")
		secs = append(secs, run)
	}
	report.WriteSections(w, secs...)
}

func writeReplaySeries(path string, s *replay.ReplaySummary) error {
	sw, err := report.CreateSeries(path)
	if err != nil {
		return err
	}
	if err := sw.Header([]string{"time_us", "issued", "completed", "offered_wire_bytes_per_ns_per_switch",
		"accepted_bytes_per_ns_per_switch", "accepted_wire_bytes_per_ns_per_switch"}); err != nil {
		sw.Abort()
		return err
	}
	for _, b := range s.Timeseries {
		if err := sw.Row([]float64{b.TimeUs, float64(b.Issued), float64(b.Completed), b.OfferedWireBytesPerNsPerSw,
			b.AcceptedBytesPerNsPerSwitch, b.AcceptedWireBytesPerNsPerSw}); err != nil {
			sw.Abort()
			return err
		}
	}
	return sw.Close()
}

// plotReplay draws accepted (and offered) traffic over replay time, the
// way papers 000 and 003 plot throughput over time.
func plotReplay(path string, s *replay.ReplaySummary) error {
	unit, div := "ms", 1e3
	if end := s.TraceExecutionTimeNs / 1e3; end > 1e6 {
		unit, div = "s", 1e6
	} else if end < 1e3 {
		unit, div = "us", 1
	}
	var xs, acc, off []float64
	for _, b := range s.Timeseries {
		xs = append(xs, b.TimeUs/div)
		acc = append(acc, b.AcceptedBytesPerNsPerSwitch)
		off = append(off, b.OfferedWireBytesPerNsPerSw)
	}
	title := fmt.Sprintf("%s, compression %s, %s, %s", filepath.Base(strings.TrimSuffix(s.Trace.Name, " (embedded)")),
		report.FormatFloat(s.Trace.Compression, 6), s.Topology.Name, s.Routing.Mode)
	return report.LinePlot(path, title, "replay time ("+unit+")", "traffic (bytes/ns/switch)",
		[]report.Series{{Name: "accepted (payload)", X: xs, Y: acc}, {Name: "offered (wire)", X: xs, Y: off}}, report.PlotOptions{})
}
