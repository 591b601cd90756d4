// Package inputfile reads the whole-file inputs of fabemu (configuration
// files, host maps, experiment definitions, sweep specs, merged results,
// shard files) with a size cap, so that no input can make a command read
// without end or fill the memory:
//
//   - A regular file larger than the cap is refused from its size, before
//     anything is read.
//   - A FIFO (a pipe given as a path, /dev/stdin from a pipe) is read once,
//     as it streams, and refused as soon as it passes the cap.
//   - A character or block device (/dev/zero, /dev/urandom), a socket or
//     a directory is refused by name: none is a file of fixed content.
//
// Errors name the path and what was wrong. Trace and topology readers
// have their own record-by-record limits and do not use this package.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Caps for the kinds of input: configuration-like text files, and the
// result files of sweeps, which grow with the number of points.
const (
	ConfigLimit = 16 << 20
	ResultLimit = 1 << 30
)

// ReadFile reads path whole, refusing it as the package comment says
// when it is larger than limit bytes or not a file.
func ReadFile(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.Unwrap(err)}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

// Check refuses path as ReadFile would, without reading it: a file over
// limit or something that is not a file or a FIFO.
func Check(path string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return check(path, st, limit)
}

func check(path string, st fs.FileInfo, limit int64) error {
	m := st.Mode()
	switch {
	case m.IsDir():
		return fmt.Errorf("%s is a directory, not a file", path)
	case m&fs.ModeNamedPipe != 0:
		return nil // read once, bounded
	case m&fs.ModeCharDevice != 0:
		return fmt.Errorf("%s is a character device, not a file", path)
	case m&fs.ModeDevice != 0:
		return fmt.Errorf("%s is a block device, not a file", path)
	case m&fs.ModeSocket != 0:
		return fmt.Errorf("%s is a socket, not a file", path)
	case !m.IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case st.Size() > limit:
		return tooLarge(path, limit)
	}
	return nil
}

func tooLarge(path string, limit int64) error {
	if limit >= 1<<20 {
		return fmt.Errorf("%s is larger than %d MiB, more than an input of its kind can be", path, limit>>20)
	}
	return fmt.Errorf("%s is larger than %d bytes, more than an input of its kind can be", path, limit)
}
