package emu

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport/porttest"
)

// The write API on a running emulator: the background load changes at
// runtime (the model's event rate follows it), bad bodies and values are
// refused with a JSON error naming what was wrong, and the load in effect
// is unchanged by a refused request.
func TestControlBackgroundLoad(t *testing.T) {
	r := newRig(t, "paper004-torus4x4", []porttest.Config{{MAC: mac(0)}, {MAC: mac(1)}}, nil)
	h := NewControlHandler(r.e.Status, r.e)
	do := func(method, body string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "http://fabemu"+PathBackground, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	events := func() uint64 {
		st := r.status(t)
		return st.Pacer.Events
	}
	if code, body := do("GET", ""); code != 200 || !strings.Contains(body, `"load":0`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	e0 := events()
	time.Sleep(200 * time.Millisecond)
	idle := events() - e0
	code, body := do("POST", `{"load": 0.001}`)
	if code != 200 {
		t.Fatalf("POST load 0.001: %d %s", code, body)
	}
	var bs BackgroundState
	if err := json.Unmarshal([]byte(body), &bs); err != nil || bs.Load != 0.001 || bs.Hosts < 1 {
		t.Fatalf("POST answer %s: %v", body, err)
	}
	e1 := events()
	time.Sleep(200 * time.Millisecond)
	loaded := events() - e1
	t.Logf("events in 200 ms: %d idle, %d at load 0.001", idle, loaded)
	if loaded <= idle {
		t.Errorf("background load did not start: %d events idle, %d loaded", idle, loaded)
	}
	if st := r.status(t); st.BackgroundLoad != 0.001 || st.BackgroundHosts != bs.Hosts {
		t.Errorf("status: load %g on %d hosts", st.BackgroundLoad, st.BackgroundHosts)
	}
	for _, tc := range []struct{ method, body, want string }{
		{"POST", `{"load": 1.5}`, "0 <= load <= 1"},
		{"POST", `{"load": -0.1}`, "0 <= load <= 1"},
		{"POST", `{"load": "x"}`, "bad body"},
		{"POST", `{"lod": 0.1}`, "unknown field"},
		{"POST", `{}`, `no \"load\"`},
		{"POST", ``, "bad body"},
		{"POST", `{"load": 0.1} {"load": 0.2}`, "more than one"},
		{"POST", `{"load": 0.1` + strings.Repeat(" ", 5000) + `}`, "bad body"},
		{"PUT", `{"load": 0.1}`, "not allowed"},
	} {
		code, body := do(tc.method, tc.body)
		if code < 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s %.40q: %d %s; want an error containing %q", tc.method, tc.body, code, body, tc.want)
		}
	}
	if st := r.status(t); st.BackgroundLoad != 0.001 {
		t.Errorf("a refused request changed the load to %g", st.BackgroundLoad)
	}
	// Off again: the model goes back to (almost) no events.
	if code, body := do("POST", `{"load": 0}`); code != 200 {
		t.Fatalf("POST load 0: %d %s", code, body)
	}
	time.Sleep(50 * time.Millisecond) // messages in flight finish
	e2 := events()
	time.Sleep(200 * time.Millisecond)
	if off := events() - e2; off > idle+100 {
		t.Errorf("background load did not stop: %d events in 200 ms", off)
	}
}

// The write API's body parser never panics and answers 200 or 400 with
// JSON.
func FuzzBackgroundBody(f *testing.F) {
	for _, s := range []string{`{"load": 0.1}`, `{}`, `{"load": "x"}`, `{"load": 1e400}`, ``, `null`, `{"load": -0}`, `[1]`} {
		f.Add(s)
	}
	h := NewControlHandler(fakeStatus, fakeCtl{})
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "http://fabemu"+PathBackground, strings.NewReader(body)))
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%q: answer is not JSON: %v", body, err)
		}
	})
}

type fakeCtl struct{}

func (fakeCtl) SetBackgroundLoad(load float64) (BackgroundState, error) {
	if !(load >= 0 && load <= 1) {
		return BackgroundState{}, errors.New("out of range")
	}
	return BackgroundState{Load: load, Hosts: 3}, nil
}

// dilation auto: an idle model runs in real time; one with background
// load it cannot follow in real time gets a dilation above 1, reported in
// the status. Whether it then keeps up is the machine's at the time (the
// measurement has a 50% margin; a machine that gets busier after it falls
// behind: pacing.overload dilate, TestOverloadDilate, follows that), so
// how far behind it is gets logged, not asserted.
func TestDilationAuto(t *testing.T) {
	r := newRig(t, "tap-square-10g", []porttest.Config{{MAC: mac(0)}, {MAC: mac(1)}}, func(c *RunConfig) {
		c.Pacing.DilationAuto = true
	})
	if st := r.status(t); st.Dilation != 1 || !st.DilationAuto {
		t.Errorf("idle: dilation %g auto %v, want 1 and auto", st.Dilation, st.DilationAuto)
	}
	r = newRig(t, "torus8x8-dor", []porttest.Config{{MAC: mac(0)}, {MAC: mac(1)}}, func(c *RunConfig) {
		c.Pacing.DilationAuto = true
		c.Background.Enabled = true
		c.Background.Traffic.Load = 0.2
	})
	time.Sleep(1500 * time.Millisecond)
	st := r.status(t)
	t.Logf("background 0.2 on torus8x8-dor: dilation %.1f, behind %v", st.Dilation, st.Pacer.Behind)
	if st.Dilation <= 1 || !st.DilationAuto {
		t.Fatalf("dilation %g under a load it cannot follow in real time", st.Dilation)
	}
	if st.Pacer.DilationRaises != 0 || st.Pacer.Dilation != st.Dilation {
		t.Errorf("overload %s raised the measured dilation %d times (pacer %g, status %g)", st.Overload, st.Pacer.DilationRaises, st.Pacer.Dilation, st.Dilation)
	}
}
