package tracefmt_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/tracefmt"
)

// TestCreateFailedWriteKeepsPreviousFile: a conversion that fails part way
// (a record the format cannot hold, or Abort for a reading error) leaves
// the previous trace at the path untouched and no temporary file behind.
func TestCreateFailedWriteKeepsPreviousFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"t.srt", "t.srt.gz"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("previous"), 0o644); err != nil {
			t.Fatal(err)
		}
		rec := tracefmt.Record{Arrival: time.Millisecond, Size: 4096, Op: tracefmt.OpRead}
		// A record failure: SRT cannot hold device 1<<20.
		w, err := tracefmt.Create(path, tracefmt.SRT)
		if err != nil {
			t.Fatal(err)
		}
		for range 10_000 { // more than one buffer's worth
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		bad := rec
		bad.Device = 1 << 20
		if err := w.Write(bad); err == nil {
			t.Fatal("SRT accepted device 1<<20")
		}
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "device") {
			t.Fatalf("Close after a failed Write: %v", err)
		}
		// Abort, as for a reading error.
		w, err = tracefmt.Create(path, tracefmt.SRT)
		if err != nil {
			t.Fatal(err)
		}
		for range 10_000 {
			w.Write(rec)
		}
		w.Abort()
		if err := w.Close(); err != nil {
			t.Fatalf("Close after Abort: %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "previous" {
			t.Fatalf("%s: previous file replaced (%d bytes)", name, len(b))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestCreateWriteErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := tracefmt.Create(dir, tracefmt.CSV); err == nil || err.Error() != dir+" is a directory" {
		t.Errorf("Create(directory) = %v", err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	for _, n := range []int{1, 100_000} { // fails at Close, at a Write
		w, err := tracefmt.Create("/dev/full", tracefmt.CSV)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if err = w.Write(tracefmt.Record{Size: 512}); err != nil {
				break
			}
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil || err.Error() != "write /dev/full: no space left on device" {
			t.Errorf("%d records to /dev/full: err = %v", n, err)
		}
	}
}
