package service

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A stop waits for every background goroutine, and names those that do
// not return in time.
func TestBackgroundWaitNamesWhatIsLeft(t *testing.T) {
	var b background
	release := make(chan struct{})
	b.Go("quick", func() {})
	b.Go("stuck", func() { <-release })
	b.Go("stuck", func() { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if left := b.wait(ctx); !slices.Equal(left, []string{"stuck"}) {
		t.Fatalf("left %q, want [stuck]", left)
	}
	close(release)
	if left := b.wait(context.Background()); left != nil {
		t.Fatalf("left %q after release", left)
	}
}
