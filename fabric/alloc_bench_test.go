package fabric

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// starTopo is one switch of n ports with a host on every port.
func starTopo(tb testing.TB, n int) *topo.Topology {
	tp := &topo.Topology{Name: fmt.Sprintf("star%d", n), Kind: topo.KindGeneric, Switches: []topo.Switch{{Ports: n}}}
	for h := 0; h < n; h++ {
		tp.Hosts = append(tp.Hosts, topo.Host{At: topo.PortRef{Switch: 0, Port: h}})
	}
	if err := tp.Finish(); err != nil {
		tb.Fatal(err)
	}
	return tp
}

// blockedSwitch builds a 64-port switch of arch under allocator alloc,
// every host sending 256-byte packets to random destinations among the
// first dests hosts (other than itself) and no host receiving
// (HoldReception): once the buffers fill, every input holds packets in
// some of its queues and no head can move.
func blockedSwitch(tb testing.TB, arch, alloc string, dests int) *Fabric {
	const n, perHost = 64, 200
	cfg := DefaultConfig()
	cfg.Switch, cfg.Allocator = arch, alloc
	if info, err := lookupArch(arch); err != nil {
		tb.Fatal(err)
	} else if !info.OutputBuffered() {
		cfg.OutputBuffer = 0
	}
	eng, f, ep := build(tb, starTopo(tb, n), cfg, route.DefaultConfig())
	for h := 0; h < n; h++ {
		f.HoldReception(h)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seq := make([]uint64, n*n)
	for range perHost {
		for src := 0; src < n; src++ {
			dst := rng.IntN(dests - 1)
			if dst >= src {
				dst++
			}
			ep.send(src, dst, 256, seq[src*n+dst])
			seq[src*n+dst]++
		}
	}
	eng.RunUntil(100 * des.Microsecond)
	if f.Deadlock != nil {
		tb.Fatal(f.Deadlock)
	}
	return f
}

// BenchmarkAllocatorBlocked is the allocator's hot path at a saturated
// switch: one allocation of a 64-port switch whose inputs all hold
// packets and whose heads all wait (its hosts receive nothing), so the
// allocation changes nothing and can be repeated. "retry" first moves
// every output's epoch, as a freed buffer, link or credit does, so every
// waiting head is tried again (routing candidates from its cache, the
// selection function, the outputs' room); "cached" does not, and rr skips
// every head by its blocked mark. An allocation costs in proportion to the
// queues holding packets, not to the queues (voqnet has 64 per input
// here, pciq-2+recn-iq 2 + 2 x max_saqs). Reported: ns per allocation and
// the non-empty queues per input. Traffic "uniform" goes to any host,
// "hot4" to four of them (fewer non-empty queues per input).
func BenchmarkAllocatorBlocked(b *testing.B) {
	for _, tc := range []struct {
		arch    string
		traffic string
		dests   int
	}{{"cioq", "uniform", 64}, {"voqnet", "uniform", 64}, {"voqnet", "hot4", 4}, {"pciq-2+recn-iq", "uniform", 64}} {
		arch := tc.arch
		for _, alloc := range []string{"rr", "islip", "hrr"} {
			b.Run(arch+"/"+tc.traffic+"/"+alloc, func(b *testing.B) {
				f := blockedSwitch(b, arch, alloc, tc.dests)
				s := &f.sw[0]
				var heads, inputs int
				for _, ii := range s.in {
					for v := range f.in[ii].queues {
						if f.in[ii].queues[v].head != nil {
							heads++
						}
					}
					inputs++
				}
				for _, mode := range []string{"retry", "cached"} {
					if mode == "cached" && alloc != "rr" {
						continue // only rr keeps blocked marks
					}
					b.Run(mode, func(b *testing.B) {
						grants := f.Stats.Grants
						for b.Loop() {
							if mode == "retry" {
								for _, oi := range s.out {
									f.out[oi].epoch++
								}
							}
							f.alloc.arbitrate(s)
						}
						if f.Stats.Grants != grants {
							b.Fatalf("%d grants at a switch whose heads cannot move", f.Stats.Grants-grants)
						}
						b.ReportMetric(float64(heads)/float64(inputs), "heads/input")
						b.ReportMetric(float64(len(f.in[s.in[0]].queues)), "queues/input")
					})
				}
			})
		}
	}
}
