// Command validationplot draws several load sweeps written by
// `fabemu sim --sweep-load ... --json FILE` into one plot of average
// latency versus accepted traffic (bytes/ns/switch), the axes of paper 004
// Figure 5, for docs/validation.md. It is a documentation helper, not part
// of the product.
//
//	go run ./internal/tools/validationplot -o docs/img/x.svg -title T \
//	    deterministic=det.json adaptive=adap.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/workload/synth"
)

// sweep is the part of the sweep JSON (fabemu.sweep/v1) the plot needs.
type sweep struct {
	Schema string           `json:"schema"`
	Points []*synth.Summary `json:"points"`
}

func main() {
	out := flag.String("o", "validation.svg", "output plot (.svg or .png)")
	title := flag.String("title", "", "plot title")
	flag.Parse()
	if err := run(*out, *title, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "validationplot:", err)
		os.Exit(1)
	}
}

func run(out, title string, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("give LABEL=SWEEP.json arguments")
	}
	var series []report.Series
	for _, a := range args {
		label, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("argument %q: want LABEL=SWEEP.json", a)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var sw sweep
		if err := json.Unmarshal(data, &sw); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if sw.Schema != "fabemu.sweep/v1" {
			return fmt.Errorf("%s: schema %q, want fabemu.sweep/v1", path, sw.Schema)
		}
		s := report.Series{Name: label}
		for _, p := range sw.Points {
			s.X = append(s.X, p.AcceptedBytesPerNsPerSwitch)
			s.Y = append(s.Y, p.LatencyNs.Mean)
		}
		series = append(series, s)
	}
	return report.LinePlot(out, title, "accepted traffic (bytes/ns/switch)", "average latency (ns, log scale)",
		series, report.PlotOptions{LogY: true})
}
