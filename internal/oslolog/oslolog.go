// Package oslolog builds a process's logger from oslo.log's options, so that
// the command lines and magnum.conf files written for the Python services
// (Debian's init scripts pass --log-file, operators set log_dir, use_syslog
// or use_journal) keep working: a log file that is reopened when logrotate
// moves it and on SIGHUP, size rotation, syslog, the journal's native
// protocol, JSON lines, and the debug level, changeable while running.
//
// Lines are laid out as oslo.log's ContextFormatter lays them out by
// default (see osloLine), or as slog's text or JSON when asked.
//
// What oslo.log does and this package does not: read a Python logging
// configuration (log_config_append, reported by Open as a warning; the rest
// of the options apply) and take other logging_*_format_string values.
package oslolog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/config"
)

// Options are oslo.log's options ([DEFAULT] and the command line).
type Options struct {
	Debug           bool
	LogFile, LogDir string
	// Binary names the log file when only LogDir is set
	// (<LogDir>/<Binary>.log) and tags syslog and journal entries.
	Binary          string
	UseSyslog       bool
	SyslogFacility  string // LOG_USER, LOG_LOCAL0 ... or user, local0 ...
	UseJournal      bool
	UseJSON         bool
	UseStderr       bool
	UseEventlog     bool
	LogConfigAppend string
	RotationType    string // none, size, interval (any case)
	MaxFileCount    int
	MaxFileSizeMB   int
	// RotateInterval and RotateIntervalType are log_rotate_interval and
	// log_rotate_interval_type, for RotationType interval.
	RotateInterval     int
	RotateIntervalType string

	// Format is "oslo" (default: oslo.log's line layout), "text" (slog's
	// key=value) or "json"; UseJSON means json.
	Format string
	// DateFormat is log_date_format (strftime directives) for the oslo
	// layout.
	DateFormat string
	// Stderr receives the log when nothing else is configured, and with
	// UseStderr (nil: os.Stderr).
	Stderr io.Writer

	// SyslogNetwork and SyslogAddr reach the syslog daemon (empty: the
	// local one), JournalSocket the journal (empty:
	// /run/systemd/journal/socket). Tests point them at their own sockets.
	SyslogNetwork, SyslogAddr string
	JournalSocket             string
}

// FromConfig reads oslo.log's options from the [DEFAULT] group.
func FromConfig(d config.DefaultOpts, binary string) Options {
	return Options{
		Debug: d.Debug, LogFile: d.LogFile, LogDir: d.LogDir, Binary: binary,
		UseSyslog: d.UseSyslog, SyslogFacility: d.SyslogLogFacility, UseJournal: d.UseJournal,
		UseJSON: d.UseJSON, UseStderr: d.UseStderr, UseEventlog: d.UseEventlog,
		LogConfigAppend: d.LogConfigAppend, RotationType: d.LogRotationType, DateFormat: d.LogDateFormat,
		MaxFileCount: d.MaxLogfileCount, MaxFileSizeMB: d.MaxLogfileSizeMB,
		RotateInterval: d.LogRotateInterval, RotateIntervalType: d.LogRotateIntervalType,
	}
}

// Logging is the process's logger and the outputs behind it.
type Logging struct {
	// Logger writes to every configured output.
	Logger *slog.Logger
	// Warnings are options that could not be honoured; the caller logs
	// them once the logger is in place.
	Warnings []string

	level   *slog.LevelVar
	file    *logFile // nil without a log file
	closers []io.Closer
}

// LogPath is where oslo.log writes: log_file, joined to log_dir when both
// are set, or <log_dir>/<binary>.log; "" for no file.
func (o Options) LogPath() string {
	switch {
	case o.LogFile != "" && o.LogDir != "":
		return filepath.Join(o.LogDir, o.LogFile)
	case o.LogFile != "":
		return o.LogFile
	case o.LogDir != "":
		return filepath.Join(o.LogDir, o.Binary+".log")
	}
	return ""
}

// Open sets up the outputs oslo.log would: the log file, stderr when
// use_stderr is set or when there is neither a file nor the journal,
// the journal and syslog.
func Open(o Options) (*Logging, error) {
	l := &Logging{level: new(slog.LevelVar)}
	l.SetDebug(o.Debug)
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	format := o.Format
	if o.UseJSON {
		format = "json"
	}
	switch format {
	case "":
		format = "oslo"
	case "oslo", "text", "json":
	default:
		return nil, fmt.Errorf("log format %q is none of oslo, text and json", format)
	}
	if o.UseEventlog {
		return nil, errors.New("use_eventlog: the Windows Event Log is not available on this platform")
	}
	if o.LogConfigAppend != "" {
		l.Warnings = append(l.Warnings, fmt.Sprintf("log_config_append = %s is not read: this conductor cannot load "+
			"a Python logging configuration; the other logging options apply", o.LogConfigAppend))
	}
	var maxBytes int64
	timed := false
	switch strings.ToLower(o.RotationType) {
	case "", "none":
	case "size":
		if o.MaxFileSizeMB <= 0 {
			return nil, fmt.Errorf("max_logfile_size_mb must be positive with log_rotation_type = size, not %d", o.MaxFileSizeMB)
		}
		maxBytes = int64(o.MaxFileSizeMB) << 20
	case "interval":
		timed = true
	default:
		return nil, fmt.Errorf("log_rotation_type: Valid values are [interval, size, none], but found %q", o.RotationType)
	}
	facility, err := parseFacility(o.SyslogFacility)
	if (o.UseSyslog || o.UseJournal) && err != nil {
		return nil, err
	}

	var handlers []slog.Handler
	hopts := &slog.HandlerOptions{Level: l.level}
	newHandler := func(w io.Writer) slog.Handler {
		switch format {
		case "json":
			return slog.NewJSONHandler(w, hopts)
		case "text":
			return slog.NewTextHandler(w, hopts)
		}
		return newRecordHandler(newOsloLine(w, o.Binary, o.DateFormat, os.Getpid()), l.level, true)
	}
	fail := func(err error) (*Logging, error) {
		_ = l.Close()
		return nil, err
	}
	path := o.LogPath()
	if path != "" {
		since := time.Now()
		if st, err := os.Stat(path); err == nil {
			since = st.ModTime() // an existing file counts from its last write, as in Python
		}
		f, err := openLogFile(path, maxBytes, o.MaxFileCount)
		if err != nil {
			return fail(err)
		}
		if timed {
			if f.timed, err = newTimedRotation(o.RotateIntervalType, o.RotateInterval, o.MaxFileCount, since, time.Now); err != nil {
				_ = f.Close()
				return fail(err)
			}
		}
		l.file = f
		l.closers = append(l.closers, f)
		handlers = append(handlers, newHandler(f))
	}
	if o.UseStderr || (path == "" && !o.UseJournal) {
		handlers = append(handlers, newHandler(o.Stderr))
	}
	if o.UseJournal {
		j, err := dialJournal(o.JournalSocket, o.Binary, facility)
		if err != nil {
			return fail(err)
		}
		l.closers = append(l.closers, j)
		handlers = append(handlers, newRecordHandler(j, l.level, false))
	}
	if o.UseSyslog {
		s, err := dialSyslog(o.SyslogNetwork, o.SyslogAddr, facility, o.Binary)
		if err != nil {
			return fail(err)
		}
		l.closers = append(l.closers, s)
		handlers = append(handlers, newRecordHandler(s, l.level, false))
	}
	if len(handlers) == 1 {
		l.Logger = slog.New(handlers[0])
	} else {
		l.Logger = slog.New(slog.NewMultiHandler(handlers...))
	}
	return l, nil
}

// SetDebug switches between the DEBUG and INFO levels (oslo.log's debug
// option is mutable: a SIGHUP applies a changed value).
func (l *Logging) SetDebug(debug bool) {
	if debug {
		l.level.Set(slog.LevelDebug)
	} else {
		l.level.Set(slog.LevelInfo)
	}
}

// Reopen reopens the log file (for SIGHUP after an external rotation).
func (l *Logging) Reopen() error {
	if l.file == nil {
		return nil
	}
	return l.file.reopen()
}

// Close closes the log file and the syslog and journal connections.
func (l *Logging) Close() error {
	var errs []error
	for _, c := range l.closers {
		errs = append(errs, c.Close())
	}
	l.closers = nil
	return errors.Join(errs...)
}
