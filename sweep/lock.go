package sweep

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// shardLock is a shard file's exclusive lock: flock(2) on FILE.lock,
// beside the file. The kernel drops it when its holder exits, however it
// exits, so a lock file left by a killed run is stale by construction and
// the next run takes it over; while a run holds it, a second run of the
// same shard on the same directory refuses and names the holder (the
// lock file's text: pid, host and start time). On NFS, Linux maps flock
// to the server's byte-range locks.
type shardLock struct {
	f *os.File
	// prev is the holder text a dead run left (empty if none).
	prev string
}

// lockPath is the lock file of a shard file.
func lockPath(file string) string { return file + ".lock" }

// lockShard takes file's lock or says who holds it.
func lockShard(file string) (*shardLock, error) {
	f, err := os.OpenFile(lockPath(file), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// a status probe (lockHolder) holds a shared lock for an instant:
	// try again briefly before calling the lock held
	for try := 0; ; try++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || try == 50 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if holder == "" {
				holder = "another process"
			}
			return nil, fmt.Errorf("%s is being written by %s (lock %s): another run of this shard on this directory; wait for it or stop it",
				file, holder, lockPath(file))
		}
		return nil, fmt.Errorf("%s: lock: %w", lockPath(file), err)
	}
	l := &shardLock{f: f, prev: readHolder(f)}
	host, _ := os.Hostname()
	text := fmt.Sprintf("pid %d on host %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(text), 0)
		if err != nil {
			l.release()
			return nil, fmt.Errorf("%s: %w", lockPath(file), err)
		}
	}
	return l, nil
}

func readHolder(f *os.File) string {
	b := make([]byte, 256)
	n, _ := f.ReadAt(b, 0)
	return strings.TrimSpace(string(b[:n]))
}

// release empties the holder text (so that the next run can tell a clean
// release from a dead holder) and drops the lock (closing the file
// releases the flock).
func (l *shardLock) release() {
	if l != nil && l.f != nil {
		l.f.Truncate(0)
		l.f.Close()
		l.f = nil
	}
}

// lockHolder says whether a run holds file's lock now, and who.
func lockHolder(file string) (bool, string) {
	f, err := os.Open(lockPath(file))
	if err != nil {
		return false, ""
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK), readHolder(f)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, readHolder(f)
}
