package oslolog

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// logFile is oslo.log's file output: Python's WatchedFileHandler (the file
// is reopened when the path no longer names the open file, as after
// logrotate moved it), or with maxBytes its RotatingFileHandler (before a
// write that would pass maxBytes, path.N-1 becomes path.N ... path becomes
// path.1, keeping backups files; no rollover without backups, as in
// Python), or with timed its TimedRotatingFileHandler. The file is opened
// for appending, so that logrotate's copytruncate works too.
type logFile struct {
	path     string
	maxBytes int64
	backups  int
	timed    *timedRotation // log_rotation_type = interval

	mu       sync.Mutex
	f        *os.File
	dev, ino uint64
	size     int64
}

func openLogFile(path string, maxBytes int64, backups int) (*logFile, error) {
	if backups <= 0 {
		maxBytes = 0
	}
	lf := &logFile{path: path, maxBytes: maxBytes, backups: backups}
	if err := lf.open(); err != nil {
		return nil, err
	}
	return lf, nil
}

// open (re)opens the path; mu is held or lf is not shared yet.
func (lf *logFile) open() error {
	f, err := os.OpenFile(lf.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	if lf.f != nil {
		_ = lf.f.Close()
	}
	lf.f, lf.size = f, fi.Size()
	lf.dev, lf.ino = fileID(fi)
	return nil
}

func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino
	}
	return 0, 0
}

func (lf *logFile) reopen() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.open()
}

// Write writes one log line.
func (lf *logFile) Write(p []byte) (int, error) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return 0, os.ErrClosed
	}
	if lf.timed != nil {
		if lf.timed.due() {
			if err := lf.timed.rollover(lf.path); err != nil {
				return 0, err
			}
			if err := lf.open(); err != nil {
				return 0, err
			}
		}
	} else if lf.maxBytes > 0 {
		if lf.size > 0 && lf.size+int64(len(p)) > lf.maxBytes {
			if err := lf.rotate(); err != nil {
				return 0, err
			}
		}
	} else if fi, err := os.Stat(lf.path); err != nil || !sameFile(fi, lf.dev, lf.ino) {
		// Moved or removed: a new file under the path.
		if err := lf.open(); err != nil {
			return 0, err
		}
	}
	n, err := lf.f.Write(p)
	lf.size += int64(n)
	return n, err
}

func sameFile(fi os.FileInfo, dev, ino uint64) bool {
	d, i := fileID(fi)
	return d == dev && i == ino
}

// rotate shifts the backups (RotatingFileHandler.doRollover); backups is
// positive (Python never rolls over without backups).
func (lf *logFile) rotate() error {
	for i := lf.backups - 1; i > 0; i-- {
		src := lf.path + "." + strconv.Itoa(i)
		if _, err := os.Stat(src); err == nil {
			_ = os.Rename(src, lf.path+"."+strconv.Itoa(i+1))
		}
	}
	if err := os.Rename(lf.path, lf.path+".1"); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("log file rotation: %w", err)
	}
	return lf.open()
}

// Close closes the file.
func (lf *logFile) Close() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	return err
}
