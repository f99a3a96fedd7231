package oslolog

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// entry is one record for a destination that takes a level and a message
// per entry (syslog, the journal) rather than a stream of lines.
type entry struct {
	level   slog.Level
	message []byte // the record as a text line without time and level
	// request ids, when the record or its logger carries them
	requestID, globalRequestID string
}

// entryWriter sends entries to a destination.
type entryWriter interface {
	writeEntry(e entry) error
}

// recordHandler formats records with slog's text handler, without the time
// and level (the destination records both), and passes them on as entries.
type recordHandler struct {
	shared *recordShared
	inner  slog.Handler
	// ids found in WithAttrs outside any group
	requestID, globalRequestID string
	grouped                    bool
}

type recordShared struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out entryWriter
}

func newRecordHandler(out entryWriter, level slog.Leveler) *recordHandler {
	sh := &recordShared{out: out}
	inner := slog.NewTextHandler(&sh.buf, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
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
	e := entry{level: r.Level, requestID: h.requestID, globalRequestID: h.globalRequestID}
	if !h.grouped {
		r.Attrs(func(a slog.Attr) bool {
			noteID(a, &e.requestID, &e.globalRequestID)
			return true
		})
	}
	sh := h.shared
	sh.mu.Lock()
	sh.buf.Reset()
	err := h.inner.Handle(ctx, r)
	e.message = bytes.TrimSuffix(bytes.Clone(sh.buf.Bytes()), []byte("\n"))
	sh.mu.Unlock()
	if err != nil {
		return err
	}
	return sh.out.writeEntry(e)
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(as)
	if !h.grouped {
		for _, a := range as {
			noteID(a, &c.requestID, &c.globalRequestID)
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

// noteID keeps the value of a request_id or global_request_id attribute.
func noteID(a slog.Attr, requestID, globalRequestID *string) {
	switch a.Key {
	case "request_id":
		*requestID = a.Value.Resolve().String()
	case "global_request_id":
		*globalRequestID = a.Value.Resolve().String()
	}
}
