package testkit

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if err := Poll(time.Second, func() bool { return n.Add(1) == 3 }); err != nil || n.Load() != 3 {
		t.Fatalf("Poll = %v after %d checks, want nil after 3", err, n.Load())
	}
	start := time.Now()
	if err := Poll(50*time.Millisecond, func() bool { return false }); err == nil {
		t.Fatal("a condition that never holds was reported as holding")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %s, before the timeout", d)
	}
}
