//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabemu/fabemu/bpf"
)

func init() { register(newCaptureCmd) }

// newCaptureCmd builds "fabemu capture": pcapng from an eBPF program on a
// live interface.
func newCaptureCmd() *cobra.Command {
	var (
		iface, netns, out, jsonOut, attach string
		filters                            []string
		snaplen, ringMiB                   int
		duration                           time.Duration
		count                              uint64
	)
	cmd := &cobra.Command{
		Use:   "capture --iface IF --out FILE.pcapng",
		Short: "Capture an interface's frames with eBPF into pcapng",
		Long: "Capture an interface's frames with eBPF into pcapng.\n\n" +
			"A tc program on the interface's ingress and egress copies the first --snaplen bytes of each frame, " +
			"with its timestamp, length and direction, into a ring buffer; the file has one interface per direction. " +
			"Frames the ring buffer had no room for are counted and reported, never hidden. Attaches with tcx " +
			"(Linux 6.6+) or a clsact qdisc; needs root. Stops after --duration, --count frames, or SIGINT/SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iface == "" || out == "" {
				return errors.New("capture: --iface and --out are required")
			}
			if duration < 0 {
				return fmt.Errorf("capture: --duration %v is negative", duration)
			}
			filter, err := bpf.ParseFilter(filters)
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			mode, err := bpf.ParseAttach(attach)
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			if ringMiB < 1 || ringMiB > 1024 {
				return fmt.Errorf("capture: --ring-mib %d: must be 1..1024", ringMiB)
			}
			if snaplen < 1 || snaplen > bpf.MaxSnaplen {
				return fmt.Errorf("capture: --snaplen %d: must be 1..%d", snaplen, bpf.MaxSnaplen)
			}
			if err := checkOutputs(nil, output{"--out", out}, output{"--json", jsonOut}); err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			c, err := bpf.OpenCapture(bpf.CaptureConfig{Netns: netns, Iface: iface, Filter: filter,
				Snaplen: snaplen, RingBytes: ringMiB << 20, Attach: mode})
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			defer c.Close()
			f, err := os.Create(out)
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "capturing on %s (%s), snap length %d, to %s\n", iface, c.Mode(), snaplen, out)
			st, werr := c.WritePcapng(ctx, f, count)
			if err := f.Close(); err != nil && werr == nil {
				werr = err
			}
			if st != nil {
				printBPFCaptureStats(cmd.OutOrStdout(), st, out)
				if jsonOut != "" {
					if err := writeJSONFile(jsonOut, cmd.OutOrStdout(), st); err != nil && werr == nil {
						// Named by its own path (the error does), not the pcap's.
						return fmt.Errorf("capture: --json: %w", err)
					}
				}
			}
			if werr != nil {
				return fmt.Errorf("capture: %s: %w", out, werr)
			}
			return c.Close()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&iface, "iface", "", "interface to capture on")
	fl.StringVar(&netns, "netns", "", "named network namespace the interface is in (as `ip netns` lists)")
	fl.StringArrayVar(&filters, "filter", nil, "keep only matching frames: 'host ADDR', 'port N' or 'proto tcp|udp|icmp|icmp6|N' (repeat: all must hold)")
	fl.IntVar(&snaplen, "snaplen", bpf.DefaultSnaplen, fmt.Sprintf("bytes kept of each frame (1..%d)", bpf.MaxSnaplen))
	fl.IntVar(&ringMiB, "ring-mib", 4, "ring buffer size in MiB (rounded up to a power of two)")
	fl.StringVar(&out, "out", "", "pcapng file to write")
	fl.DurationVar(&duration, "duration", 0, "stop after this long (0: until --count or a signal)")
	fl.Uint64Var(&count, "count", 0, "stop after writing this many frames (0: no limit)")
	fl.StringVar(&jsonOut, "json", "", "also write the accounting as JSON to this file (- for stdout)")
	fl.StringVar(&attach, "attach", "auto", "how to attach: auto (tcx, else clsact), tcx or tc")
	return cmd
}

func printBPFCaptureStats(w io.Writer, st *bpf.CaptureStats, out string) {
	fmt.Fprintf(w, "file        %s\n", out)
	fmt.Fprintf(w, "interface   %s (%s)\n", st.Iface, st.Attach)
	if st.Filter != "" {
		fmt.Fprintf(w, "filter      %s\n", st.Filter)
	}
	fmt.Fprintf(w, "matched     %d frames in %.3f s\n", st.Matched, st.DurationS)
	fmt.Fprintf(w, "captured    %d (ingress %d, egress %d written, %d read after --count)\n", st.Captured, st.Ingress, st.Egress, st.Discarded)
	fmt.Fprintf(w, "dropped     %d frames: the ring buffer was full\n", st.Dropped)
	fmt.Fprintf(w, "bytes       %d on the wire, %d frames cut by the snap length %d\n", st.Bytes, st.Truncated, st.Snaplen)
}

// writeJSONFile writes v indented to path, or to stdout when path is "-".
func writeJSONFile(path string, stdout io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // flows are named "A > B"
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if path == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
