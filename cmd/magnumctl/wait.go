package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
)

// observed is one look at a cluster or nodegroup while waiting.
type observed struct {
	status, reason string
	gone           bool
}

// operation is what --wait follows: the operation's kind (CREATE, UPDATE,
// DELETE: its statuses are <kind>_IN_PROGRESS, _COMPLETE, _FAILED), what it
// is done to (for messages), how to look at it and for how long.
type operation struct {
	kind    string
	subject string
	probe   func(ctx context.Context) (observed, error)
	limit   time.Duration
}

// waitTimeout is --wait-timeout passing while the operation goes on.
type waitTimeout struct {
	subject, status string
	after           time.Duration
}

func (e *waitTimeout) Error() string {
	return fmt.Sprintf("%s is still %s after %s: the operation goes on in the conductor (--wait-timeout; "+
		"follow it with magnumctl cluster show)", e.subject, e.status, e.after)
}

// opFailed is an operation that ended *_FAILED (or was undone).
type opFailed struct {
	subject, status, reason string
}

func (e *opFailed) Error() string {
	if e.reason == "" {
		return fmt.Sprintf("%s ended in %s", e.subject, e.status)
	}
	return fmt.Sprintf("%s ended in %s: %s", e.subject, e.status, e.reason)
}

// Waiting's pace: a look every pollEvery, a line at least every
// remindEvery, and a deleted row awaited for up to deleteCompleteGrace
// past DELETE_COMPLETE (the conductor deletes it in the same sync).
const (
	pollEvery           = time.Second
	remindEvery         = 30 * time.Second
	deleteCompleteGrace = 30 * time.Second
	// lookupsFailFor is how long lookups may keep failing (no answer, the
	// broker or the conductor's database away) before the wait gives up.
	lookupsFailFor = 5 * time.Minute
)

// defaultWaitLimit is --wait-timeout's default: the conductor's own
// deadline of an operation (create_timeout for a create; an hour, the
// default delete_timeout and update bound, for the rest) and a margin.
func defaultWaitLimit(kind string, createTimeoutMinutes int64) time.Duration {
	if kind == "CREATE" && createTimeoutMinutes > 0 {
		return time.Duration(createTimeoutMinutes)*time.Minute + 5*time.Minute
	}
	return 65 * time.Minute
}

// transient reports whether a failed look is worth repeating: no answer,
// the broker or the conductor's database away for a moment.
func transient(err error) bool {
	var te *oslo.TimeoutError
	var ee *exception.Error
	switch {
	case errors.As(err, &te):
		return true
	case errors.As(err, &ee):
		return ee.Module == exception.ModuleOsloDB
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true // the transport's own errors: a reconnecting broker
}

// wait follows op until it ends, printing each change of status or reason
// with the time elapsed (and the status again at least every
// remindEvery): nil when it reached <kind>_COMPLETE (or, for a delete, the
// subject is gone), *opFailed on <kind>_FAILED, a rollback or another
// operation's status, *waitTimeout when op.limit passed first.
func (g *globals) wait(ctx context.Context, op operation) error {
	start := time.Now()
	limit := op.limit
	deadline := start.Add(limit)
	var last observed
	var lastLine, completeSince, failingSince time.Time
	lastErr := ""
	line := func(status, reason string) {
		if reason != "" {
			reason = "  " + reason
		}
		_, _ = fmt.Fprintf(g.out, "%s  +%s  %s%s\n", time.Now().UTC().Format(time.RFC3339),
			time.Since(start).Round(time.Second), status, reason)
		lastLine = time.Now()
	}
	for {
		o, err := op.probe(ctx)
		switch {
		case err != nil && !transient(err):
			return err
		case err != nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) >= lookupsFailFor {
				return fmt.Errorf("looking at %s for %s: %w", op.subject, lookupsFailFor, err)
			}
			if msg := explain(err); msg != lastErr {
				_, _ = fmt.Fprintf(g.errOut, "magnumctl: looking at %s: %s; retrying\n", op.subject, msg)
				lastErr = msg
			}
		default:
			lastErr, failingSince = "", time.Time{}
			if done, err := g.judge(op, o, &last, &completeSince, line); done {
				return err
			}
		}
		if time.Since(lastLine) >= remindEvery && last.status != "" {
			line(last.status, "")
		}
		if !time.Now().Before(deadline) {
			return &waitTimeout{subject: op.subject, status: last.status, after: limit}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pollEvery, time.Until(deadline))):
		}
	}
}

// judge prints what changed in o since *last and says whether the wait is
// over, and how.
func (g *globals) judge(op operation, o observed, last *observed, completeSince *time.Time, line func(status, reason string)) (bool, error) {
	if o.gone {
		if op.kind == "DELETE" {
			line("DELETED", "")
			return true, nil
		}
		return true, &opFailed{subject: op.subject, status: "gone", reason: "it was deleted while the " +
			strings.ToLower(op.kind) + " was awaited"}
	}
	if o.status != last.status || o.reason != last.reason {
		line(o.status, o.reason)
	}
	*last = o
	switch o.status {
	case op.kind + "_COMPLETE":
		if op.kind != "DELETE" {
			return true, nil
		}
		// The row goes right after DELETE_COMPLETE: wait a little for it.
		if completeSince.IsZero() {
			*completeSince = time.Now()
		}
		return time.Since(*completeSince) >= deleteCompleteGrace, nil
	case op.kind + "_FAILED", objects.RollbackComplete, objects.RollbackFailed:
		return true, &opFailed{subject: op.subject, status: o.status, reason: o.reason}
	case op.kind + "_IN_PROGRESS", objects.RollbackInProgress:
		return false, nil
	}
	// Another operation's status: ours is not under way (it ended, and
	// another began, between two looks, or the conductor never took it).
	return true, &opFailed{subject: op.subject, status: o.status,
		reason: "not the status of the " + strings.ToLower(op.kind) + " awaited: the operation is not under way"}
}
