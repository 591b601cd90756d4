package emu

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"
	"testing"
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

func TestCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(fakeStatus)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"fabemu_tap_frames_total", "fabemu_lag_seconds", "fabemu_conn_reordered_frames_total", "fabemu_fabric_latency_seconds"} {
		if !names[want] {
			t.Errorf("metric %s missing (have %v)", want, names)
		}
	}
}
