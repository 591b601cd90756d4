package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

func TestParseAllocator(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		name    string
		param   int
		wantErr string
	}{
		{"rr", "rr", 0, ""},
		{" rr ", "rr", 0, ""},
		{"islip", "islip", 0, ""},
		{"islip(4)", "islip", 4, ""},
		{"islip( 2 )", "islip", 2, ""},
		{"islip(0)", "", 0, "want 1 to 16"},
		{"islip(17)", "", 0, "want 1 to 16"},
		{"islip(x)", "", 0, "want islip[(N)]"},
		{"islip(3", "", 0, "want islip[(N)]"},
		{"rr(2)", "", 0, "takes no parameter"},
		{"pim", "pim", 0, ""},
		{"pim(3)", "pim", 3, ""},
		{"pim(0)", "", 0, "want 1 to 16"},
		{"pim(2", "", 0, "want pim[(N)]"},
		{"random", "random", 0, ""},
		{"random(2)", "", 0, "takes no parameter"},
		{"wavefront", "", 0, `unknown allocator "wavefront"; known: rr; islip[(N)]; pim[(N)]; random; hrr`},
		{"", "", 0, "unknown allocator"},
	} {
		s, err := parseAllocator(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil || s.info.Name != tc.name || s.param != tc.param {
			t.Errorf("%q: got %s(%d), %v; want %s(%d)", tc.spec, s.info.Name, s.param, err, tc.name, tc.param)
		}
	}
}

func TestConfigNamesArchitecture(t *testing.T) {
	c := DefaultConfig()
	c.Switch = "voq"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `fabric.switch: unknown switch architecture "voq"; known: cioq, iq`) {
		t.Errorf("unknown architecture: %v", err)
	}
	c = DefaultConfig()
	c.OutputBuffer = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "fabric.switch=iq") {
		t.Errorf("cioq without output buffer: %v", err)
	}
	c.Switch = "iq"
	if err := c.Validate(); err != nil {
		t.Errorf("iq without output buffer: %v", err)
	}
}

// controlRecorder is a cioq switch that records the control packets it
// receives.
type controlRecorder struct {
	switchArch
	got []*Control
	at  []des.Time
	eng *des.Engine
}

func (r *controlRecorder) control(oi int32, c *Control) {
	r.got = append(r.got, c)
	r.at = append(r.at, r.eng.Now())
}

// TestControlPackets: a control packet sent back from an input reaches the
// out-port feeding it after its own serialization and the propagation
// delay, behind the credit packets queued before it, and shares the link:
// a data packet on that reverse link waits for it.
func TestControlPackets(t *testing.T) {
	tp := line(t, 2, 1)
	eng, f, ep := build(t, tp, DefaultConfig(), route.DefaultConfig())
	rec := &controlRecorder{switchArch: f.arch, eng: eng}
	f.arch = rec
	// Switch 1's input port 1 (from switch 0): its reverse link is switch
	// 1's output port 1, which feeds switch 0's input port 2.
	ii := f.sw[1].in[1]
	c := &Control{Kind: 1, VL: 0, Arg: 7, Size: 16}
	f.SendControl(ii, c)
	ser := DefaultConfig().SerializationTime(16)
	prop := DefaultConfig().PropagationDelay()
	eng.RunUntil(des.Microsecond)
	if len(rec.got) != 1 || rec.got[0] != c {
		t.Fatalf("received %v", rec.got)
	}
	if rec.at[0] != ser+prop {
		t.Errorf("arrived at %v, want serialization %v + propagation %v", rec.at[0], ser, prop)
	}
	if want := f.sw[0].out[2]; f.in[ii].up != want {
		t.Fatalf("in-port %d is fed by out-port %d, want %d", ii, f.in[ii].up, want)
	}
	if f.Stats.ControlPackets != 1 || f.Stats.ControlBytes != 16 {
		t.Errorf("stats %+v", f.Stats)
	}
	// A data packet from host 1 (on switch 1) to host 0 crosses switch 1's
	// output port 1: queued behind a control packet, it starts after it.
	start := eng.Now()
	f.SendControl(ii, &Control{Size: 64})
	ep.send(1, 0, 282, 0)
	eng.RunUntil(start + 10*des.Microsecond)
	if len(ep.got) != 1 {
		t.Fatalf("delivered %d", len(ep.got))
	}
	// Its head reaches switch 1's crossbar at propagation + routing delay,
	// before the 64-byte control packet has left: it starts when that ends.
	cfg := DefaultConfig()
	headReady := prop + cfg.RoutingDelay
	wait := cfg.SerializationTime(64) - headReady
	want := 2*cfg.RoutingDelay + 3*prop + cfg.SerializationTime(282) + wait
	if got := ep.at[0] - start; wait <= 0 || got != want {
		t.Errorf("data packet latency %v, want %v (it waits %v for the control packet)", got, want, wait)
	}
	if iv := f.CheckInvariants(); !iv.OK() {
		t.Fatal(iv.Violations)
	}
}
