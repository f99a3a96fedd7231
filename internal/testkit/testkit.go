// Package testkit is what the module's tests share that needs nothing but
// the standard library: waiting for a condition, running a tool with a
// deadline, and leaving the tests that need a service out of `make unit`.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Tick is how often Eventually checks its condition.
const Tick = 10 * time.Millisecond

// Eventually checks cond every Tick until it holds, and fails t (Fatal) if
// it still does not after timeout, with the message format and args say.
// For state that gives no signal to wait on: a broker's queue depth, a
// file another process writes, a pool's bookkeeping.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// Poll is Eventually returning an error instead of failing a test, for
// code that waits off the test's goroutine.
func Poll(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("did not hold within %s", timeout)
		}
		time.Sleep(Tick)
	}
	return nil
}

// Await checks cond every interval until it holds, and returns an error
// naming what and cond's last report when ctx ends first. For waits whose
// failure must say what was seen (a controller's conditions, a cluster's
// status) and whose deadline is the caller's context.
func Await(ctx context.Context, interval time.Duration, what string, cond func() (ok bool, state string)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, state := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within the deadline; last seen: %s", what, state)
		case <-t.C:
		}
	}
}

// NeedsService skips t under -short, which `make unit` runs: those are the
// tests that need no service. Otherwise it does nothing, and the test
// fails as it would when the service (MariaDB, RabbitMQ) is missing.
func NeedsService(t testing.TB, service string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: not run with -short (make unit runs the tests that need no service)", service)
	}
}

// ToolTimeout is how long a test gives a command-line tool it runs once
// (rabbitmqctl, a Python one-liner): minutes on a loaded machine are
// normal for rabbitmqctl, an hour is a hang.
const ToolTimeout = 2 * time.Minute

// pipeGrace is how long Wait keeps reading a killed tool's output pipes: a
// child it started may hold them open for ever.
const pipeGrace = 5 * time.Second

// Output runs name with args as exec.Cmd.Output does, killed after
// timeout: a tool that hangs fails its test with an error naming it and
// the timeout, instead of holding the package's test binary until go
// test's own -timeout (CI once lost an hour that way, with the start of
// the goroutine dump, the part naming the test, cut off).
func Output(timeout time.Duration, name string, args ...string) ([]byte, error) {
	return run(timeout, false, name, args...)
}

// CombinedOutput is Output with standard error in the output too.
func CombinedOutput(timeout time.Duration, name string, args ...string) ([]byte, error) {
	return run(timeout, true, name, args...)
}

func run(timeout time.Duration, combined bool, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = pipeGrace
	var out []byte
	var err error
	if combined {
		out, err = cmd.CombinedOutput()
	} else {
		out, err = cmd.Output()
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%s %s: killed after %s: %w", name, strings.Join(args, " "), timeout, err)
	}
	return out, err
}
