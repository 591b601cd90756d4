package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
)

// Plan is a sweep expanded into its points, in a fixed order.
type Plan struct {
	Name  string
	Spec  *Spec
	Exp   *experiment.Experiment
	Quick bool
	// Points are the experiment's points (experiment.Points order).
	Points []experiment.Point
	// MemoryMiB is a rough memory estimate of each point (see Estimate).
	MemoryMiB []int
	// Hash identifies the plan: the experiment's definition, quick and
	// every point's ID and configuration hash. Results of another plan
	// are refused.
	Hash string

	expJSON json.RawMessage
}

// NewPlan expands a spec; dir is the spec's directory (for a relative
// experiment file).
func NewPlan(s *Spec, dir string) (*Plan, error) {
	e, err := s.experimentOf(dir)
	if err != nil {
		return nil, err
	}
	ps, err := e.Points(s.Quick)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", e.Name, err)
	}
	ej, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	p := &Plan{Name: s.Name, Spec: s, Exp: e, Quick: s.Quick, Points: ps, expJSON: ej}
	if p.Name == "" {
		p.Name = e.Name
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\nquick=%v\n", p.Name, ej, s.Quick)
	for _, pt := range ps {
		fmt.Fprintf(h, "%s %s\n", pt.ID, pt.ConfigHash)
	}
	p.Hash = hex.EncodeToString(h.Sum(nil))[:16]
	mem := map[string]int{}
	for _, pt := range ps {
		m, ok := mem[pt.Row]
		if !ok {
			m = estimate(e, pt.Row, s.Quick)
			mem[pt.Row] = m
		}
		p.MemoryMiB = append(p.MemoryMiB, m)
	}
	return p, nil
}

// estimate is a rough memory estimate of one row's run in MiB (see
// estimateModel).
func estimate(e *experiment.Experiment, row string, quick bool) int {
	cfg, _, err := e.RowConfig(row, quick)
	if err != nil {
		return 256
	}
	var records int64
	if g := e.Trace.Generate; g != nil {
		records = g.Records
		if quick && e.Quick.Limit > 0 {
			records = min(records, e.Quick.Limit)
		}
	}
	if rc, ok := cfg.(*replay.ReplaySimConfig); ok && rc.Replay.Limit > 0 && records == 0 {
		records = rc.Replay.Limit
	}
	m, ok := cfg.(interface{ ModelConfig() *model.Model })
	if !ok {
		return 256
	}
	return estimateModel(m.ModelConfig(), records)
}

// Shard returns the indices of the points shard i of n runs: every n-th
// point from i, so that the rows of a table spread over the shards.
func (p *Plan) Shard(i, n int) []int {
	var idx []int
	for k := i; k < len(p.Points); k += n {
		idx = append(idx, k)
	}
	return idx
}

// MaxMemoryMiB is the largest estimate of a point.
func (p *Plan) MaxMemoryMiB() int {
	m := 0
	for _, v := range p.MemoryMiB {
		m = max(m, v)
	}
	return m
}

// Write prints the plan: one line per point with its shard (of shards),
// ID, seed, configuration hash and memory estimate.
func (p *Plan) Write(w io.Writer, shards int) error {
	q := ""
	if p.Quick {
		q = " (quick)"
	}
	fmt.Fprintf(w, "sweep %s%s: experiment %s, %d points, plan %s\n", p.Name, q, p.Exp.Name, len(p.Points), p.Hash)
	if shards > 0 {
		fmt.Fprintf(w, "%d shards (%d to %d points each)\n", shards, len(p.Points)/shards, (len(p.Points)+shards-1)/shards)
	}
	fmt.Fprintf(w, "memory estimate: at most %d MiB per point (a rough guess from switch, host, link and lane counts, buffer sizes and trace length; docs/sweeps.md)\n\n", p.MaxMemoryMiB())
	t := report.Table{Columns: []report.Column{{Name: "#", Align: report.AlignRight}}}
	if shards > 0 {
		t.Columns = append(t.Columns, report.Column{Name: "shard", Align: report.AlignRight})
	}
	t.Columns = append(t.Columns, report.Column{Name: "point", Align: report.AlignLeft}, report.Column{Name: "seed", Align: report.AlignRight},
		report.Column{Name: "config", Align: report.AlignLeft}, report.Column{Name: "memory", Unit: "MiB", Align: report.AlignRight})
	for i, pt := range p.Points {
		cells := []string{fmt.Sprint(i)}
		if shards > 0 {
			cells = append(cells, fmt.Sprint(i%shards))
		}
		id := pt.ID
		if pt.NeedsCalibration {
			id += " (after calibration)"
		}
		cells = append(cells, id, fmt.Sprint(pt.Seed), pt.ConfigHash[:12], fmt.Sprint(p.MemoryMiB[i]))
		t.AddRow(cells...)
	}
	return t.Write(w)
}

// estimateModel is the rough memory estimate of one run of model m in
// MiB: a fixed 128 MiB for the runtime, routing tables and statistics, the
// buffers of every switch port and NIC at their full capacity (packets are
// allocated as they are buffered), 256 bytes of connection state per
// ordered host pair and lane (two lanes assumed), 1 KiB per trace record
// (the record, its request and reply state while in flight), doubled for
// the collector's headroom (GOGC 400 lets the heap grow past the live
// data) and rounded up to 64 MiB. It is a guess checked against one
// measurement (paper004-table1: 150 to 197 MB peak RSS per shard, estimate
// 256 MiB; docs/sweeps.md), not a bound.
func estimateModel(m *model.Model, records int64) int {
	t, err := topo.Build(m.Topology)
	if err != nil {
		return 256 // the run reports the error itself; a safe guess
	}
	sum := t.Summarize()
	const lanes = 2 // an escape and an adaptive lane
	ports := int64(2 * sum.Links)
	buf := ports * int64(m.Fabric.InputBuffer+m.Fabric.OutputBuffer)
	buf += int64(sum.Hosts) * lanes * int64(m.Fabric.NICBuffer)
	conn := int64(sum.Hosts) * int64(sum.Hosts) * lanes * 256
	bytes := buf + conn + records*1024
	mib := 128 + 2*int((bytes+(1<<20)-1)>>20)
	return (mib + 63) / 64 * 64
}
