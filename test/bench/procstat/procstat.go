// Package procstat reads what the benchmark reports about a server process
// and its descendants from /proc: CPU time (utime+stime of /proc/<pid>/stat)
// and memory (Rss and Pss of /proc/<pid>/smaps_rollup), and samples the
// peak while a load runs.
package procstat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is sysconf(_SC_CLK_TCK), 100 on every Linux the benchmark runs
// on (the kernel's USER_HZ).
const clockTicks = 100

// Tree returns pid and every live descendant of it.
func Tree(pid int) []int {
	parents := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(p)
		if err != nil {
			continue
		}
		parents[st.ppid] = append(parents[st.ppid], p)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, parents[out[i]]...)
	}
	return out
}

type stat struct {
	ppid         int
	utime, stime uint64
}

// readStat parses /proc/<pid>/stat (the command name may hold spaces and
// parentheses, so fields are counted from the last ')').
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("procstat: bad stat for %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is state (field 3); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return stat{}, fmt.Errorf("procstat: short stat for %d", pid)
	}
	var st stat
	st.ppid, _ = strconv.Atoi(f[1])
	st.utime, _ = strconv.ParseUint(f[11], 10, 64)
	st.stime, _ = strconv.ParseUint(f[12], 10, 64)
	return st, nil
}

// CPU returns the user+system CPU seconds of pid's tree.
func CPU(pid int) float64 {
	var ticks uint64
	for _, p := range Tree(pid) {
		if st, err := readStat(p); err == nil {
			ticks += st.utime + st.stime
		}
	}
	return float64(ticks) / clockTicks
}

// Mem is the memory of a process tree in bytes.
type Mem struct {
	RSS int64 `json:"rss_bytes"`
	PSS int64 `json:"pss_bytes"`
	// Anon is the anonymous part of RSS (heap, stacks); the rest is
	// mapped files, mostly the executable and shared libraries.
	Anon  int64 `json:"anon_bytes"`
	Procs int   `json:"processes"`
}

// Memory sums Rss and Pss of smaps_rollup over pid's tree.
func Memory(pid int) (Mem, error) { return memoryOf(pid, Tree(pid)) }

func memoryOf(pid int, tree []int) (Mem, error) {
	var m Mem
	for _, p := range tree {
		rss, pss, anon, err := rollup(p)
		if err != nil {
			if p == pid {
				return m, err
			}
			continue // a child that exited meanwhile
		}
		m.RSS += rss
		m.PSS += pss
		m.Anon += anon
		m.Procs++
	}
	return m, nil
}

func rollup(pid int) (rss, pss, anon int64, err error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) < 1 {
			continue
		}
		n, _ := strconv.ParseInt(fs[0], 10, 64)
		switch k {
		case "Rss":
			rss = n * 1024
		case "Pss":
			pss = n * 1024
		case "Anonymous":
			anon = n * 1024
		}
	}
	return rss, pss, anon, sc.Err()
}

// Sampler records the peak memory of a tree while it runs.
type Sampler struct {
	pid     int
	tree    []int
	scanned time.Time
	mu      sync.Mutex
	peak    Mem
	errs    int
	cancel  context.CancelFunc
	done    chan struct{}
}

// StartSampler samples pid's tree every interval until Stop.
func StartSampler(ctx context.Context, pid int, interval time.Duration) *Sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{pid: pid, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// sample reads the memory of the tree found by the last scan of /proc; the
// scan (every /proc/<pid>/stat) is repeated only every 10 s, so that
// sampling steals little CPU from the servers being measured.
func (s *Sampler) sample() {
	if s.tree == nil || time.Since(s.scanned) > 10*time.Second {
		s.tree, s.scanned = Tree(s.pid), time.Now()
	}
	m, err := memoryOf(s.pid, s.tree)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs++
		return
	}
	if m.RSS > s.peak.RSS {
		s.peak.RSS = m.RSS
	}
	if m.PSS > s.peak.PSS {
		s.peak.PSS = m.PSS
	}
	if m.Anon > s.peak.Anon {
		s.peak.Anon = m.Anon
	}
	if m.Procs > s.peak.Procs {
		s.peak.Procs = m.Procs
	}
}

// Stop ends sampling (after one last sample) and returns the peak and the
// number of failed samples.
func (s *Sampler) Stop() (Mem, int) {
	s.cancel()
	<-s.done
	s.tree = nil
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.errs
}
