package oslo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// queueManager names reply and fanout queues "<host>:<process>:<n>" when
// use_queue_manager is set, as oslo's QManager does: n counts up per host
// and process name, across the processes of one process group, and starts
// again at 1 when the group is restarted, so that a restarted service
// reuses its queues instead of leaving new ones behind.
//
// The counter is kept where oslo keeps it, /dev/shm/<host>_<process>_qmanager,
// as "<process group>:<n>:<group start time>", under an exclusive flock;
// where /dev/shm cannot be used, it is kept in this process.
type queueManager struct {
	host, process string
	file          string
	pg            int
	start         int64

	mu    sync.Mutex
	local int
}

func newQueueManager(host, process string) *queueManager {
	if host == "" {
		host, _ = os.Hostname()
	}
	if process == "" {
		process = filepath.Base(os.Args[0])
	}
	q := &queueManager{host: host, process: process, pg: syscall.Getpgrp()}
	q.file = filepath.Join("/dev/shm", fmt.Sprintf("%s_%s_qmanager", host, process))
	id := q.pg
	if id == 0 {
		id = os.Getpid()
	}
	q.start = procStartTime(id)
	return q
}

// procStartTime is field 22 of /proc/<pid>/stat (start time in clock
// ticks since boot), or 0.
func procStartTime(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count after its ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n
}

// next returns the next name, "<host>:<process>:<n>".
func (q *queueManager) next() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, err := q.nextShared()
	if err != nil {
		q.local++
		n = q.local
	}
	return fmt.Sprintf("%s:%s:%d", q.host, q.process, n)
}

func (q *queueManager) nextShared() (int, error) {
	f, err := os.OpenFile(q.file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	// Its error is not checked: the counter is in the file once WriteAt
	// returns, and the lock is released before.
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, err
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	buf := make([]byte, 128)
	k, _ := f.ReadAt(buf, 0)
	counter := 0
	if parts := strings.Split(strings.TrimSpace(string(buf[:k])), ":"); len(parts) == 3 {
		pg, err1 := strconv.Atoi(parts[0])
		c, err2 := strconv.Atoi(parts[1])
		st, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil && pg == q.pg && st == q.start {
			counter = c
		}
	}
	counter++
	line := fmt.Sprintf("%d:%d:%d", q.pg, counter, q.start)
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	if _, err := f.WriteAt([]byte(line), 0); err != nil {
		return 0, err
	}
	return counter, nil
}
