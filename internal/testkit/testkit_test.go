package testkit

import (
	"context"
	"fmt"
	"strings"
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

func TestAwaitReportsTheLastStateSeen(t *testing.T) {
	var n atomic.Int32
	if err := Await(context.Background(), time.Millisecond, "three", func() (bool, string) {
		return n.Add(1) == 3, "not yet"
	}); err != nil || n.Load() != 3 {
		t.Fatalf("Await = %v after %d checks, want nil after 3", err, n.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := Await(ctx, time.Millisecond, "the cluster complete", func() (bool, string) {
		return false, fmt.Sprintf("status %s", "CREATE_IN_PROGRESS")
	})
	if err == nil || !strings.Contains(err.Error(), "the cluster complete") || !strings.Contains(err.Error(), "last seen: status CREATE_IN_PROGRESS") {
		t.Fatalf("Await = %v, want an error naming the wait and the last state", err)
	}
}

func TestOutputKillsAToolThatHangs(t *testing.T) {
	start := time.Now()
	_, err := Output(200*time.Millisecond, "sleep", "30")
	if err == nil || !strings.Contains(err.Error(), "sleep 30: killed after 200ms") {
		t.Fatalf("err = %v, want one naming the tool and the timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("returned after %s", d)
	}
	// A child holding the output pipe open does not keep Output waiting
	// past the pipe grace.
	start = time.Now()
	_, err = CombinedOutput(200*time.Millisecond, "sh", "-c", "sleep 30 & sleep 30")
	if err == nil {
		t.Fatal("no error from a killed tool")
	}
	if d := time.Since(start); d > pipeGrace+10*time.Second {
		t.Fatalf("returned after %s", d)
	}
	out, err := Output(ToolTimeout, "echo", "fine")
	if err != nil || string(out) != "fine\n" {
		t.Fatalf("echo: %q %v", out, err)
	}
}
