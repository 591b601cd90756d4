package injection

import (
	"strings"
	"testing"
)

type noLocal struct{}

func (noLocal) Now() int64                       { return 0 }
func (noLocal) InjectionBusy() (bool, bool)      { return false, false }
func (noLocal) InjectionCredits(int) (int, bool) { return 0, false }
func (noLocal) FreeBuffers() (int, bool)         { return 0, false }
func (noLocal) ChannelRatio(int) (float64, bool) { return 0, false }
func (noLocal) QueuedPackets() int               { return 0 }

// step is one event in a connection's life and what must hold after it.
type step struct {
	ev      string // "inject", "resend", "hol", "ack N R", "nack", "nack-again"
	ack     Ack
	nack    Nack
	may     bool // MayInject of a plain new packet after the event
	limited bool
}

func run(t *testing.T, p Policy, steps []step) {
	t.Helper()
	s := p.NewConn()
	if s.Limited() || !s.MayInject(Candidate{Size: 256}, noLocal{}) {
		t.Fatalf("new connection must start in UI and may inject")
	}
	for i, st := range steps {
		c := Candidate{Size: 256}
		switch st.ev {
		case "inject":
			if !s.MayInject(c, noLocal{}) {
				t.Fatalf("step %d: injecting a packet the policy refuses", i)
			}
			s.Injected(c)
		case "resend":
			c.Resend = true
			s.Injected(c)
		case "hol":
			c.Resend, c.HeadOfLine = true, true
			if !s.MayInject(c, noLocal{}) {
				t.Fatalf("step %d: head-of-line resend refused", i)
			}
			s.Injected(c)
		case "ack":
			s.Acked(st.ack)
		case "nack":
			s.Nacked(st.nack)
		default:
			t.Fatalf("bad step %q", st.ev)
		}
		if got := s.MayInject(Candidate{Size: 256}, noLocal{}); got != st.may {
			t.Errorf("step %d (%s): MayInject = %v, want %v", i, st.ev, got, st.may)
		}
		if got := s.Limited(); got != st.limited {
			t.Errorf("step %d (%s): Limited = %v, want %v", i, st.ev, got, st.limited)
		}
	}
}

// TestLIStateMachine follows paper 004 §3.3 sentence by sentence.
func TestLIStateMachine(t *testing.T) {
	p, err := New(Config{Policy: LI})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"UI injects as soon as possible", []step{
			{ev: "inject", may: true}, {ev: "inject", may: true},
			{ev: "ack", ack: Ack{Packets: 2}, may: true},
		}},
		{"a NACK switches to LI and stops injection", []step{
			{ev: "inject", may: true}, {ev: "inject", may: true},
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
		}},
		{"in LI one packet per acknowledged packet", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 2}, may: true, limited: true},
			{ev: "inject", may: true, limited: true},
			{ev: "inject", may: false, limited: true},
		}},
		{"resends consume the allowance too", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 1}, may: true, limited: true},
			{ev: "resend", may: false, limited: true},
		}},
		{"back to UI when every rejected packet is acknowledged", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 3, Rejected: 1}, may: true, limited: true},
			{ev: "ack", ack: Ack{Packets: 1, Rejected: 1}, may: true, limited: false},
		}},
		{"a packet rejected twice counts once", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "nack", nack: Nack{First: false}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 1, Rejected: 1}, may: true, limited: false},
		}},
		{"leftover allowance does not survive a return to UI", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 5, Rejected: 1}, may: true, limited: false},
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
		}},
		{"head-of-line resend is exempt", []step{
			{ev: "nack", nack: Nack{First: true}, may: false, limited: true},
			{ev: "hol", may: false, limited: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, p, c.steps) })
	}
}

func TestLWWindow(t *testing.T) {
	p, _ := New(Config{Policy: LW})
	cases := []struct {
		name  string
		steps []step
	}{
		{"UI ignores the window", []step{
			{ev: "inject", may: true},
			{ev: "ack", ack: Ack{Packets: 1, Room: 0, RoomKnown: true}, may: true},
		}},
		{"LI injects what fits the advertised room", []step{
			{ev: "nack", nack: Nack{First: true, Room: 600, RoomKnown: true}, may: true, limited: true},
			{ev: "inject", may: true, limited: true},
			{ev: "inject", may: false, limited: true}, // 600-512 < 256
		}},
		{"bytes in flight take their share", []step{
			{ev: "nack", nack: Nack{First: true, Room: 600, RoomKnown: true, InFlightBytes: 400}, may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 1, Room: 2048, RoomKnown: true, InFlightBytes: 1024}, may: true, limited: true},
		}},
		{"an ACK re-advertises, not adds", []step{
			{ev: "nack", nack: Nack{First: true, Room: 256, RoomKnown: true}, may: true, limited: true},
			{ev: "ack", ack: Ack{Packets: 4, Room: 100, RoomKnown: true}, may: false, limited: true},
		}},
		{"unknown room does not limit", []step{
			{ev: "nack", nack: Nack{First: true}, may: true, limited: true},
		}},
		{"back to UI", []step{
			{ev: "nack", nack: Nack{First: true, Room: 0, RoomKnown: true}, may: false, limited: true},
			{ev: "hol", may: false, limited: true},
			{ev: "ack", ack: Ack{Packets: 1, Rejected: 1, Room: 0, RoomKnown: true}, may: true, limited: false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, p, c.steps) })
	}
}

func TestUnlimitedNeverLimits(t *testing.T) {
	p, _ := New(Config{Policy: Unlimited})
	run(t, p, []step{
		{ev: "nack", nack: Nack{First: true}, may: true},
		{ev: "resend", may: true},
		{ev: "ack", ack: Ack{Packets: 1, Rejected: 1}, may: true},
	})
}

func TestConfig(t *testing.T) {
	cases := []struct {
		in   Kind
		want Kind
		err  string
	}{
		{"", LI, ""}, {"li", LI, ""}, {"LW", LW, ""}, {"unlimited", Unlimited, ""},
		{"trans-t", "", `injection.policy "trans-t"`},
	}
	for _, c := range cases {
		err := Config{Policy: c.in}.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
		}
		p, err := New(Config{Policy: c.in})
		if err != nil || p.Kind() != c.want {
			t.Errorf("%q: policy %v err %v, want %v", c.in, p, err, c.want)
		}
	}
	if _, err := ParseKind(""); err == nil {
		t.Error("ParseKind(\"\") must fail")
	}
	if k, err := ParseKind("Li"); err != nil || k != LI {
		t.Errorf("ParseKind(Li) = %v, %v", k, err)
	}
}
