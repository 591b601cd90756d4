package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
)

// Plan is a sweep expanded into its points, in a fixed order.
type Plan struct {
	Name  string
	Spec  *Spec
	Exp   *experiment.Experiment
	Quick bool
	// Points are the experiment's points (experiment.Points order).
	Points []experiment.Point
	// MemoryMiB is the memory estimate of each point, in MiB rounded up:
	// model.EstimateRun of its row, as sim and replay estimate it.
	MemoryMiB []int
	// Hash identifies the plan: the experiment's definition, quick and
	// every point's ID and configuration hash. Results of another plan
	// are refused.
	Hash string

	expJSON json.RawMessage
	// worst is the largest estimate of a point and its model.
	worst      model.MemoryEstimate
	worstModel *model.Model
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
			est, md, err := e.EstimateRow(pt.Row, s.Quick)
			if err != nil {
				return nil, fmt.Errorf("row %s: %w", pt.Row, err)
			}
			m = int((est.Bytes + 1<<20 - 1) >> 20)
			if md != nil && (p.worstModel == nil || est.Bytes > p.worst.Bytes) {
				p.worst, p.worstModel = est, md
			}
			mem[pt.Row] = m
		}
		p.MemoryMiB = append(p.MemoryMiB, m)
	}
	return p, nil
}

// CheckMemory refuses the plan when its largest point, times jobs points
// at once, needs more than maxMemory (0: the memory available here), with
// sim's message naming the setting (model.CheckMemory).
func (p *Plan) CheckMemory(jobs int, maxMemory int64) error {
	if p.worstModel == nil {
		return nil
	}
	return model.CheckMemory(p.worstModel, p.worst, jobs, maxMemory)
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

// RequestMiB is the memory a cluster task asks for per point it runs at
// once (the Kubernetes request, Slurm's --mem): the point's estimate plus
// 128 MiB for the sweep runner around the run (the experiment's generated
// trace, calibration results, the result encoding), rounded up to 64 MiB.
// paper004-table1's shards, estimated at 42 MiB a point, peak at 81 MiB
// (docs/sweeps.md).
func RequestMiB(estimate int) int { return (estimate + 128 + 63) / 64 * 64 }

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
	fmt.Fprintf(w, "memory estimate: at most %d MiB per point (the estimate of sim and replay --dry-run; docs/performance.md)\n\n", p.MaxMemoryMiB())
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
