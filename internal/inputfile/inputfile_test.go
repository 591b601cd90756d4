package inputfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(small, 3); err != nil || string(b) != "abc" {
		t.Errorf("ReadFile(small) = %q, %v", b, err)
	}
	if _, err := ReadFile(small, 2); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("over the cap: %v", err)
	}
	for _, p := range []string{"/dev/zero", "/dev/urandom", dir} {
		if _, err := ReadFile(p, 1<<20); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadFile(%s) = %v, want a refusal naming it", p, err)
		}
	}
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link, 1<<20); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("a link to /dev/zero: %v", err)
	}

	// A FIFO is read once as it streams, and refused past the cap.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write([]byte("hello"))
		f.Close()
	}()
	if b, err := ReadFile(fifo, 16); err != nil || string(b) != "hello" {
		t.Errorf("FIFO: %q, %v", b, err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(make([]byte, 100))
		f.Close()
	}()
	if _, err := ReadFile(fifo, 16); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("FIFO over the cap: %v", err)
	}
}
