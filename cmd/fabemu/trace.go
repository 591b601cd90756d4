package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabemu/fabemu/internal/outfile"
	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
	"github.com/fabemu/fabemu/tracefmt/pcap"
	"github.com/fabemu/fabemu/tracefmt/sample"
)

func init() { register(newTraceCmd) }

// newTraceCmd builds "fabemu trace": inspect, convert and generate block
// I/O traces.
func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Inspect, convert and generate block-I/O traces",
		Long: "Inspect, convert and generate block-I/O traces.\n\nFormats: srt (HP cello), msr (SNIA MSR Cambridge), " +
			"spc, blkparse, fio (iolog v2/v3), disksim (ASCII), csv (fabemu's own). Compressed .gz/.bz2 input is " +
			"read transparently; a directory or several SRT files are merged in time order. " +
			"stats also summarises packet captures (pcap, pcapng).",
	}
	cmd.AddCommand(newTraceStatsCmd(), newTraceConvertCmd(), newTraceGenCmd())
	return cmd
}

// readFlags are the reading options shared by stats and convert.
type readFlags struct {
	format     string
	blkAction  string
	spcBlock   int64
	sortWindow int
}

func (f *readFlags) add(cmd *cobra.Command, formatFlag string) {
	cmd.Flags().StringVar(&f.format, formatFlag, "auto", "input format: auto, srt, msr, spc, blkparse, fio, disksim, csv (stats: also pcap, pcapng)")
	cmd.Flags().StringVar(&f.blkAction, "blkparse-action", "Q", "blkparse event that becomes a request: Q (queued) or D (issued)")
	cmd.Flags().Int64Var(&f.spcBlock, "spc-block", 512, "bytes per SPC LBA")
	cmd.Flags().IntVar(&f.sortWindow, "sort-window", 0, "sort arrivals within a window of this many records (0: keep file order)")
}

func (f *readFlags) open(paths []string) (tracefmt.Reader, error) {
	format, opts, err := f.options()
	if err != nil {
		return nil, err
	}
	return tracefmt.OpenFiles(paths, format, opts)
}

// options checks the reading flags and returns the format and options.
func (f *readFlags) options() (tracefmt.Format, tracefmt.Options, error) {
	format, err := tracefmt.ParseFormat(f.format)
	if err != nil {
		return "", tracefmt.Options{}, err
	}
	if f.blkAction != "Q" && f.blkAction != "D" {
		return "", tracefmt.Options{}, fmt.Errorf("--blkparse-action must be Q or D, not %q", f.blkAction)
	}
	if f.spcBlock < 1 || f.spcBlock > 1<<20 {
		return "", tracefmt.Options{}, fmt.Errorf("--spc-block %d: want 1..1048576 bytes per LBA", f.spcBlock)
	}
	if f.sortWindow < 0 {
		return "", tracefmt.Options{}, fmt.Errorf("--sort-window %d: want 0 (file order) or a record count", f.sortWindow)
	}
	return format, tracefmt.Options{BlkparseAction: f.blkAction[0], SPCBlockSize: f.spcBlock, SortWindow: f.sortWindow}, nil
}

func newTraceStatsCmd() *cobra.Command {
	var rf readFlags
	var jsonOut string
	var useSample bool
	cmd := &cobra.Command{
		Use:   "stats FILE|DIR [FILE...] | --sample",
		Short: "Summarise a trace: records, duration, rate, read fraction, sizes, devices, burstiness",
		Long: "Summarise a block-I/O trace, or a packet capture (pcap, pcapng): packets, bytes on the wire and " +
			"captured, truncated frames, rates, flows and the TCP retransmissions and reordering (RFC 4737) in it.",
		RunE: func(cmd *cobra.Command, args []string) error {
			var r tracefmt.Reader
			var err error
			switch {
			case useSample && len(args) == 0:
				r, err = sample.Open(tracefmt.Options{})
				args = []string{sample.Name}
			case useSample || len(args) == 0:
				return errors.New("give trace files or --sample, not both or neither")
			default:
				if err := checkOutputs(args, output{"--json", jsonOut}); err != nil {
					return err
				}
				if len(args) == 1 && isStream(args[0]) {
					var c *pcap.Reader
					if r, c, err = rf.openStream(args[0]); c != nil {
						return captureStatsOf(cmd.OutOrStdout(), c, jsonOut)
					}
					break
				}
				r, err = rf.open(args)
				if errors.Is(err, tracefmt.ErrCapture) {
					return captureStats(cmd.OutOrStdout(), args, jsonOut)
				}
			}
			if err != nil {
				return err
			}
			defer r.Close()
			st, err := tracefmt.Summarize(r)
			if err != nil {
				return err
			}
			st.File = strings.Join(args, " ")
			if jsonOut != "" {
				return writeJSON(cmd.OutOrStdout(), jsonOut, st)
			}
			printStats(cmd.OutOrStdout(), st, r)
			return nil
		},
	}
	rf.add(cmd, "format")
	cmd.Flags().BoolVar(&useSample, "sample", false, "summarise the embedded sample trace")
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the summary as JSON to this file (- for stdout) instead of the table")
	return cmd
}

// isStream reports whether path names something that can be read only
// once: a pipe, a FIFO, a character device or a socket (not a regular
// file, not a directory).
func isStream(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.Mode().IsRegular() && !st.IsDir()
}

// openStream opens a trace that can be read only once (isStream): it is
// opened once and read through one buffer, decompressed if it is, its
// format told from a peek at that buffer, so that the block-trace reader
// and, for a packet capture, the capture reader see the same bytes (the
// capture used to be opened a second time and found empty). One of the
// two readers is returned.
func (f *readFlags) openStream(path string) (tracefmt.Reader, *pcap.Reader, error) {
	format, opts, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br, closer, err := tracefmt.Decompress(fh, path)
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	closeBoth := func() { closer.Close(); fh.Close() }
	r, err := tracefmt.NewReader(br, path, format, opts)
	if errors.Is(err, tracefmt.ErrCapture) {
		c, err := pcap.NewReader(br, path)
		if err != nil {
			closeBoth()
			return nil, nil, err
		}
		return nil, c, nil
	}
	if err != nil {
		closeBoth()
		return nil, nil, err
	}
	return withClose{r, closeBoth}, nil, nil
}

// withClose is a trace reader that also closes what it was opened from.
type withClose struct {
	tracefmt.Reader
	after func()
}

func (w withClose) Close() error {
	err := w.Reader.Close()
	w.after()
	return err
}

// captureStats summarises one packet capture (see tracefmt/pcap).
func captureStats(w io.Writer, args []string, jsonOut string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s is a packet capture: give one capture at a time", args[0])
	}
	r, err := pcap.Open(args[0])
	if err != nil {
		return err
	}
	return captureStatsOf(w, r, jsonOut)
}

// captureStatsOf summarises the capture r reads, and closes it.
func captureStatsOf(w io.Writer, r *pcap.Reader, jsonOut string) error {
	defer r.Close()
	st, err := pcap.Summarize(r)
	if err != nil {
		return err
	}
	if jsonOut != "" {
		// flows read "TCP a:1 > b:2": no HTML escaping of ">"
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
		return outfile.Write(jsonOut, w, func(out io.Writer) error {
			_, err := out.Write(b.Bytes())
			return err
		})
	}
	printCaptureStats(w, st)
	return nil
}

func printCaptureStats(w io.Writer, st *pcap.Stats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	p("file", "%s", st.File)
	p("format", "%s", st.Format)
	p("records", "%d packets", st.Records)
	p("bytes", "%d on the wire, %d captured", st.TotalBytes, st.CapturedBytes)
	p("truncated", "%d frames cut by the snap length", st.Truncated)
	p("first packet", "%s", st.FirstTime)
	p("duration", "%.6f s", st.DurationS)
	p("rate", "%.1f packets/s, %.3f Mbit/s", st.PacketRate, st.BitRate/1e6)
	if st.TimeBacksteps > 0 {
		p("time backsteps", "%d packets earlier than one before them", st.TimeBacksteps)
	}
	pc := st.Protocols
	p("protocols", "IPv4 %d, IPv6 %d, non-IP %d; TCP %d, UDP %d, ICMP %d, other %d; fragments %d, undecoded %d",
		pc.IPv4, pc.IPv6, pc.NonIP, pc.TCP, pc.UDP, pc.ICMP, pc.OtherIP, pc.Fragments, pc.Undecoded)
	p("flows", "%d one-way (%d packets beyond the flow table)", st.Flows, st.UntrackedPackets)
	t := st.TCP
	p("TCP", "%d flows, %d data segments, %d retransmitted, %d reordered (ratio %.4f, max extent %d, %d 3-reordered) in %d flows",
		t.Flows, t.DataSegments, t.Retransmissions, t.Reordered, t.ReorderedRatio, t.ExtentMax, t.ThreeReordered, t.FlowsReordered)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "interface\tname\tlink type\tresolution\tsnaplen\tpackets\tbytes\t")
	for _, in := range st.Interfaces {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%g s\t%d\t%d\t%d\t\n", in.ID, in.Name, in.LinkType, in.ResolutionS, in.Snaplen, in.Packets, in.Bytes)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "top flows by bytes\tpackets\tbytes\tdata segs\tretrans\treordered\tmax extent\tmax late\tmax byte offset\t")
	for _, f := range st.TopFlows {
		if o := f.TCP; o != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t\n", f.Flow, f.Packets, f.Bytes, o.DataSegments, o.Retransmissions,
				o.Reordered, o.Extent.Max, time.Duration(o.LateTime.Max), o.ByteOffset.Max)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t\t\t\t\t\t\t\n", f.Flow, f.Packets, f.Bytes)
		}
	}
	tw.Flush()
}

func writeJSON(stdout io.Writer, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return outfile.Write(path, stdout, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

func printStats(w io.Writer, st *tracefmt.Stats, r tracefmt.Reader) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	p("file", "%s", st.File)
	p("format", "%s", st.Format)
	p("records", "%d", st.Records)
	p("first arrival", "%.6f s", st.FirstArrivalS)
	p("duration", "%.3f s (%s)", st.DurationS, time.Duration(st.DurationS*1e9).Round(time.Second))
	p("request rate", "%.3f requests/s", st.RatePerS)
	p("reads", "%d (%.1f%%)", st.Reads, 100*st.ReadFraction)
	p("writes", "%d (%.1f%%)", st.Writes, 100*(1-st.ReadFraction))
	p("synchronous", "%.1f%%", 100*st.SyncFraction)
	p("bytes", "%d", st.TotalBytes)
	p("mean size", "%.0f bytes", st.MeanSizeBytes)
	approx := ""
	if !st.SizesExact {
		approx = " (approximate)"
	}
	p("size min/p50/p90/p99/max", "%d / %d / %d / %d / %d bytes%s", st.SizeMinBytes, st.SizeP50Bytes, st.SizeP90Bytes, st.SizeP99Bytes, st.SizeMaxBytes, approx)
	var top []string
	for _, s := range st.TopSizes {
		top = append(top, fmt.Sprintf("%d B x%d", s.Bytes, s.Count))
	}
	p("common sizes", "%s", strings.Join(top, ", "))
	p("inter-arrival mean", "%.6f s", st.InterarrivalMeanS)
	p("inter-arrival CV", "%.2f (burstiness; 1 = Poisson)", st.InterarrivalCV)
	if st.ServiceRecords > 0 {
		p("traced service mean", "%.3f ms (%d records)", st.ServiceMeanS*1e3, st.ServiceRecords)
	}
	p("out of order", "%d records", st.OutOfOrder)
	if s, o := tracefmt.SRTDropped(r); s+o > 0 {
		p("SRT records dropped", "%d SuspectIO, %d other types", s, o)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tname\trequests\treads\tbytes\t")
	for _, d := range st.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t\n", d.ID, d.Name, d.Requests, d.Reads, d.Bytes)
	}
	tw.Flush()
}

func newTraceConvertCmd() *cobra.Command {
	var rf readFlags
	var to string
	cmd := &cobra.Command{
		Use:   "convert IN OUT --to FORMAT",
		Short: "Convert a trace to another format (csv, disksim, srt, spc, fio); OUT ending in .gz is compressed",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return errors.New("--to FORMAT is required (csv, disksim, srt, spc, fio)")
			}
			if err := checkOutputs(args[:1], output{"output", args[1]}); err != nil {
				return err
			}
			r, err := rf.open(args[:1])
			if err != nil {
				return err
			}
			defer r.Close()
			w, err := tracefmt.Create(args[1], tracefmt.Format(to))
			if err != nil {
				return err
			}
			n, err := copyTrace(w, r)
			if err != nil {
				w.Abort() // keep a previous file at the path
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d records to %s (%s)\n", n, args[1], to)
			if o, ok := r.(tracefmt.OrderChecker); ok && o.Order().Inversions > 0 {
				rep := o.Order()
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %d records out of arrival order (first at record %d, largest step back %v); try --sort-window\n",
					rep.Inversions, rep.FirstRecord, rep.MaxBackstep)
			}
			return nil
		},
	}
	rf.add(cmd, "from-format")
	cmd.Flags().StringVar(&to, "to", "", "output format: csv, disksim, srt, spc, fio")
	return cmd
}

func copyTrace(w tracefmt.Writer, r tracefmt.Reader) (int64, error) {
	var n int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := w.Write(rec); err != nil {
			return n, err
		}
		n++
	}
}

// maxGenRecords bounds trace gen --records (some 50 GB of CSV), and
// maxGenSpan the time the generated trace spans.
const (
	maxGenRecords = 1_000_000_000
	maxGenSpan    = 100 * 365 * 24 * time.Hour
)

func newTraceGenCmd() *cobra.Command {
	var (
		like, to, sizes string
		records         int64
		seed            uint64
		p               blockgen.Profile
	)
	cmd := &cobra.Command{
		Use:   "gen OUT --like cello99|cello92 --records N --seed S",
		Short: "Generate a synthetic block trace from a profile of published statistics",
		Long: "Generate a synthetic block trace: bursty ON/OFF arrivals, a 1/2/4/8 KiB size mix, a read fraction, " +
			"sequential runs and Zipf skew across disks. --like picks a profile (see docs/traces.md for the " +
			"citations); every knob flag overrides it. Output format from --to or the file name (.csv, .disksim, " +
			".srt, .spc, .fio, optionally .gz). The same flags and seed give the same trace.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := blockgen.Like(like)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			set := func(name string, apply func()) {
				if f.Changed(name) {
					apply()
				}
			}
			set("rate", func() { base.Rate = p.Rate })
			set("read-fraction", func() { base.ReadFraction = p.ReadFraction })
			set("disks", func() { base.Disks = p.Disks })
			set("disk-skew", func() { base.DiskSkew = p.DiskSkew })
			set("disk-bytes", func() { base.DiskBytes = p.DiskBytes })
			set("burst-len", func() { base.BurstLen = p.BurstLen })
			set("burst-gap", func() { base.BurstGap = p.BurstGap })
			set("idle-cv", func() { base.IdleCV = p.IdleCV })
			set("seq-read", func() { base.SeqRead = p.SeqRead })
			set("seq-write", func() { base.SeqWrite = p.SeqWrite })
			set("sync-read", func() { base.SyncRead = p.SyncRead })
			set("sync-write", func() { base.SyncWrite = p.SyncWrite })
			set("initiators", func() { base.Initiators = p.Initiators })
			if sizes != "" {
				if base.Sizes, err = blockgen.ParseSizes(sizes); err != nil {
					return err
				}
			}
			if records <= 0 || records > maxGenRecords {
				return fmt.Errorf("--records %d: want 1..%d", records, maxGenRecords)
			}
			if base.Rate > 0 {
				// The arrival times are int64 nanoseconds (292 years).
				if span := float64(records) / base.Rate; span > maxGenSpan.Seconds() {
					return fmt.Errorf("--records %d at --rate %g/s span %.3g s, more than the %v a trace's nanosecond times hold here", records, base.Rate, span, maxGenSpan)
				}
			}
			if err := checkOutputs(nil, output{"output", args[0]}); err != nil {
				return err
			}
			format := tracefmt.Format(to)
			if to == "" {
				if format, err = formatFromName(args[0]); err != nil {
					return err
				}
			}
			g, err := blockgen.New(base, seed)
			if err != nil {
				return err
			}
			w, err := tracefmt.Create(args[0], format)
			if err != nil {
				return err
			}
			err = g.Write(w, records)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d %s-like records to %s (%s, seed %d)\n", records, base.Name, args[0], format, seed)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&like, "like", "cello99", "profile: "+strings.Join(blockgen.Profiles(), ", "))
	fl.Int64Var(&records, "records", 100000, "number of requests")
	fl.Uint64Var(&seed, "seed", 1, "random seed")
	fl.StringVar(&to, "to", "", "output format: csv, disksim, srt, spc, fio (default: from the file name)")
	fl.Float64Var(&p.Rate, "rate", 0, "mean request rate (requests/s)")
	fl.Float64Var(&p.ReadFraction, "read-fraction", 0, "fraction of reads")
	fl.IntVar(&p.Disks, "disks", 0, "number of disks")
	fl.Float64Var(&p.DiskSkew, "disk-skew", 0, "Zipf exponent of disk popularity (0 = uniform)")
	fl.Int64Var(&p.DiskBytes, "disk-bytes", 0, "capacity of each disk in bytes")
	fl.Float64Var(&p.BurstLen, "burst-len", 0, "mean requests per ON burst")
	fl.DurationVar(&p.BurstGap, "burst-gap", 0, "mean inter-arrival inside a burst")
	fl.Float64Var(&p.IdleCV, "idle-cv", 0, "coefficient of variation of idle (OFF) gaps, >= 1")
	fl.Float64Var(&p.SeqRead, "seq-read", 0, "probability that a read is sequential")
	fl.Float64Var(&p.SeqWrite, "seq-write", 0, "probability that a write is sequential")
	fl.Float64Var(&p.SyncRead, "sync-read", 0, "probability that a read is synchronous")
	fl.Float64Var(&p.SyncWrite, "sync-write", 0, "probability that a write is synchronous")
	fl.IntVar(&p.Initiators, "initiators", 0, "number of initiators (pids); each burst comes from one")
	fl.StringVar(&sizes, "sizes", "", "size mix SIZE:WEIGHT,... e.g. 1k:0.1,2k:0.2,4k:0.1,8k:0.6")
	return cmd
}

// formatFromName picks a writer format from a file name's extension.
func formatFromName(path string) (tracefmt.Format, error) {
	base := strings.TrimSuffix(path, ".gz")
	switch ext := strings.TrimPrefix(filepath.Ext(base), "."); ext {
	case "csv", "disksim", "srt", "spc", "fio":
		return tracefmt.Format(ext), nil
	case "ascii", "trace":
		return tracefmt.DiskSim, nil
	}
	return "", fmt.Errorf("cannot tell the output format from %q; use --to", path)
}
