package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/spf13/cobra"
)

func init() { register(newSetCmd) }

// runtimeKeys are the settings a running daemon changes through its
// control API, and those it does not (with what to do instead).
var runtimeKeys = map[string]string{
	"background.load": "",
	"model.delivery":  "the delivery mode sets the routing and the NICs' end-to-end control when the model is built: restart the daemon with --delivery",
}

func newSetCmd() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "set KEY=VALUE",
		Short: "Change a running daemon's setting through its control API",
		Long: `Change a setting of a running fabemu daemon (fabemu run) through its
control API, without restarting it. Keys:

  background.load=X   offered load of the synthetic background on every
                      host without a TAP, a fraction of its link rate
                      (0 = none); replaces the load in effect

The daemon answers the setting in effect, or a one-line error.`,
		Example: `  fabemu set background.load=0.05
  fabemu set background.load=0 --socket /run/fabemu/fabemu.sock`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, val, ok := strings.Cut(args[0], "=")
			if !ok {
				return fmt.Errorf("%q: want KEY=VALUE, e.g. background.load=0.05", args[0])
			}
			why, known := runtimeKeys[key]
			switch {
			case !known:
				return fmt.Errorf("unknown key %q: the daemon changes background.load at runtime", key)
			case why != "":
				return fmt.Errorf("%s cannot change at runtime: %s", key, why)
			}
			load, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("background.load=%s: not a number", val)
			}
			if math.IsNaN(load) || math.IsInf(load, 0) { // JSON cannot carry them
				return fmt.Errorf("background.load=%s: not a finite number", val)
			}
			body, err := json.Marshal(emu.BackgroundRequest{Load: &load})
			if err != nil {
				return err
			}
			resp, err := postControl(cmdContext(cmd), socket, emu.PathBackground, body)
			if err != nil {
				return err
			}
			var bs emu.BackgroundState
			if err := json.Unmarshal(resp, &bs); err != nil {
				return fmt.Errorf("daemon at %s: bad answer: %w", socket, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "background.load=%g on %d hosts\n", bs.Load, bs.Hosts)
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", emu.DefaultSocket, "control API unix socket of the daemon")
	return cmd
}

// postControl POSTs a JSON body to the daemon's control API and returns
// the answer, or the daemon's error in one line.
func postControl(ctx context.Context, socket, path string, body []byte) ([]byte, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://fabemu"+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no daemon answering on %s: %w", socket, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e emu.APIError
		_ = json.Unmarshal(out, &e)
		return nil, fmt.Errorf("daemon at %s refused: %s", socket, e.Error)
	}
	return out, nil
}

// cmdContext is the command's context, or a background one when the
// command runs without one (tests calling RunE directly).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
