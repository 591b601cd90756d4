package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Stdout is the path that means "standard output" to [WriteFile],
// [WriteJSON], [WriteJSONLines] and [CreateSeries].
const Stdout = "-"

// WriteFile calls write with a writer for path and makes the result
// appear all at once: the data goes to a temporary file in the same
// directory, which is synced and renamed over path only if write and every
// file operation succeeded. On failure the temporary file is removed and
// an existing file at path is left untouched. The file gets mode 0644.
//
// Path "-" ([Stdout]) writes to standard output instead.
func WriteFile(path string, write func(io.Writer) error) error {
	return writeFileTo(path, os.Stdout, write)
}

// writeFileTo is WriteFile with standard output as a parameter, so tests
// can capture it.
func writeFileTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == Stdout {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("report: write to standard output: %w", err)
		}
		return nil
	}
	af, err := createAtomic(path)
	if err != nil {
		return err
	}
	if err := write(af.w); err != nil {
		af.abort()
		return err
	}
	return af.commit()
}

// atomicFile is a temporary file that replaces its target on commit.
type atomicFile struct {
	path string // final name
	f    *os.File
	w    *bufio.Writer
}

func createAtomic(path string) (*atomicFile, error) {
	if path == "" {
		return nil, fmt.Errorf("report: empty output path")
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("report: create %s: %w", path, err)
	}
	return &atomicFile{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// commit flushes, syncs and closes the temporary file and renames it to
// the target path. On any error the temporary file is removed.
func (a *atomicFile) commit() error {
	tmp := a.f.Name()
	err := a.w.Flush()
	if err == nil {
		err = a.f.Chmod(0o644)
	}
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: write %s: %w", a.path, err)
	}
	return nil
}

// abort closes and removes the temporary file; the target is untouched.
func (a *atomicFile) abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}
