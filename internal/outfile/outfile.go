// Package outfile owns how fabemu writes an output file (JSON summaries,
// time series, plots, converted traces, profiles), so that no output fails
// silently and no failed write destroys a previous good file:
//
//   - A regular file (or a new one) is written to a temporary file in the
//     same directory, which is flushed, synced and renamed over the target
//     only if every write succeeded; on failure the temporary file is
//     removed and the target is untouched. The file gets mode 0644. A
//     symbolic link to a regular file keeps the link and replaces its
//     target.
//   - "-" and /dev/stdout mean standard output, /dev/stderr standard
//     error; other special files (character devices such as /dev/null,
//     FIFOs, sockets) are opened and written directly. Their write and
//     close errors are still reported.
//   - A directory is refused ("PATH is a directory").
//
// Every error names the target path, never the temporary file.
// [Check] refuses, before any work is done, an output that cannot be
// written or that is one of the command's inputs.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Stdout is the path that means standard output.
const Stdout = "-"

// File is an output being written. Write to it, then Commit to make it
// appear (or Abort to discard it). The first write error is sticky.
// A File is not safe for concurrent use.
type File struct {
	path   string // the target, as the caller named it
	target string // where a temporary file is renamed to (symlinks resolved)
	f      *os.File
	w      *bufio.Writer
	tmp    bool // f is a temporary file to rename over target
	err    error
	done   bool
}

// Create opens path for writing as the package comment describes.
// stdout is where "-" and /dev/stdout go; nil means the process's
// standard output.
func Create(path string, stdout io.Writer) (*File, error) {
	switch path {
	case "":
		return nil, errors.New("empty output path")
	case Stdout, "/dev/stdout":
		if stdout == nil {
			stdout = os.Stdout
		}
		return &File{path: path, w: bufio.NewWriterSize(stdout, 64<<10)}, nil
	case "/dev/stderr":
		return &File{path: path, w: bufio.NewWriterSize(os.Stderr, 64<<10)}, nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("%s is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		// A device, FIFO or socket: renaming over it would replace it
		// with a regular file.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, pathError("open", path, err)
		}
		return &File{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, pathError("create", path, err)
	}
	target := path
	if err == nil {
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, pathError("create", path, err)
	}
	temps.add(f.Name())
	return &File{path: path, target: target, f: f, w: bufio.NewWriterSize(f, 64<<10), tmp: true}, nil
}

// Write buffers p. An error names the target path and is returned by every
// later Write and by Commit.
func (o *File) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	if o.done {
		return 0, fmt.Errorf("write %s: file already committed or aborted", o.path)
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = pathError("write", o.path, err)
	}
	return n, o.err
}

// WriteString is Write for a string.
func (o *File) WriteString(s string) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	return o.Write([]byte(s))
}

// Flush writes what is buffered through to the file (not syncing it): a
// long-running writer calls it to find a failing file early. An error is
// sticky, as for Write.
func (o *File) Flush() error {
	if o.err != nil {
		return o.err
	}
	if o.done {
		return fmt.Errorf("write %s: file already committed or aborted", o.path)
	}
	if err := o.w.Flush(); err != nil {
		o.err = pathError("write", o.path, err)
	}
	return o.err
}

// Commit flushes what was written. For a temporary file it then syncs,
// closes and renames it over the target; on any error (including an
// earlier write error) the temporary file is removed, the target is
// untouched and the error names the target. Commit after Commit or Abort
// returns the first result again.
func (o *File) Commit() error {
	if o.done {
		return o.err
	}
	o.done = true
	err := o.err
	if err == nil {
		if ferr := o.w.Flush(); ferr != nil {
			err = pathError("write", o.path, ferr)
		}
	}
	if o.f == nil { // standard output or error: not ours to close
		o.err = err
		return err
	}
	if err == nil && o.tmp {
		if e := o.f.Chmod(0o644); e != nil {
			err = pathError("write", o.path, e)
		} else if e := o.f.Sync(); e != nil {
			err = pathError("write", o.path, e)
		}
	}
	if e := o.f.Close(); e != nil && err == nil {
		err = pathError("close", o.path, e)
	}
	if o.tmp {
		if err == nil {
			if e := os.Rename(o.f.Name(), o.target); e != nil {
				err = pathError("write", o.path, e)
			}
		}
		if err != nil {
			os.Remove(o.f.Name())
		}
		temps.remove(o.f.Name())
	}
	o.err = err
	return err
}

// Abort discards the output: a temporary file is closed and removed and
// the target left untouched; a special file is closed. Abort after Commit
// does nothing.
func (o *File) Abort() {
	if o.done {
		return
	}
	o.done = true
	if o.err == nil {
		o.err = fmt.Errorf("write %s: aborted", o.path)
	}
	if o.f != nil {
		o.f.Close()
		if o.tmp {
			os.Remove(o.f.Name())
			temps.remove(o.f.Name())
		}
	}
}

// Write writes path in one go: write is called with the output, which
// is committed if write and every file operation succeed and discarded
// otherwise. stdout is as for [Create].
func Write(path string, stdout io.Writer, write func(io.Writer) error) error {
	o, err := Create(path, stdout)
	if err != nil {
		return err
	}
	if err := write(o); err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

// Check refuses an output before any work is done: a directory, a path
// whose directory does not exist, a file that is one of inputs (the same
// file under any name) or a file inside an input directory (which the
// next run would read as input). "" (no output), "-" and standard
// streams are always fine.
func Check(path string, inputs ...string) error {
	switch path {
	case "", Stdout, "/dev/stdout", "/dev/stderr":
		return nil
	}
	dir := filepath.Dir(path)
	dst, derr := os.Stat(dir)
	if derr == nil {
		for _, in := range inputs {
			if ist, err := os.Stat(in); in != "" && err == nil && ist.IsDir() && os.SameFile(dst, ist) {
				return fmt.Errorf("%s is inside the input directory %s: write the output elsewhere", path, in)
			}
		}
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		switch {
		case derr != nil:
			return pathError("create", path, derr)
		case !dst.IsDir():
			return fmt.Errorf("create %s: %s is not a directory", path, dir)
		}
		// The file is written as a temporary file in dir and renamed:
		// dir must be writable, which is better found now than after
		// the run.
		if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
			return pathError("create", path, err)
		}
		return nil
	}
	if err == nil && st.Mode().IsRegular() {
		if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
			return pathError("create", path, err)
		}
	}
	if err != nil {
		return pathError("create", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	for _, in := range inputs {
		if in == "" || in == Stdout {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			if in == path {
				return fmt.Errorf("%s is also an input: write the output to another file", path)
			}
			return fmt.Errorf("%s is the input %s: write the output to another file", path, in)
		}
	}
	return nil
}

// Same reports whether paths a and b name one file: the same existing
// file under any name (links included), or, for files not yet created,
// the same path once the symbolic links of its directory are resolved.
// "-", /dev/stdout and /dev/stderr name standard output and error.
func Same(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	std := func(p string) string {
		switch p {
		case Stdout, "/dev/stdout":
			return "stdout"
		case "/dev/stderr":
			return "stderr"
		}
		return ""
	}
	if sa, sb := std(a), std(b); sa != "" || sb != "" {
		return sa == sb
	}
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
		return false
	}
	return resolved(a) == resolved(b)
}

// resolved is path made absolute with its symbolic links resolved, a
// dangling link to its target's path (the file itself need not exist).
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	for range 40 { // the kernel's limit of links on one path
		fi, err := os.Lstat(abs)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(abs)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(abs), t)
		}
		abs = filepath.Clean(t)
	}
	dir, base := filepath.Split(abs)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(d, base)
	}
	return abs
}

// pathError names path (the target, not a temporary file) with the
// underlying cause of err.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	var errno syscall.Errno
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	case errors.As(err, &errno):
		err = errno
	}
	if path == Stdout {
		path = "standard output"
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
