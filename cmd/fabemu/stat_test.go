package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/frameport/porttest"
	"github.com/fabemu/fabemu/fabric/des"
)

// statDaemon serves the control API of an emulator on in-memory ports.
func statDaemon(t *testing.T) string {
	t.Helper()
	c := emu.DefaultRunConfig()
	c.Model.Preset = "tap-pair-10g"
	c.API.Socket = ""
	var fps []frameport.Port
	for _, name := range []string{"w0", "w1"} {
		c.TAPs = append(c.TAPs, emu.TAPConfig{Name: name})
		p, _ := porttest.New(porttest.Config{Name: name})
		fps = append(fps, p)
	}
	e, err := emu.NewWithPorts(c, fps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: emu.NewAPIHandler(e.Status), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = e.Close()
	})
	return sock
}

// fabemu stat --watch redraws the tables every --interval and ends
// cleanly (exit 0) when interrupted; --json --watch prints one status per
// line; a too short interval is refused.
func TestStatWatch(t *testing.T) {
	sock := statDaemon(t)
	watch := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRoot()
		root.SetOut(&out)
		root.SetArgs(append([]string{"stat", "--socket", sock, "--watch", "--interval", "100ms"}, args...))
		ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
		defer cancel()
		err := root.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := watch()
	if err != nil {
		t.Fatalf("stat --watch: %v", err)
	}
	// At most one redraw per interval (plus the first); a loaded machine
	// may manage fewer, so the lower bound is one, not a rate.
	if n := strings.Count(out, "\x1b[H\x1b[2J"); n < 1 || n > 6 {
		t.Errorf("%d redraws in 450 ms at 100 ms; want 1 to 6", n)
	}
	if !strings.Contains(out, "Current rates over the last") || !strings.Contains(out, "valid 100.0% of the time") {
		t.Errorf("no current rates or validity in:\n%s", out)
	}
	out, err = watch("--json")
	if err != nil {
		t.Fatalf("stat --watch --json: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 1 || len(lines) > 6 {
		t.Fatalf("%d JSON lines", len(lines))
	}
	for _, l := range lines {
		var st emu.Status
		if err := json.Unmarshal([]byte(l), &st); err != nil || st.Schema != emu.StatusSchema {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	if _, err := run(t, "stat", "--socket", sock, "--watch", "--interval", "10ms"); err == nil || !strings.Contains(err.Error(), "at least 100ms") {
		t.Errorf("--interval 10ms: %v", err)
	}
}

// fabemu stat refuses a status of another schema (before, {"schema":
// "other/v9"} printed a table of zeros), for the table and --json alike.
func TestStatChecksSchema(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"schema":"other/v9"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, args := range [][]string{{"stat", "--socket", sock}, {"stat", "--socket", sock, "--json"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), `status schema "other/v9"`) {
			t.Errorf("%v: %v, want the schema refused", args, err)
		}
	}
}

// stat details the latest invalid intervals stage by stage and marks the
// slowest; intervals without stage times (older daemons) are left out.
func TestStatLateStages(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recent []des.IntervalReport
	for i := range 7 {
		recent = append(recent, des.IntervalReport{Start: t0.Add(time.Duration(i) * time.Second), MaxLag: 2 * time.Millisecond, Cause: des.CausePreempted,
			Stages:  []des.StageTime{{Stage: emu.StageReadToSubmit, Max: 12 * time.Microsecond}, {Stage: emu.StageModelLate, Max: 2100 * time.Microsecond}},
			Slowest: emu.StageModelLate})
	}
	recent = append(recent, des.IntervalReport{Start: t0.Add(time.Minute), MaxLag: 5 * time.Millisecond, Cause: des.CauseLate})
	var b bytes.Buffer
	writeLateStages(&b, recent)
	out := b.String()
	if n := strings.Count(out, "late interval at"); n != 4 {
		t.Errorf("%d intervals detailed, want 4 (the latest 5, one without stages):\n%s", n, out)
	}
	if !strings.Contains(out, "late interval at 03:04:08 (preempted, excess lag 2,000 us), stage maxima us: read_to_submit 12, *model_late 2,100") {
		t.Errorf("stat output lacks the stage line:\n%s", out)
	}
}

// stat says which qemu-socket ports have a VM attached (frames for one
// without are refused as no_peer) and says nothing for TAPs.
func TestStatPeers(t *testing.T) {
	var b bytes.Buffer
	writePeers(&b, []emu.HostStatus{{TAP: "tap0"}})
	if b.Len() != 0 {
		t.Errorf("a TAP-only daemon printed %q", b.String())
	}
	writePeers(&b, []emu.HostStatus{{TAP: "tap0"}, {TAP: "vma", Peer: &emu.PeerStatus{Attached: true, Attachments: 2, Waited: 1}}, {TAP: "vmb", Peer: &emu.PeerStatus{}}})
	if want := "VM ports: vma VM attached (2 attachments, 1 waited); vmb no VM attached (0 attachments, 0 waited)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
