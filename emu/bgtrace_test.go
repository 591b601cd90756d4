package emu

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeMSRTrace writes n MSR Cambridge records 1 ms apart, gzipped,
// alternating reads and writes over two devices.
func writeMSRTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	const t0 = 128166372000000000 // FILETIME ticks (100 ns) in 2007
	for i := range n {
		op := "Read"
		if i%2 == 1 {
			op = "Write"
		}
		fmt.Fprintf(&b, "%d,bg,%d,%s,%d,%d,100\n", t0+int64(i)*10000, i%2, op, int64(i)*4096, 4096*(1+i%3))
	}
	path := filepath.Join(t.TempDir(), "bg.csv.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBackgroundTrace replays a small storage trace on the hosts without a
// port while frames flow between two ports: the frames arrive unchanged
// and every request of the trace completes.
func TestBackgroundTrace(t *testing.T) {
	const records = 60
	trace := writeMSRTrace(t, records)
	r := newRig(t, "tap-square-10g", ports(2), func(c *RunConfig) {
		c.Background.Trace = trace
		c.Background.Format = "msr"
		c.Background.Compression = 2
	})
	rng := rand.New(rand.NewPCG(3, 4))
	const frames = 40
	var sent [][]byte
	for i := range frames {
		b := mkFrame(mac(1), mac(0), etherTest, uint32(i), 64+i*30, rng)
		sent = append(sent, b)
		r.inject(t, 0, b)
	}
	for i := range frames {
		if got := r.recv(t, 1); !bytes.Equal(got, sent[i]) {
			t.Fatalf("frame %d differs from the frame sent (seq %d)", i, seqOf(got))
		}
	}
	st := r.await(t, "the background trace to complete", func(st *Status) bool {
		p := st.BackgroundTrace
		return p != nil && p.AllIssued && p.Completed == records
	})
	p := st.BackgroundTrace
	if p.Issued != records || p.Outstanding != 0 || !p.Finished || p.Error != "" {
		t.Errorf("background trace: %+v", *p)
	}
	if st.BackgroundHosts != 6 {
		t.Errorf("background hosts %d, want 6", st.BackgroundHosts)
	}
	if c := conn(st, r.names[0], r.names[1]); c.Frames != frames {
		t.Errorf("mem0>mem1: %d frames, want %d", c.Frames, frames)
	}
}

// TestBackgroundTraceErrors: a missing trace and a bad compression are
// refused with the key named.
func TestBackgroundTraceErrors(t *testing.T) {
	c := DefaultRunConfig()
	c.TAPs = []TAPConfig{{Name: "a"}}
	c.Background.Trace = "x"
	c.Background.Compression = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "background.compression") {
		t.Errorf("compression 0: %v", err)
	}
	c.Background.Compression = 1
	c.Background.Trace = filepath.Join(t.TempDir(), "missing.csv")
	c.API.Socket = ""
	c.Metrics.Enabled = false
	if _, err := newEmulator(c, nil); err == nil || !strings.Contains(err.Error(), "background.trace") {
		t.Errorf("missing trace: %v", err)
	}
}
