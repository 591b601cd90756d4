//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabemu/fabemu/bpf"
)

func init() { register(newOrderCmd) }

// orderReport is what "fabemu order --json" writes at the end.
type orderReport struct {
	Iface     string          `json:"iface"`
	Attach    bpf.Attach      `json:"attach"`
	DurationS float64         `json:"duration_s"`
	TCP       uint64          `json:"tcp_packets"`
	NoState   uint64          `json:"tcp_packets_without_flow_state"`
	Flows     []bpf.FlowOrder `json:"flows"`
}

// newOrderCmd builds "fabemu order": live per-flow TCP order measured in
// the kernel.
func newOrderCmd() *cobra.Command {
	var (
		iface, netns, jsonOut, attach string
		interval, duration            time.Duration
		top, maxFlows                 int
	)
	cmd := &cobra.Command{
		Use:   "order --iface IF",
		Short: "Measure the TCP order of a live interface's flows with eBPF",
		Long: "Measure the TCP order of a live interface's flows with eBPF.\n\n" +
			"A tc program on the interface's ingress and egress applies RFC 4737 to each TCP flow's byte " +
			"sequence numbers in the kernel (reordered: a late segment that fills missing bytes; retransmitted: " +
			"one whose bytes were all seen), without copying payloads. Prints the top flows every --interval " +
			"and, with --json, the whole table at the end. Needs root. Stops after --duration or SIGINT/SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iface == "" {
				return errors.New("order: --iface is required")
			}
			// One message per flag, naming it; an interval under 100 ms
			// floods the terminal (1ns printed 30,000 tables a second).
			switch {
			case interval < minOrderInterval:
				return fmt.Errorf("order: --interval %v: want at least %v", interval, minOrderInterval)
			case duration < 0:
				return fmt.Errorf("order: --duration %v: must not be negative", duration)
			case top < 1:
				return fmt.Errorf("order: --top %d: want at least 1", top)
			case maxFlows < 1 || maxFlows > 1<<20:
				return fmt.Errorf("order: --max-flows %d: want 1..%d (0 is not the default)", maxFlows, 1<<20)
			}
			mode, err := bpf.ParseAttach(attach)
			if err != nil {
				return fmt.Errorf("order: %w", err)
			}
			o, err := bpf.OpenOrder(bpf.OrderConfig{Netns: netns, Iface: iface, MaxFlows: maxFlows, Attach: mode})
			if err != nil {
				return fmt.Errorf("order: %w", err)
			}
			defer o.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(cmd.ErrOrStderr(), "measuring TCP order on %s (%s)\n", iface, o.Mode())
			start := time.Now()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for done := false; !done; {
				select {
				case <-ctx.Done():
					done = true
				case <-tick.C:
					flows, err := o.Flows()
					if err != nil {
						return fmt.Errorf("order: %w", err)
					}
					printOrderTable(w, time.Since(start), flows, top)
				}
			}
			if err := o.Detach(); err != nil {
				return fmt.Errorf("order: %w", err)
			}
			flows, err := o.Flows()
			if err != nil {
				return fmt.Errorf("order: %w", err)
			}
			rep := orderReport{Iface: iface, Attach: o.Mode(), DurationS: time.Since(start).Seconds(), Flows: flows}
			if rep.TCP, rep.NoState, err = o.Counters(); err != nil {
				return fmt.Errorf("order: %w", err)
			}
			if rep.Flows == nil {
				rep.Flows = []bpf.FlowOrder{}
			}
			fmt.Fprintln(w, "\nfinal table")
			printOrderTable(w, time.Since(start), flows, top)
			fmt.Fprintf(w, "%d TCP packets, %d flows, %d packets without flow state\n", rep.TCP, len(flows), rep.NoState)
			if jsonOut != "" {
				if err := writeJSONFile(jsonOut, w, rep); err != nil {
					return fmt.Errorf("order: %w", err)
				}
			}
			return o.Close()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&iface, "iface", "", "interface to measure on")
	fl.StringVar(&netns, "netns", "", "named network namespace the interface is in (as `ip netns` lists)")
	fl.DurationVar(&interval, "interval", time.Second, "print the table this often")
	fl.DurationVar(&duration, "duration", 0, "stop after this long (0: until a signal)")
	fl.IntVar(&top, "top", 10, "flows shown in the table, most data segments first")
	fl.IntVar(&maxFlows, "max-flows", 16384, "flow table size; the least recently used flows are evicted")
	fl.StringVar(&jsonOut, "json", "", "write every flow as JSON to this file at the end (- for stdout)")
	fl.StringVar(&attach, "attach", "auto", "how to attach: auto (tcx, else clsact), tcx or tc")
	return cmd
}

// minOrderInterval is the shortest --interval of fabemu order.
const minOrderInterval = 100 * time.Millisecond

func printOrderTable(w io.Writer, at time.Duration, flows []bpf.FlowOrder, top int) {
	fmt.Fprintf(w, "\n%.1f s, %d flows\n", at.Seconds(), len(flows))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\tdir\tpackets\tdata segs\tretrans\treordered\tratio\tmax byte offset\t")
	for _, f := range flows[:min(top, len(flows))] {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.4f\t%d\t\n", f.Flow, f.Direction, f.Packets, f.DataSegments,
			f.Retransmissions, f.Reordered, f.ReorderedRatio, f.MaxByteOffset)
	}
	tw.Flush()
}
