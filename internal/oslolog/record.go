package oslolog

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
)

// entry is one record taken apart for a destination that lays it out
// itself: syslog and the journal (a level and a message per entry), and the
// oslo.log line layout.
type entry struct {
	time  time.Time
	level slog.Level
	pc    uintptr
	// message is the record as slog's text layout without time and level
	// (msg=... k=v ...); in the apart mode, only the attributes (k=v ...)
	// without the request ids and the component, which are the fields below.
	message []byte
	msg     string
	// request ids, the component and the user identity, when the record or
	// its logger carries them outside any group
	requestID, globalRequestID, component string
	identity                              identity
}

// identity is oslo.log's user identity: user project domain system_scope
// user_domain project_domain (system_scope is not carried here).
type identity struct {
	user, project, domain, userDomain, projectDomain string
}

// entryWriter sends entries to a destination. Calls are serialised.
type entryWriter interface {
	writeEntry(e entry) error
}

// recordHandler formats records with slog's text handler, without the time
// and level (the destination records both) and, in the apart mode, without
// msg, the request ids and the component, and passes them on as entries.
type recordHandler struct {
	shared *recordShared
	inner  slog.Handler
	// what WithAttrs gave outside any group
	noted   entry
	grouped bool
}

type recordShared struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out entryWriter
}

// apartKeys are the top-level keys the apart mode takes out of the text.
var apartKeys = map[string]bool{slog.MessageKey: true, "request_id": true, "global_request_id": true, "component": true,
	"user_id": true, "project_id": true, "domain_id": true, "user_domain_id": true, "project_domain_id": true}

func newRecordHandler(out entryWriter, level slog.Leveler, apart bool) *recordHandler {
	sh := &recordShared{out: out}
	inner := slog.NewTextHandler(&sh.buf, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || apart && apartKeys[a.Key]) {
				return slog.Attr{}
			}
			return a
		}})
	return &recordHandler{shared: sh, inner: inner}
}

func (h *recordHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *recordHandler) Handle(ctx context.Context, r slog.Record) error {
	e := h.noted
	e.time, e.level, e.pc, e.msg = r.Time, r.Level, r.PC, r.Message
	if !h.grouped {
		r.Attrs(func(a slog.Attr) bool {
			e.note(a)
			return true
		})
	}
	sh := h.shared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.buf.Reset()
	if err := h.inner.Handle(ctx, r); err != nil {
		return err
	}
	e.message = bytes.TrimSuffix(sh.buf.Bytes(), []byte("\n"))
	return sh.out.writeEntry(e)
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(as)
	if !h.grouped {
		for _, a := range as {
			c.noted.note(a)
		}
	}
	return &c
}

func (h *recordHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.grouped = c.grouped || name != ""
	return &c
}

// note keeps the value of an attribute that is one of the entry's fields.
func (e *entry) note(a slog.Attr) {
	var p *string
	switch a.Key {
	case "request_id":
		p = &e.requestID
	case "global_request_id":
		p = &e.globalRequestID
	case "component":
		p = &e.component
	case "user_id":
		p = &e.identity.user
	case "project_id":
		p = &e.identity.project
	case "domain_id":
		p = &e.identity.domain
	case "user_domain_id":
		p = &e.identity.userDomain
	case "project_domain_id":
		p = &e.identity.projectDomain
	default:
		return
	}
	*p = a.Value.Resolve().String()
}
