package synth

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/traffic"
)

// StartBackground drives only the listed hosts with the synthetic workload
// c until end (des.Never for no end), so that live traffic on the other
// hosts (TAP devices) meets realistic congestion. Destinations follow the
// pattern over all hosts, so background messages also reach the live
// hosts' links. Messages carry no Tag and no Done callback.
func StartBackground(nw *nic.Network, eng *des.Engine, c model.TrafficConfig, link traffic.Link, seed uint64, hosts []int, end des.Time) error {
	_, err := StartBackgroundLoad(nw, eng, c, link, seed, hosts, end)
	return err
}

// Background is synthetic load started by StartBackgroundLoad.
type Background struct{ s *synth }

// Stop ends the load now: no message is created from the current
// simulated time on (the daemon replaces its background load this way).
// It must run on the engine's goroutine.
func (b *Background) Stop() { b.s.end = min(b.s.end, b.s.eng.Now()) }

// StartBackgroundLoad is StartBackground returning the load, so that it
// can be stopped.
func StartBackgroundLoad(nw *nic.Network, eng *des.Engine, c model.TrafficConfig, link traffic.Link, seed uint64, hosts []int, end des.Time) (*Background, error) {
	s, err := newSynth(nw, eng, c, link, seed, end)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		if h < 0 || h >= nw.Hosts() {
			return nil, fmt.Errorf("background: host %d outside 0..%d", h, nw.Hosts()-1)
		}
	}
	now := int64(eng.Now())
	for _, h := range hosts {
		if s.pattern.Silent(h) {
			continue
		}
		if t := s.procs[h].First(now, s.rngs[h]); t < int64(end) {
			eng.Schedule(des.Time(t), s, 0, int32(h), nil)
		}
	}
	return &Background{s: s}, nil
}
