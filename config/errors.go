package config

import (
	"fmt"
	"strings"
)

// ParseError is a syntax error in a configuration file (oslo's
// ConfigFileParseError).
type ParseError struct {
	File string
	Line int
	Msg  string
	Text string // the offending line, if any
}

func (e *ParseError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("config file %s: line %d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("config file %s: line %d: %s: %q", e.File, e.Line, e.Msg, e.Text)
}

// FileError is a configuration file or directory that cannot be read: it does
// not exist, permission is denied, or it is not what it should be.
type FileError struct {
	Path string
	Dir  bool // the path was given as a --config-dir
	Err  error
}

func (e *FileError) Error() string {
	kind := "config file"
	if e.Dir {
		kind = "config directory"
	}
	return fmt.Sprintf("%s %s: %v", kind, e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ValueError is an option value that does not parse or validate. File and
// Line are empty for a bad default (a programming error).
type ValueError struct {
	File   string
	Line   int
	Env    string // the environment variable (OS_<GROUP>__<OPTION>) the value came from
	Group  string
	Option string // the name as written (it may be a deprecated name)
	Value  string // "****" for secret options
	Reason string
}

func (e *ValueError) Error() string {
	var b strings.Builder
	if e.Env != "" {
		fmt.Fprintf(&b, "environment variable %s: ", e.Env)
	} else if e.File != "" {
		fmt.Fprintf(&b, "config file %s", e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else {
		b.WriteString("default: ")
	}
	fmt.Fprintf(&b, "[%s] %s = %q: %s", e.Group, e.Option, e.Value, e.Reason)
	return b.String()
}
