package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// TestVOQMemoryValidate: fabric.voq_memory names a policy, partitioned
// which only the VOQ schemes take (the others share); empty takes each
// scheme's default.
func TestVOQMemoryValidate(t *testing.T) {
	for _, tc := range []struct {
		arch, mem, want, err string
	}{
		{"voqnet", "", VOQPartitioned, ""},
		{"voqsw", "", VOQShared, ""},
		{"4q", "", VOQShared, ""},
		{"cioq", "", VOQShared, ""},
		{"voqsw", "partitioned", VOQPartitioned, ""},
		{"voqnet", "shared", VOQShared, ""},
		{"cioq", "partitioned", VOQShared, ""},
		{"recn", "partitioned", VOQShared, ""},
		{"4q", "split", "", `fabric.voq_memory "split": want shared or partitioned`},
	} {
		c := DefaultConfig()
		c.Switch, c.VOQMemory = tc.arch, tc.mem
		got, err := voqMemory(c)
		verr := c.Validate()
		if tc.err != "" {
			if err == nil || verr == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s/%q: err %v, Validate %v, want %q", tc.arch, tc.mem, err, verr, tc.err)
			}
			continue
		}
		if err != nil || verr != nil || got != tc.want {
			t.Errorf("%s/%q: %q, %v, Validate %v; want %q", tc.arch, tc.mem, got, err, verr, tc.want)
		}
	}
}

// TestVOQMemoryShares: on the 64-host MIN with 128 KB ports (paper 000
// §4.1), partitioned memory gives every queue the port memory divided by
// the queues per lane (voqsw: 8 queues, 16 KB = 256 blocks; 4q: 32 KB =
// 512 blocks; voqnet: 2 KB = 32 blocks), credits per queue on the links
// between switches, and on the hosts' injection links too when the NICs
// key their injection queues (KeyInjectionQueues), and the queue check of
// CheckInvariants catches a lost queue credit.
func TestVOQMemoryShares(t *testing.T) {
	tc := topo.DefaultConfig(topo.KindMIN)
	tc.Hosts, tc.MINRadix, tc.Stages = 64, 8, 0
	tp, err := topo.Build(tc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := route.New(tp, route.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, keyed := range []bool{false, true} {
		for arch, share := range map[string]int32{"voqsw": 256, "4q": 512, "voqnet": 32} {
			c := DefaultConfig()
			c.Switch, c.VOQMemory = arch, VOQPartitioned
			c.InputBuffer, c.OutputBuffer = 128*1024, 128*1024
			f, err := New(des.New(), c, tp, r, 256, nil)
			if err != nil {
				t.Fatal(err)
			}
			if keyed {
				f.KeyInjectionQueues()
			}
			a, ok := f.arch.(*voqPartArch)
			if !ok {
				t.Fatalf("%s partitioned: architecture %T", arch, f.arch)
			}
			a.setup()
			if a.inShare[0] != share || a.outShare[0] != share {
				t.Errorf("%s: shares in %d out %d blocks, want %d", arch, a.inShare[0], a.outShare[0], share)
			}
			links := 0
			for oi := range f.out {
				o := &f.out[oi]
				if want := f.in[o.down].sw >= 0 && (o.sw >= 0 || keyed); want != (a.qcr[oi] != nil) {
					t.Fatalf("%s (keyed %v): %s has queue credits %v, want %v", arch, keyed, f.outName(int32(oi)), a.qcr[oi] != nil, want)
				}
				if a.qcr[oi] != nil {
					links++
				}
			}
			want := 256 // 2 x 128 cables between the three stages
			if keyed {
				want += 64 // and the hosts' injection links
			}
			if links != want {
				t.Errorf("%s (keyed %v): %d channels with queue credits, want %d", arch, keyed, links, want)
			}
			if iv := f.CheckInvariants(); !iv.OK() {
				t.Fatalf("%s: idle fabric: %v", arch, iv.Violations)
			}
			for oi := range a.qcr {
				if a.qcr[oi] != nil {
					a.qcr[oi][3]--
					break
				}
			}
			iv := f.CheckInvariants()
			if iv.OK() || !strings.Contains(strings.Join(iv.Violations, ";"), "queue 3: credits") {
				t.Errorf("%s: a lost queue credit not reported: %v", arch, iv.Violations)
			}
		}
	}
}
