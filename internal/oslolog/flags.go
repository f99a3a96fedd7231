package oslolog

import (
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/config"
)

// Flags are oslo.log's command-line options, spelled as the Python services
// take them: Debian's init scripts start magnum-conductor with
// --config-file=... --log-file=/var/log/magnum/magnum-conductor.log (and
// --use-syslog when asked). A value given on the command line wins over
// magnum.conf, as in oslo.config.
type Flags struct {
	fs *pflag.FlagSet

	logFile, logDir, logConfigAppend, logDateFormat, syslogFacility string

	debug, watchLogFile, useSyslog, useJournal, useJSON  bool
	noDebug, noWatchLogFile, noSyslog, noJournal, noJSON bool
}

// Register adds the options to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	f.fs = fs
	str := func(p *string, name, deprecated, help string) {
		fs.StringVar(p, name, "", help)
		if deprecated != "" {
			fs.StringVar(p, deprecated, "", "deprecated spelling of --"+name)
			_ = fs.MarkHidden(deprecated)
		}
	}
	str(&f.logFile, "log-file", "logfile", "log to this file (oslo.log's log_file); reopened when moved and on SIGHUP")
	str(&f.logDir, "log-dir", "logdir", "base directory of a relative --log-file; alone, logs go to <dir>/<binary>.log (log_dir)")
	str(&f.logConfigAppend, "log-config-append", "log-config", "a Python logging configuration file: not read here (a warning; the other options apply)")
	str(&f.logDateFormat, "log-date-format", "", "strftime format of the time in oslo.log's line layout (log_date_format)")
	str(&f.syslogFacility, "syslog-log-facility", "", "syslog facility, LOG_USER by default (syslog_log_facility)")
	boolean := func(p, neg *bool, name, short, help string) {
		fs.BoolVarP(p, name, short, false, help)
		fs.BoolVar(neg, "no"+name, false, "the opposite of --"+name)
	}
	boolean(&f.debug, &f.noDebug, "debug", "d", "log at DEBUG level (debug)")
	boolean(&f.watchLogFile, &f.noWatchLogFile, "watch-log-file", "", "reopen the log file when moved or removed; always done here (watch_log_file)")
	boolean(&f.useSyslog, &f.noSyslog, "use-syslog", "", "log to syslog (use_syslog)")
	boolean(&f.useJournal, &f.noJournal, "use-journal", "", "log to the journal with its native protocol (use_journal)")
	boolean(&f.useJSON, &f.noJSON, "use-json", "", "log JSON lines (use_json)")
}

// Apply overrides d with the options given on the command line.
func (f *Flags) Apply(d *config.DefaultOpts) {
	if f.fs == nil {
		return
	}
	set := func(p *string, names ...string) {
		for _, n := range names {
			if n != "" && f.fs.Changed(n) {
				*p = f.fs.Lookup(n).Value.String()
			}
		}
	}
	set(&d.LogFile, "logfile", "log-file")
	set(&d.LogDir, "logdir", "log-dir")
	set(&d.LogConfigAppend, "log-config", "log-config-append")
	set(&d.LogDateFormat, "log-date-format")
	set(&d.SyslogLogFacility, "syslog-log-facility")
	boolean := func(p *bool, name string, on, off bool) {
		if f.fs.Changed(name) {
			*p = on
		}
		if f.fs.Changed("no"+name) && off {
			*p = false
		}
	}
	boolean(&d.Debug, "debug", f.debug, f.noDebug)
	boolean(&d.WatchLogFile, "watch-log-file", f.watchLogFile, f.noWatchLogFile)
	boolean(&d.UseSyslog, "use-syslog", f.useSyslog, f.noSyslog)
	boolean(&d.UseJournal, "use-journal", f.useJournal, f.noJournal)
	boolean(&d.UseJSON, "use-json", f.useJSON, f.noJSON)
}
