package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/reorder"
	"github.com/spf13/cobra"
)

func init() { register(newStatCmd) }

func newStatCmd() *cobra.Command {
	var socket string
	var asJSON, watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "stat",
		Short: "Query a running daemon: pacing, TAP hosts and per-connection order metrics",
		Long: `Query the control API of a running fabemu daemon (fabemu run) over its
unix socket and print the status as tables, or as JSON with --json.
Per connection (source TAP > destination TAP) it shows the frames and the
RFC 4737 / RFC 5236 order figures measured on ground truth: frames are
numbered at ingress and their order is evaluated at egress. The current
rates are over the last one to two seconds. With --watch the status is
redrawn every --interval until Ctrl-C (with --json, one status per line).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !watch {
				return statOnce(cmd.Context(), cmd.OutOrStdout(), socket, asJSON, false)
			}
			if every < 100*time.Millisecond {
				return fmt.Errorf("--interval %v: want at least 100ms", every)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				if err := statOnce(ctx, cmd.OutOrStdout(), socket, asJSON, true); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				select {
				case <-ctx.Done():
					if !asJSON {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					return nil
				case <-t.C:
				}
			}
		},
	}
	cmd.Flags().StringVar(&socket, "socket", emu.DefaultSocket, "control API unix socket of the daemon")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw the status every --interval until Ctrl-C")
	cmd.Flags().DurationVar(&every, "interval", time.Second, "refresh interval of --watch (at least 100ms)")
	return cmd
}

// statOnce fetches and prints the status once; redraw clears the terminal
// first (--watch).
func statOnce(ctx context.Context, w io.Writer, socket string, asJSON, redraw bool) error {
	body, err := fetchStatus(ctx, socket)
	if err != nil {
		return err
	}
	var st emu.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("daemon at %s: bad status: %w", socket, err)
	}
	// Another schema would decode into a table of zeros: refuse it, for
	// --json too (a script reading it expects this schema).
	if st.Schema != emu.StatusSchema {
		return fmt.Errorf("daemon at %s: status schema %q, want %q (a different fabemu version?)", socket, st.Schema, emu.StatusSchema)
	}
	if asJSON {
		if redraw {
			body = append(bytes.TrimSpace(body), '\n')
		}
		_, err := w.Write(body)
		return err
	}
	if redraw {
		fmt.Fprint(w, "\x1b[H\x1b[2J") // cursor home, clear screen
	}
	return writeStatus(w, &st)
}

func fetchStatus(ctx context.Context, socket string) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://fabemu"+emu.PathStatus, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no daemon answering on %s: %w", socket, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e emu.APIError
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("daemon at %s: %s: %s", socket, resp.Status, e.Error)
	}
	return body, nil
}

// lateShown is how many of the latest invalid intervals stat details.
const lateShown = 5

// writeLateStages prints, for the latest invalid intervals, the largest
// time each stage of the frame path took in them, the slowest marked.
func writeLateStages(w io.Writer, recent []des.IntervalReport) {
	if len(recent) > lateShown {
		recent = recent[len(recent)-lateShown:]
	}
	for _, r := range recent {
		if len(r.Stages) == 0 {
			continue
		}
		parts := make([]string, len(r.Stages))
		for i, st := range r.Stages {
			parts[i] = fmt.Sprintf("%s %s", st.Stage, f3(float64(st.Max)/1e3))
			if st.Stage == r.Slowest {
				parts[i] = "*" + parts[i]
			}
		}
		fmt.Fprintf(w, "  late interval at %s (%s, excess lag %s us), stage maxima us: %s\n",
			r.Start.Format("15:04:05"), r.Cause, f3(float64(r.MaxLag)/1e3), strings.Join(parts, ", "))
	}
}

func writeStatus(w io.Writer, st *emu.Status) error {
	p := st.Pacer
	fmt.Fprintf(w, "fabemu daemon: up %.0f s, preset %s (%s), delivery %s, routing %s, background hosts %d\n",
		st.UptimeSeconds, st.Preset, st.Topology, st.Delivery, st.Routing, st.BackgroundHosts)
	fmt.Fprintf(w, "pacing: simulated %.3f s; lag p50 / p99 / max %s / %s / %s us (wake-ups %s / %s / %s, excess %s / %s / %s); behind %s us\n",
		st.Fabric.SimSeconds, f3(p.Lag.P50/1e3), f3(p.Lag.P99/1e3), f3(p.Lag.Max/1e3),
		f3(p.WakeLag.P50/1e3), f3(p.WakeLag.P99/1e3), f3(p.WakeLag.Max/1e3),
		f3(p.ExcessLag.P50/1e3), f3(p.ExcessLag.P99/1e3), f3(p.ExcessLag.Max/1e3), f3(float64(p.Behind)/1e3))
	if st.RealtimePriority > 0 {
		fmt.Fprintf(w, "scheduling: every daemon thread SCHED_FIFO, priority %d\n", st.RealtimePriority)
	}
	fmt.Fprintf(w, "real time: valid %.1f%% of the time; intervals not valid %d of %d (excess lag over %v); inputs refused %d; run by their reader %s of %s\n",
		100*p.ValidFraction, p.Invalid, p.Intervals, p.LagThreshold, p.InputsRefused, report.FormatUint(p.DirectRuns), report.FormatUint(p.Inputs))
	var lagStalls uint64
	for _, h := range st.Hosts {
		lagStalls += h.LagStalls
	}
	fmt.Fprintf(w, "overload %s: dilation %.3g (raised %d times), lag stalls %d\n", st.Overload, p.Dilation, p.DilationRaises, lagStalls)
	for _, c := range slices.Sorted(maps.Keys(p.InvalidByCause)) {
		fmt.Fprintf(w, "  not valid, %s: %d intervals (%s)\n", c, p.InvalidByCause[c], emu.CauseText(c))
	}
	if len(p.InvalidBySlowest) > 0 {
		var parts []string
		for _, s := range slices.Sorted(maps.Keys(p.InvalidBySlowest)) {
			parts = append(parts, fmt.Sprintf("%s %d", s, p.InvalidBySlowest[s]))
		}
		fmt.Fprintf(w, "  slowest stage of the intervals not valid: %s\n", strings.Join(parts, ", "))
	}
	writeLateStages(w, p.Recent)
	fmt.Fprintf(w, "fabric: %s packets delivered, %.3f Gb/s accepted (payload, simulated time), latency p50 / p99 %s / %s ns\n\n",
		report.FormatUint(st.Fabric.DeliveredPackets), st.Fabric.AcceptedGbps, f3(st.Fabric.LatencyNs.P50), f3(st.Fabric.LatencyNs.P99))
	if c := st.BackgroundCapture; c != nil {
		f := c.Fabric
		fmt.Fprintf(w, "background capture %s (%s): matched %d = captured %d + ring dropped %d; submitted %d, late %d; into the fabric %d frames (%s bytes), %d of %d copies delivered; local %d, unmapped %d, unplaced %d\n",
			c.Iface, c.Attach, c.Matched, c.Captured, c.Dropped, c.Submitted, c.Late, f.Sent, report.FormatUint(f.Bytes), f.Delivered, f.Copies, f.Local, f.Unmapped, f.Unplaced)
		if f.Error != "" {
			fmt.Fprintf(w, "background capture: %s\n", f.Error)
		}
		fmt.Fprintln(w)
	}

	hosts := &report.Table{Title: "TAP hosts", Columns: cols("tap", "host", "netns", "frames in (picked up)", "bytes in", "frames out (inline)", "bytes out", "refused in/out (kernel)", "unknown unicast", "stalls reader/admit/lag", "egress holds (s)")}
	for _, h := range st.Hosts {
		hosts.Rows = append(hosts.Rows, []string{h.TAP, fmt.Sprint(h.Host), h.Netns,
			fmt.Sprintf("%s (%s)", report.FormatUint(h.FramesIn), report.FormatUint(h.PickedUp)), report.FormatUint(h.BytesIn), fmt.Sprintf("%s (%s)", report.FormatUint(h.FramesOut), report.FormatUint(h.InlineWrites)), report.FormatUint(h.BytesOut),
			fmt.Sprintf("%d/%d (%d/%d)", sum(h.InRefused), sum(h.OutRefused), h.InRefused["kernel"], h.OutRefused["kernel"]), report.FormatUint(h.UnknownUnicast),
			fmt.Sprintf("%d/%d/%d", h.ReaderStalls, h.AdmitStalls, h.LagStalls), fmt.Sprintf("%d (%s)", h.EgressHolds, f3(h.EgressHeldSeconds))})
	}
	if err := hosts.Write(w); err != nil {
		return err
	}
	writePeers(w, st.Hosts)
	fmt.Fprintln(w)
	r := st.Rates
	rates := &report.Table{Title: fmt.Sprintf("Current rates over the last %.1f s (fabric: %.3f Gb/s accepted, simulated time)", r.WindowSeconds, r.FabricGbps),
		Columns: cols("tap", "frames in/s", "Gb/s in", "frames out/s", "Gb/s out", "refused in/s", "refused out/s")}
	for _, h := range r.Hosts {
		rates.Rows = append(rates.Rows, []string{h.TAP, f3(h.FramesInPerSec), f3(h.GbpsIn), f3(h.FramesOutPerSec), f3(h.GbpsOut),
			f3(h.RefusedInPerSec), f3(h.RefusedOutPerSec)})
	}
	if err := rates.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	path := &report.Table{Title: "Frame path, wall time p50/p99 (us): read>submit>ingress>model>egress for frames from this TAP, writer queue and write for frames to it",
		Columns: cols("tap", "read>submit", "submit>ingress", "model", "egress", "writer queue", "write")}
	us := func(s hist.Summary) string { return f3(s.P50/1e3) + "/" + f3(s.P99/1e3) }
	for _, h := range st.Hosts {
		pt := h.Path
		path.Rows = append(path.Rows, []string{h.TAP, us(pt.ReadToSubmit), us(pt.SubmitToIngress), us(pt.Model), us(pt.Egress), us(pt.WriterQueue), us(pt.Write)})
	}
	if err := path.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	conns := &report.Table{Title: "Connections (frames numbered at ingress, order at egress)", Columns: cols("connection", "frames", "bytes", "latency p50/p99 (ns)", "reordered", "reordered ratio (RFC 4737)", "extent max", "late time max (us)", "displaced share (RFC 5236 RD)")}
	for _, c := range st.Connections {
		o := c.Order
		conns.Rows = append(conns.Rows, []string{c.Src + ">" + c.Dst, report.FormatUint(c.Frames), report.FormatUint(c.Bytes),
			f3(c.LatencyNs.P50) + "/" + f3(c.LatencyNs.P99), report.FormatUint(c.Reordered), f3(c.ReorderedRatio),
			fmt.Sprint(o.Extent.Max), f3(float64(o.LateTime.Max) / 1e6), f3(displaced(o.RD.Bins))})
	}
	if err := conns.Write(w); err != nil {
		return err
	}
	if st.NIC.Order != nil {
		fmt.Fprintf(w, "\nNIC packets (all streams, background included): reordered ratio %s at NIC arrival", f3(st.NIC.ReorderedRatio))
		if st.NIC.OrderAfter != nil {
			fmt.Fprintf(w, ", %s after rearrangement", f3(st.NIC.OrderAfter.ReorderedRatio))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writePeers says, for the qemu-socket ports, whether their VM is
// attached: frames delivered to a port without one are refused.
func writePeers(w io.Writer, hosts []emu.HostStatus) {
	var parts []string
	for _, h := range hosts {
		if h.Peer == nil {
			continue
		}
		state := "no VM attached"
		if h.Peer.Attached {
			state = "VM attached"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d attachments, %d waited)", h.TAP, state, h.Peer.Attachments, h.Peer.Waited))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "VM ports: %s\n", strings.Join(parts, "; "))
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// displaced is the share of RFC 5236 samples with a non-zero displacement.
func displaced(bins []reorder.Bin) float64 {
	var f float64
	for _, b := range bins {
		if b.Value != 0 {
			f += b.Fraction
		}
	}
	return f
}

func cols(names ...string) []report.Column {
	var c []report.Column
	for _, n := range names {
		c = append(c, report.Column{Name: n})
	}
	return c
}
