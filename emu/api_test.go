package emu

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

func fakeStatus() (*Status, error) {
	return &Status{Schema: StatusSchema, Hosts: []HostStatus{{TAP: "t0"}},
		Connections: []ConnStatus{{Src: "t0", Dst: "t1", Frames: 3}}}, nil
}

func TestAPIHandler(t *testing.T) {
	h := NewAPIHandler(fakeStatus)
	stopped := NewAPIHandler(func() (*Status, error) { return nil, errors.New("stopped") })
	for _, tc := range []struct {
		h      http.Handler
		method string
		target string
		code   int
	}{
		{h, "GET", PathStatus, 200},
		{h, "GET", PathHosts, 200},
		{h, "GET", PathConnections + "?pretty", 200},
		{h, "HEAD", PathStatus, 200},
		{h, "GET", PathStatus + "?pretty=false", 200},
		{h, "POST", PathStatus, 405},
		{h, "DELETE", PathHosts, 405},
		{h, "GET", "/", 404},
		{h, "GET", "/v1/status/", 404},
		{h, "GET", PathStatus + "?x=1", 400},
		{h, "GET", PathStatus + "?pretty=maybe", 400},
		{h, "GET", PathStatus + "?%zz", 400},
		{stopped, "GET", PathStatus, 503},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(tc.method, "http://fabemu"+tc.target, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d (%s)", tc.method, tc.target, rec.Code, tc.code, rec.Body)
			continue
		}
		if tc.method == "HEAD" {
			continue
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Errorf("%s %s: body is not JSON: %v", tc.method, tc.target, err)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://fabemu"+PathConnections, nil))
	var cs []ConnStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &cs); err != nil || len(cs) != 1 || cs[0].Frames != 3 {
		t.Errorf("connections: %v %+v", err, cs)
	}
}

// FuzzAPIRequest: arbitrary methods, paths and query strings never panic
// and always get a JSON answer with a status code.
func FuzzAPIRequest(f *testing.F) {
	f.Add("GET", PathStatus, "")
	f.Add("GET", PathHosts, "pretty=1")
	f.Add("POST", "/../../etc", "a=%zz&&;")
	f.Add("G\x00T", "/v1/\xff", "pretty=\xff")
	h := NewAPIHandler(fakeStatus)
	f.Fuzz(func(t *testing.T, method, path, query string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if method != "HEAD" && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q %q %q: body not JSON: %q", method, path, query, rec.Body)
		}
	})
}

// histStatus is a status whose distributions have samples: lag from 3 µs
// to 2 s (beyond the last bound), fabric latency in ps.
func histStatus() (*Status, error) {
	st, _ := fakeStatus()
	var lag, lat hist.Hist
	for _, v := range []int64{3e3, 40e3, 40e3, 700e3, 2e6, 2e9} {
		lag.Add(v)
	}
	lat.Add(240e3)
	st.Pacer.LagBuckets = lag.Buckets(des.LagBounds)
	st.Pacer.ExcessLagBuckets = lag.Buckets(des.LagBounds)
	st.Fabric.LatencyBuckets = lat.Buckets(LatencyBounds)
	st.Pacer.InvalidByCause = map[string]uint64{des.CauseBehind: 2}
	st.Hosts = append(st.Hosts, HostStatus{TAP: "vm0", Peer: &PeerStatus{Attached: true, Attachments: 2}})
	return st, nil
}

// The collector's metrics pass Prometheus' own linter (the rules of
// promtool check metrics) and the four distributions are histograms with
// cumulative buckets in seconds, not gauges carrying quantile labels.
func TestCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(histStatus)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		switch mf.GetName() {
		case "fabemu_lag_seconds", "fabemu_wake_lag_seconds", "fabemu_excess_lag_seconds", "fabemu_fabric_latency_seconds":
			if mf.GetType() != dto.MetricType_HISTOGRAM {
				t.Errorf("%s is a %v, want a histogram", mf.GetName(), mf.GetType())
				continue
			}
			h := mf.GetMetric()[0].GetHistogram()
			var prev uint64
			for _, b := range h.GetBucket() {
				if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > h.GetSampleCount() {
					t.Errorf("%s: bucket le=%g count %d after %d (samples %d)", mf.GetName(), b.GetUpperBound(), b.GetCumulativeCount(), prev, h.GetSampleCount())
				}
				prev = b.GetCumulativeCount()
			}
			if mf.GetName() == "fabemu_lag_seconds" {
				// 3 µs, 40 µs twice and 0.7 ms are at most 1 ms; 2 ms at
				// most 2.5 ms; 2 s beyond every bound (only in +Inf).
				for le, want := range map[float64]uint64{1e-3: 4, 2.5e-3: 5, 1: 5} {
					for _, b := range h.GetBucket() {
						if math.Abs(b.GetUpperBound()-le) < le*1e-9 && b.GetCumulativeCount() != want {
							t.Errorf("lag le=%g: %d, want %d", le, b.GetCumulativeCount(), want)
						}
					}
				}
				if h.GetSampleCount() != 6 || math.Abs(h.GetSampleSum()-2.002783) > 1e-6 {
					t.Errorf("lag: %d samples sum %g s, want 6 and 2.002783", h.GetSampleCount(), h.GetSampleSum())
				}
			}
			if mf.GetName() == "fabemu_fabric_latency_seconds" && h.GetBucket()[1].GetCumulativeCount() != 1 {
				t.Errorf("fabric latency 240 ns not at most 250 ns: %v", h.GetBucket()[:3])
			}
		}
	}
	for _, want := range []string{"fabemu_tap_frames_total", "fabemu_lag_seconds", "fabemu_conn_reordered_frames_total", "fabemu_fabric_latency_seconds", "fabemu_realtime_invalid_intervals_by_cause_total", "fabemu_vm_attached", "fabemu_vm_attachments_total"} {
		if !names[want] {
			t.Errorf("metric %s missing (have %v)", want, names)
		}
	}
}
