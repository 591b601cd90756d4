package emu

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// API paths of the control API (HTTP over a unix socket, JSON bodies).
const (
	PathStatus      = "/v1/status"      // the whole Status
	PathHosts       = "/v1/hosts"       // Status.Hosts
	PathConnections = "/v1/connections" // Status.Connections
	PathBackground  = "/v1/background"  // GET the background load, POST {"load": X} to change it
)

// Controller is what the control API may change at runtime.
type Controller interface {
	// SetBackgroundLoad replaces the synthetic background load.
	SetBackgroundLoad(load float64) (BackgroundState, error)
}

// BackgroundRequest is the body of a POST to PathBackground.
type BackgroundRequest struct {
	// Load is the offered load of every host without a TAP, a fraction
	// of its link rate (0 = no background load).
	Load *float64 `json:"load"`
}

// maxBody bounds a request body.
const maxBody = 4096

// StatusFunc returns the current status.
type StatusFunc func() (*Status, error)

// maxQuery bounds the query string the API looks at.
const maxQuery = 1024

// APIError is the JSON body of an error response.
type APIError struct {
	Error string `json:"error"`
}

// NewAPIHandler serves the control API: GET (or HEAD) of PathStatus,
// PathHosts or PathConnections, with an optional query "pretty" (indent
// the JSON). Anything else is refused with a JSON error: 405 for another
// method, 404 for another path, 400 for another query, 503 when the
// emulator has stopped.
func NewAPIHandler(status StatusFunc) http.Handler { return NewControlHandler(status, nil) }

// NewControlHandler is NewAPIHandler with the write side: with ctl, a
// POST to PathBackground with a JSON BackgroundRequest changes the
// background load and answers the new BackgroundState (400 with a JSON
// error for a bad body or value); a GET of PathBackground answers the
// state in effect.
func NewControlHandler(status StatusFunc, ctl Controller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if ctl != nil && r.URL != nil && r.URL.Path == PathBackground {
			serveBackground(w, r, status, ctl)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeErr(w, http.StatusMethodNotAllowed, "method "+clip(r.Method)+" not allowed; use GET")
			return
		}
		path := ""
		if r.URL != nil {
			path = r.URL.Path
		}
		switch path {
		case PathStatus, PathHosts, PathConnections:
		default:
			writeErr(w, http.StatusNotFound, "unknown path "+clip(path)+"; try "+PathStatus+", "+PathHosts+" or "+PathConnections)
			return
		}
		pretty, err := parseQuery(r.URL)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		st, err := status()
		if err != nil {
			writeErr(w, http.StatusServiceUnavailable, "emulator not running: "+err.Error())
			return
		}
		var body any = st
		switch path {
		case PathHosts:
			body = st.Hosts
		case PathConnections:
			body = st.Connections
		}
		enc := json.NewEncoder(w)
		if pretty {
			enc.SetIndent("", "  ")
		}
		if r.Method == http.MethodHead {
			return
		}
		_ = enc.Encode(body)
	})
}

func serveBackground(w http.ResponseWriter, r *http.Request, status StatusFunc, ctl Controller) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		st, err := status()
		if err != nil {
			writeErr(w, http.StatusServiceUnavailable, "emulator not running: "+err.Error())
			return
		}
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(BackgroundState{Load: st.BackgroundLoad, Hosts: st.BackgroundHosts})
		}
	case http.MethodPost:
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody+1))
		dec.DisallowUnknownFields()
		var req BackgroundRequest
		if err := dec.Decode(&req); err != nil {
			writeErr(w, http.StatusBadRequest, "bad body: "+clip(err.Error())+`; want {"load": 0.05}`)
			return
		}
		if dec.More() {
			writeErr(w, http.StatusBadRequest, "bad body: more than one JSON value")
			return
		}
		if req.Load == nil {
			writeErr(w, http.StatusBadRequest, `bad body: no "load"; want {"load": 0.05}`)
			return
		}
		bs, err := ctl.SetBackgroundLoad(*req.Load)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(bs)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeErr(w, http.StatusMethodNotAllowed, "method "+clip(r.Method)+" not allowed on "+PathBackground+"; use GET or POST")
	}
}

// parseQuery accepts an empty query or "pretty" (optionally =1/true/0/false).
func parseQuery(u *url.URL) (pretty bool, err error) {
	if u == nil || u.RawQuery == "" {
		return false, nil
	}
	if len(u.RawQuery) > maxQuery {
		return false, errors.New("query string too long")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false, errors.New("bad query string: " + err.Error())
	}
	for k, vs := range q {
		if k != "pretty" {
			return false, errors.New("unknown query parameter " + clip(k) + "; the only one is pretty")
		}
		for _, v := range vs {
			switch v {
			case "", "1", "true":
				pretty = true
			case "0", "false":
			default:
				return false, errors.New("pretty=" + clip(v) + ": want 1, true, 0 or false")
			}
		}
	}
	return pretty, nil
}

// clip shortens user input echoed in errors.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // errors are read by people: keep < and > as they are
	_ = enc.Encode(APIError{Error: msg})
}
