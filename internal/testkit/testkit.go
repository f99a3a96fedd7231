// Package testkit is what the module's tests share that needs nothing but
// the standard library: waiting for a condition, and leaving the tests that
// need a service out of `make unit`.
package testkit

import (
	"fmt"
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

// NeedsService skips t under -short, which `make unit` runs: those are the
// tests that need no service. Otherwise it does nothing, and the test
// fails as it would when the service (MariaDB, RabbitMQ) is missing.
func NeedsService(t testing.TB, service string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: not run with -short (make unit runs the tests that need no service)", service)
	}
}
