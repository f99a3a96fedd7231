package oslolog

import (
	"fmt"
	"log/slog"
	"log/syslog"
	"strings"
)

// facilities are the syslog facilities oslo.log accepts (_find_facility).
var facilities = map[string]syslog.Priority{
	"LOG_KERN": syslog.LOG_KERN, "LOG_USER": syslog.LOG_USER, "LOG_MAIL": syslog.LOG_MAIL,
	"LOG_DAEMON": syslog.LOG_DAEMON, "LOG_AUTH": syslog.LOG_AUTH, "LOG_SYSLOG": syslog.LOG_SYSLOG,
	"LOG_LPR": syslog.LOG_LPR, "LOG_NEWS": syslog.LOG_NEWS, "LOG_UUCP": syslog.LOG_UUCP,
	"LOG_CRON": syslog.LOG_CRON, "LOG_AUTHPRIV": syslog.LOG_AUTHPRIV, "LOG_FTP": syslog.LOG_FTP,
	"LOG_LOCAL0": syslog.LOG_LOCAL0, "LOG_LOCAL1": syslog.LOG_LOCAL1, "LOG_LOCAL2": syslog.LOG_LOCAL2,
	"LOG_LOCAL3": syslog.LOG_LOCAL3, "LOG_LOCAL4": syslog.LOG_LOCAL4, "LOG_LOCAL5": syslog.LOG_LOCAL5,
	"LOG_LOCAL6": syslog.LOG_LOCAL6, "LOG_LOCAL7": syslog.LOG_LOCAL7,
}

// parseFacility reads syslog_log_facility as oslo.log does: any case, with
// or without the LOG_ prefix; empty is LOG_USER.
func parseFacility(name string) (syslog.Priority, error) {
	if name == "" {
		return syslog.LOG_USER, nil
	}
	n := strings.ToUpper(name)
	if !strings.HasPrefix(n, "LOG_") {
		n = "LOG_" + n
	}
	if f, ok := facilities[n]; ok {
		return f, nil
	}
	return 0, fmt.Errorf("syslog_log_facility: %q is not a syslog facility (LOG_USER, LOG_DAEMON, LOG_LOCAL0 ... LOG_LOCAL7 ...)", name)
}

// syslogWriter sends entries to syslog with the severity of their level.
type syslogWriter struct{ w *syslog.Writer }

func dialSyslog(network, addr string, facility syslog.Priority, tag string) (*syslogWriter, error) {
	w, err := syslog.Dial(network, addr, facility|syslog.LOG_INFO, tag)
	if err != nil {
		return nil, fmt.Errorf("use_syslog: %w", err)
	}
	return &syslogWriter{w: w}, nil
}

func (s *syslogWriter) writeEntry(e entry) error {
	msg := string(e.message)
	switch {
	case e.level >= slog.LevelError:
		return s.w.Err(msg)
	case e.level >= slog.LevelWarn:
		return s.w.Warning(msg)
	case e.level >= slog.LevelInfo:
		return s.w.Info(msg)
	}
	return s.w.Debug(msg)
}

func (s *syslogWriter) Close() error { return s.w.Close() }

// severity is the syslog severity of a level (journal PRIORITY).
func severity(l slog.Level) syslog.Priority {
	switch {
	case l >= slog.LevelError:
		return syslog.LOG_ERR
	case l >= slog.LevelWarn:
		return syslog.LOG_WARNING
	case l >= slog.LevelInfo:
		return syslog.LOG_INFO
	}
	return syslog.LOG_DEBUG
}
