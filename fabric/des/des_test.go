package des

import (
	"math/rand/v2"
	"testing"
)

type recorder struct {
	e   *Engine
	got []int32
	at  []Time
}

func (r *recorder) Handle(ev *Event) {
	if ev.At != r.e.Now() {
		panic("event fired at a time other than Now")
	}
	r.got = append(r.got, ev.A)
	r.at = append(r.at, ev.At)
}

func TestOrderTimeThenInsertion(t *testing.T) {
	e := New()
	r := &recorder{e: e}
	// Same times scheduled in a scrambled order: ties must fire in
	// insertion order.
	times := []Time{30, 10, 20, 10, 30, 10, 0, 20}
	for i, at := range times {
		e.Schedule(at, r, 0, int32(i), nil)
	}
	e.RunUntil(Never)
	want := []int32{6, 1, 3, 5, 2, 7, 0, 4}
	if len(r.got) != len(want) {
		t.Fatalf("fired %d events, want %d", len(r.got), len(want))
	}
	for i := range want {
		if r.got[i] != want[i] {
			t.Fatalf("order %v, want %v", r.got, want)
		}
	}
}

func TestRandomAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		e := New()
		r := &recorder{e: e}
		n := 1 + rng.IntN(2000)
		for i := 0; i < n; i++ {
			e.Schedule(Time(rng.IntN(100)), r, 0, int32(i), nil)
		}
		e.RunUntil(Never)
		if len(r.got) != n {
			t.Fatalf("fired %d of %d", len(r.got), n)
		}
		for i := 1; i < n; i++ {
			if r.at[i] < r.at[i-1] || (r.at[i] == r.at[i-1] && r.got[i] < r.got[i-1]) {
				t.Fatalf("trial %d: out of order at %d: (%v,%d) after (%v,%d)", trial, i, r.at[i], r.got[i], r.at[i-1], r.got[i-1])
			}
		}
	}
}

// chain schedules its successor when it fires, so events are interleaved
// with scheduling as in a simulation.
type chain struct {
	e     *Engine
	left  int
	fired int
}

func (c *chain) Handle(ev *Event) {
	c.fired++
	if c.left > 0 {
		c.left--
		c.e.After(Time(ev.A%7+1), c, 0, ev.A+1, nil)
	}
}

func TestRunUntilStopsAndAdvancesClock(t *testing.T) {
	e := New()
	c := &chain{e: e, left: 1000}
	e.Schedule(0, c, 0, 0, nil)
	e.RunUntil(100)
	if e.Now() != 100 {
		t.Fatalf("clock %v after RunUntil(100), want 100ps", e.Now())
	}
	if e.NextAt() <= 100 {
		t.Fatalf("an event at %v <= 100 was left pending", e.NextAt())
	}
	before := c.fired
	e.RunUntil(Never)
	if c.fired != 1001 || before >= 1001 {
		t.Fatalf("fired %d (before %d), want 1001 in two runs", c.fired, before)
	}
	if e.Pending() != 0 {
		t.Fatalf("%d events pending after RunUntil(Never)", e.Pending())
	}
}

type stopper struct{ e *Engine }

func (s stopper) Handle(ev *Event) {
	if ev.A == 3 {
		s.e.Stop()
	}
}

func TestStop(t *testing.T) {
	e := New()
	for i := 0; i < 10; i++ {
		e.Schedule(Time(i), stopper{e}, 0, int32(i), nil)
	}
	if n := e.RunUntil(Never); n != 4 {
		t.Fatalf("fired %d events before Stop, want 4", n)
	}
	if e.Now() != 3 {
		t.Fatalf("clock %v after Stop, want 3ps", e.Now())
	}
}

func TestScheduleInPastPanics(t *testing.T) {
	e := New()
	r := &recorder{e: e}
	e.Schedule(10, r, 0, 0, nil)
	e.RunUntil(Never)
	defer func() {
		if recover() == nil {
			t.Fatal("scheduling before Now did not panic")
		}
	}()
	e.Schedule(5, r, 0, 0, nil)
}

func TestTimeString(t *testing.T) {
	for _, c := range []struct {
		t    Time
		want string
	}{
		{0, "0s"}, {37, "37ps"}, {100 * Nanosecond, "100ns"}, {1500 * Nanosecond, "1.5us"},
		{2 * Millisecond, "2ms"}, {3 * Second, "3s"}, {-5 * Nanosecond, "-5ns"}, {Never, "never"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(c.t), got, c.want)
		}
	}
}

func TestNoAllocationPerEvent(t *testing.T) {
	e := New()
	c := &chain{e: e, left: 1 << 30}
	e.Schedule(0, c, 0, 0, nil)
	e.RunUntil(10000) // warm the slab and heap
	allocs := testing.AllocsPerRun(100, func() { e.Step() })
	if allocs != 0 {
		t.Fatalf("%.1f allocations per event, want 0", allocs)
	}
}

type sink struct{}

func (sink) Handle(*Event) {}

// BenchmarkScheduleStep measures one schedule plus one pop with a standing
// population of pending events due within the next 10 us, as in a fabric
// at saturation (a 4 KB packet takes 16 us on a 1X link; most events are a
// routing delay or a cable away).
func BenchmarkScheduleStep(b *testing.B) {
	for _, pending := range []int{100, 10000, 100000} {
		b.Run("pending="+itoa(pending), func(b *testing.B) {
			e := New()
			rng := rand.New(rand.NewPCG(3, 4))
			var s sink
			for i := 0; i < pending; i++ {
				e.Schedule(Time(rng.IntN(10_000_000)), s, 0, 0, nil)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Step()
				e.After(Time(rng.IntN(10_000_000)), s, 0, 0, nil)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}

// TestWheelAgainstReference interleaves scheduling and firing with times
// spread from the same bucket to far beyond the wheel's horizon, and checks
// the firing order against a plain sort of (time, insertion order).
func TestWheelAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 20; trial++ {
		e := New()
		type ev struct {
			at  Time
			seq int
		}
		var fired []ev
		var h handlerFunc = func(x *Event) { fired = append(fired, ev{x.At, int(x.A)}) }
		n := 0
		spans := []Time{10, 2000, 100 * Microsecond, 5 * Millisecond}
		for round := 0; round < 200; round++ {
			for i := 0; i < 1+rng.IntN(50); i++ {
				span := spans[rng.IntN(len(spans))]
				e.Schedule(e.Now()+Time(rng.Int64N(int64(span))), h, 0, int32(n), nil)
				n++
			}
			for i := 0; i < rng.IntN(60) && e.Pending() > 0; i++ {
				if e.NextAt() < e.Now() {
					t.Fatalf("NextAt %v before now %v", e.NextAt(), e.Now())
				}
				e.Step()
			}
		}
		e.RunUntil(Never)
		if len(fired) != n {
			t.Fatalf("fired %d of %d", len(fired), n)
		}
		for i := 1; i < len(fired); i++ {
			a, b := fired[i-1], fired[i]
			if b.at < a.at || (b.at == a.at && b.seq < a.seq) {
				t.Fatalf("trial %d: event (%v,#%d) fired after (%v,#%d)", trial, b.at, b.seq, a.at, a.seq)
			}
		}
	}
}

type handlerFunc func(*Event)

func (f handlerFunc) Handle(e *Event) { f(e) }

// TestWheelKeepsRoomOfBusyBucketsOnly: events that arrive in bursts of a
// few hundred per nanosecond, every nanosecond for more than a lap of the
// wheel, leave the wheel holding room for the buckets in use at once, not
// for every bucket's largest burst (which was 16,384 x 300 keys here).
func TestWheelKeepsRoomOfBusyBucketsOnly(t *testing.T) {
	e := New()
	var h handlerFunc = func(*Event) {}
	const burst, ahead = 300, 8 // keys per nanosecond, nanoseconds scheduled ahead
	for ns := Time(0); ns < 2*wheelSize<<bucketShift/1000*1000; ns += 1 << bucketShift {
		for i := 0; i < burst; i++ {
			e.Schedule(ns+ahead<<bucketShift, h, 0, 0, nil)
		}
		e.RunUntil(ns)
	}
	room := 0
	for _, b := range e.q.buckets {
		room += cap(b)
	}
	for _, b := range e.q.spare {
		room += cap(b)
	}
	if limit := wheelSize*bucketCap + 4*ahead*2*burst; room > limit {
		t.Errorf("wheel holds room for %d keys after the bursts, want at most %d", room, limit)
	}
}
