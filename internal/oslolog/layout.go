package oslolog

import (
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// osloLine lays out entries as oslo.log's ContextFormatter does with its
// default format strings, so that tools which parse OpenStack log files
// (Kolla's and OpenStack-Ansible's log shippers, operators' greps) read
// ours too:
//
//	logging_context_format_string  %(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s [%(global_request_id)s %(request_id)s %(user_identity)s] %(instance)s%(message)s
//	logging_default_format_string  %(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s [-] %(instance)s%(message)s
//	logging_debug_format_suffix    %(funcName)s %(pathname)s:%(lineno)d
//
// The context layout is used for a record with a request_id, as in
// oslo.log; a missing global_request_id shows as None, and the user identity
// (user project domain system_scope user_domain project_domain, from the
// user_id ... project_domain_id attributes) has dashes where a value is
// unknown, as Python prints them; system_scope is always a dash. %(name)s is the logger name:
// the binary with dots (magnum.conductor), then the record's component. The
// message is slog's msg followed by its other attributes as key=value.
type osloLine struct {
	w          io.Writer
	pid        string
	dateFormat string // log_date_format, strftime directives
	name       string
	buf        []byte
}

func newOsloLine(w io.Writer, binary, dateFormat string, pid int) *osloLine {
	if dateFormat == "" {
		dateFormat = defaultDateFormat
	}
	name := strings.ReplaceAll(binary, "-", ".")
	if name == "" {
		name = "magnum"
	}
	return &osloLine{w: w, pid: strconv.Itoa(pid), dateFormat: dateFormat, name: name}
}

// defaultDateFormat is oslo.log's log_date_format.
const defaultDateFormat = "%Y-%m-%d %H:%M:%S"

func (o *osloLine) writeEntry(e entry) error {
	t := e.time.Local() // logging.Formatter.converter is time.localtime
	b := appendStrftime(o.buf[:0], o.dateFormat, t)
	b = append(b, '.')
	ms := t.Nanosecond() / 1e6
	b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), ' ')
	b = append(b, o.pid...)
	b = append(b, ' ')
	b = append(b, pyLevelName(e.level)...)
	b = append(b, ' ')
	b = append(b, o.name...)
	if e.component != "" {
		b = append(b, '.')
		b = append(b, e.component...)
	}
	if e.requestID != "" {
		global := e.globalRequestID
		if global == "" {
			global = "None"
		}
		b = append(b, " ["...)
		b = append(b, global...)
		b = append(b, ' ')
		b = append(b, e.requestID...)
		id := e.identity
		for _, v := range [...]string{id.user, id.project, id.domain, "", id.userDomain, id.projectDomain} {
			b = append(b, ' ')
			if v == "" {
				v = "-"
			}
			b = append(b, v...)
		}
		b = append(b, "] "...)
	} else {
		b = append(b, " [-] "...)
	}
	b = append(b, e.msg...)
	if len(e.message) > 0 {
		b = append(b, ' ')
		b = append(b, e.message...)
	}
	if e.level < slog.LevelInfo && e.pc != 0 {
		f, _ := runtime.CallersFrames([]uintptr{e.pc}).Next()
		fn := f.Function
		if i := strings.LastIndexByte(fn, '/'); i >= 0 {
			fn = fn[i+1:]
		}
		b = append(b, ' ')
		b = append(b, fn...)
		b = append(b, ' ')
		b = append(b, f.File...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(f.Line), 10)
	}
	b = append(b, '\n')
	o.buf = b
	_, err := o.w.Write(b)
	return err
}

// pyLevelName is Python's name of a level, CRITICAL above ERROR.
func pyLevelName(l slog.Level) string {
	if l >= slog.LevelError+4 {
		return "CRITICAL"
	}
	return levelName(l)
}

// appendStrftime formats t with C strftime directives (the ones Python's
// time.strftime passes to glibc that log_date_format values use); an
// unknown directive is kept as written, as glibc does.
func appendStrftime(b []byte, format string, t time.Time) []byte {
	pad := func(b []byte, n, width int) []byte {
		s := strconv.Itoa(n)
		for i := len(s); i < width; i++ {
			b = append(b, '0')
		}
		return append(b, s...)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b = append(b, c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b = pad(b, t.Year(), 4)
		case 'y':
			b = pad(b, t.Year()%100, 2)
		case 'm':
			b = pad(b, int(t.Month()), 2)
		case 'd':
			b = pad(b, t.Day(), 2)
		case 'H':
			b = pad(b, t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b = pad(b, h, 2)
		case 'M':
			b = pad(b, t.Minute(), 2)
		case 'S':
			b = pad(b, t.Second(), 2)
		case 'j':
			b = pad(b, t.YearDay(), 3)
		case 'p':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'b':
			b = append(b, t.Month().String()[:3]...)
		case 'B':
			b = append(b, t.Month().String()...)
		case 'a':
			b = append(b, t.Weekday().String()[:3]...)
		case 'A':
			b = append(b, t.Weekday().String()...)
		case 'z':
			b = t.AppendFormat(b, "-0700")
		case 'Z':
			b = t.AppendFormat(b, "MST")
		case '%':
			b = append(b, '%')
		default:
			b = append(b, '%', format[i])
		}
	}
	return b
}
