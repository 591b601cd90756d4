package experiment

import (
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
)

// Workload is what a run configuration (RowConfig's) tells the memory
// estimate (model.EstimateRun) of its workload: for a synthetic run the
// packets it generates at most per host and their mean size, for a replay
// the requests it may keep outstanding, nothing for other kinds. sim,
// replay, experiment and sweep plan estimate a run with it, so they agree.
func Workload(c any) (model.Workload, error) {
	switch c := c.(type) {
	case *replay.ReplaySimConfig:
		return c.Workload(), nil
	case *model.SimConfig:
		n, size, err := synth.PacketsBound(c)
		if err != nil {
			return model.Workload{}, err
		}
		return model.Workload{PacketsPerHost: n, PacketBytes: size}, nil
	}
	return model.Workload{PacketsPerHost: -1}, nil
}

// EstimateRow is the memory estimate of one run of row name, as sim and
// replay print it under --dry-run.
func (e *Experiment) EstimateRow(name string, quick bool) (model.MemoryEstimate, *model.Model, error) {
	c, _, err := e.RowConfig(name, quick)
	if err != nil {
		return model.MemoryEstimate{}, nil, err
	}
	mc, ok := c.(interface{ ModelConfig() *model.Model })
	if !ok {
		return model.MemoryEstimate{}, nil, nil
	}
	wl, err := Workload(c)
	if err != nil {
		return model.MemoryEstimate{}, nil, err
	}
	if g := e.Trace.Generate; g != nil && wl.Requests > 0 {
		// A generated trace has a known length: no more requests than
		// records can be outstanding.
		wl.Requests = min(wl.Requests, g.Records)
	}
	m := mc.ModelConfig()
	est, err := model.EstimateRun(m, wl)
	return est, m, err
}
