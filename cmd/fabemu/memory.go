package main

import (
	"fmt"
	"io"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/model"
	"github.com/spf13/cobra"
)

// memFlags are --dry-run and --max-memory: every run estimates its memory
// from the resolved configuration before building anything, prints the
// estimate and stops under --dry-run, and is refused when the estimate
// exceeds the available memory (or --max-memory). A run that passes may
// still be long: --progress, registered with them, draws its progress
// line on stderr even when stderr is not a terminal.
type memFlags struct {
	dryRun    bool
	maxMemory string
	progress  bool
}

func (mf *memFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&mf.dryRun, "dry-run", false, "resolve the configuration, print it with the memory estimate, and run nothing")
	fs.BoolVar(&mf.progress, "progress", false, "write a progress line (simulated time or work done, events per second) to stderr every 2 s even when it is not a terminal (on a terminal it is drawn in place anyway)")
	fs.StringVar(&mf.maxMemory, "max-memory", "", "memory the run may use, e.g. 8GiB (default: the available memory); a run whose estimate exceeds it is refused")
}

// check estimates m's memory (with what the workload tells of itself,
// times jobs runs at once); it prints the estimate and reports stop under
// --dry-run, and refuses a run that does not fit.
func (mf *memFlags) check(w io.Writer, m *model.Model, wl model.Workload, jobs int) (stop bool, err error) {
	var limit int64
	if mf.maxMemory != "" {
		if limit, err = model.ParseSize(mf.maxMemory); err != nil {
			return false, fmt.Errorf("--max-memory %w", err)
		}
	}
	e, err := model.EstimateRun(m, wl)
	if err != nil {
		return false, err
	}
	if mf.dryRun {
		c := e.Counts
		fmt.Fprintf(w, "topology            %s: %d switches, %d hosts, %d switch ports\n", m.Topology.Kind, c.Switches, c.Hosts, c.Ports)
		fmt.Fprintf(w, "switch, allocator   %s, %s\n", m.Fabric.Switch, m.Fabric.Allocator)
		if m.Fabric.Wormhole() {
			fmt.Fprintf(w, "switching           wormhole, %d-byte flits, lanes of %d flits\n", m.Fabric.Flit(), m.Fabric.Lane())
		}
		fmt.Fprintf(w, "routing             %s\n", m.Routing.Mode)
		for _, p := range e.Parts {
			fmt.Fprintf(w, "  %-18s %s\n", p.What, model.FormatBytes(p.Bytes))
		}
		if jobs > 1 {
			fmt.Fprintf(w, "memory estimate     %s per run x %d jobs = %s\n", model.FormatBytes(e.Bytes), jobs, model.FormatBytes(e.Bytes*int64(jobs)))
		} else {
			fmt.Fprintf(w, "memory estimate     %s\n", model.FormatBytes(e.Bytes))
		}
		if avail := model.AvailableMemory(); avail > 0 {
			fmt.Fprintf(w, "memory available    %s\n", model.FormatBytes(avail))
		}
		return true, model.CheckMemory(m, e, jobs, limit)
	}
	return false, model.CheckMemory(m, e, jobs, limit)
}

// checkExperiment estimates every row of e and checks the largest, times
// the rows run at once (--jobs); under --dry-run it prints each row's
// estimate and reports stop.
func (mf *memFlags) checkExperiment(w io.Writer, e *experiment.Experiment, quick bool, jobs int) (stop bool, err error) {
	var limit int64
	if mf.maxMemory != "" {
		if limit, err = model.ParseSize(mf.maxMemory); err != nil {
			return false, fmt.Errorf("--max-memory %w", err)
		}
	}
	var worst model.MemoryEstimate
	var worstModel *model.Model
	for _, r := range e.Rows {
		est, m, err := e.EstimateRow(r.Name, quick)
		if err != nil {
			return false, fmt.Errorf("row %s: %w", r.Name, err)
		}
		if m == nil {
			continue
		}
		if mf.dryRun {
			fmt.Fprintf(w, "row %-24s %s: %d switches, %d hosts, memory estimate %s\n", r.Name, m.Topology.Kind,
				est.Counts.Switches, est.Counts.Hosts, model.FormatBytes(est.Bytes))
		}
		if worstModel == nil || est.Bytes > worst.Bytes {
			worst, worstModel = est, m
		}
	}
	if worstModel == nil {
		return mf.dryRun, nil
	}
	jobs = max(min(jobs, len(e.Rows)), 1)
	if mf.dryRun {
		fmt.Fprintf(w, "memory estimate %s per run x %d jobs = %s\n", model.FormatBytes(worst.Bytes), jobs, model.FormatBytes(worst.Bytes*int64(jobs)))
	}
	return mf.dryRun, model.CheckMemory(worstModel, worst, jobs, limit)
}

// workloadOf is experiment.Workload: what a run configuration tells the
// memory estimate of its workload.
func workloadOf(c any) (model.Workload, error) { return experiment.Workload(c) }
