// Package gurumeditation writes oslo.reports' Guru Meditation Report for a
// Go service: what operators of the Python services get with
// `kill -USR2 <pid>` (every thread's stack, the package version, the
// configuration) when a conductor looks stuck. Here the threads are the
// goroutines, and the configuration is shown with its secrets redacted.
//
// The report goes to stderr, or with [oslo_reports] log_dir to a file
// <service>_gurumeditation_<YYYYmmddHHMMSS> in that directory; with
// [oslo_reports] file_event_handler it is triggered by a change of that
// file's modification time instead of the signal.
package gurumeditation

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Report describes the service being reported on.
type Report struct {
	Service string // the binary, e.g. magnum-conductor
	Version string
	// Config is the running configuration; its LogValue must redact
	// secrets (config.Config does).
	Config slog.LogValuer
}

const rule = "========================================================================"

func section(w *bufio.Writer, title string) {
	pad := (len(rule) - 8 - len(title)) / 2
	fmt.Fprintf(w, "%s\n====%s%s%s====\n%s\n", rule, strings.Repeat(" ", pad), title,
		strings.Repeat(" ", len(rule)-8-len(title)-pad), rule)
}

// Write writes the report: package, goroutines, process and configuration.
func (r Report) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	section(bw, "Guru Meditation")
	fmt.Fprintln(bw, strings.Repeat("|", len(rule)))
	fmt.Fprintln(bw)
	section(bw, "Package")
	fmt.Fprintf(bw, "product = %s (Go)\nvendor = OpenStack Foundation\nversion = %s\n", r.Service, r.Version)

	section(bw, "Threads")
	bw.Write(allStacks())
	fmt.Fprintln(bw)

	section(bw, "Process")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(bw, "pid = %d\ngo = %s\nGOMAXPROCS = %d\ngoroutines = %d\nheap_alloc = %d\nsys = %d\nnum_gc = %d\n",
		os.Getpid(), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumGoroutine(), ms.HeapAlloc, ms.Sys, ms.NumGC)

	section(bw, "Configuration")
	if r.Config != nil {
		writeValue(bw, "", r.Config.LogValue())
	}
	return bw.Flush()
}

// allStacks is every goroutine's stack, growing the buffer until it fits.
func allStacks() []byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// writeValue writes a configuration value: groups as "[group]" headings
// (oslo.reports shows the groups the same way), options as "  name = value".
func writeValue(w *bufio.Writer, name string, v slog.Value) {
	v = v.Resolve()
	if v.Kind() != slog.KindGroup {
		fmt.Fprintf(w, "  %s = %v\n", name, v.Any())
		return
	}
	if name != "" {
		fmt.Fprintf(w, "\n%s:\n", name)
	}
	for _, a := range v.Group() {
		writeValue(w, a.Key, a.Value)
	}
}

// Dump writes the report to a new file in dir, named as oslo.reports names
// it, or to stderr when dir is empty, and returns where it went.
func (r Report) Dump(dir string, stderr io.Writer, now time.Time) (string, error) {
	if dir == "" {
		return "stderr", r.Write(stderr)
	}
	path := filepath.Join(dir, r.Service+"_gurumeditation_"+now.UTC().Format("20060102150405"))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return path, fmt.Errorf("guru meditation report: %w", err)
	}
	werr := r.Write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return path, werr
}

// Options say what triggers the report and where it goes ([oslo_reports]).
type Options struct {
	LogDir string
	// FileEventHandler, when set, replaces SIGUSR2: the report is written
	// whenever the file's modification time moves forward, checked every
	// FileEventHandlerInterval.
	FileEventHandler         string
	FileEventHandlerInterval time.Duration
	Stderr                   io.Writer
}

// Serve writes a report on every SIGUSR2 (or file event) until ctx ends.
func (r Report) Serve(ctx context.Context, o Options, log *slog.Logger) {
	dump := func() {
		where, err := r.Dump(o.LogDir, o.Stderr, time.Now())
		if err != nil {
			log.Error("Guru Meditation Report failed", "error", err)
			return
		}
		log.Info("Guru Meditation Report written", "to", where)
	}
	if o.FileEventHandler != "" {
		r.watchFile(ctx, o, dump, log)
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	defer signal.Stop(sig)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			dump()
		}
	}
}

func (r Report) watchFile(ctx context.Context, o Options, dump func(), log *slog.Logger) {
	interval := o.FileEventHandlerInterval
	if interval <= 0 {
		interval = time.Second
	}
	last := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := os.Stat(o.FileEventHandler)
		if err != nil {
			if !warned {
				log.Warn("Guru Meditation Report cannot read its trigger file", "file_event_handler", o.FileEventHandler, "error", err)
				warned = true
			}
			continue
		}
		warned = false
		if st.ModTime().After(last) {
			last = st.ModTime()
			dump()
		}
	}
}
