package keypool

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// countingPool uses small keys and counts generations.
func countingPool(size int) (*Pool, *atomic.Int64) {
	p := New(size, 1024, discard())
	var n atomic.Int64
	p.generate = func(bits int) (*rsa.PrivateKey, error) {
		n.Add(1)
		return rsa.GenerateKey(rand.Reader, bits)
	}
	return p, &n
}

func TestGetOnEmptyPoolGeneratesInline(t *testing.T) {
	p, n := countingPool(4)
	k, err := p.Get(context.Background())
	if err != nil || k == nil || k.N.BitLen() != 1024 {
		t.Fatalf("key %v err %v", k, err)
	}
	if n.Load() != 1 || p.Len() != 0 {
		t.Fatalf("generated %d, pooled %d", n.Load(), p.Len())
	}
}

func TestFillThenGetNTakesPooledKeysWithoutGenerating(t *testing.T) {
	p, n := countingPool(3)
	if err := p.Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Len() != 3 || n.Load() != 3 {
		t.Fatalf("len %d generated %d", p.Len(), n.Load())
	}
	keys, err := p.GetN(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	// 3 from the pool, 2 generated in parallel.
	if n.Load() != 5 || p.Len() != 0 || len(keys) != 5 {
		t.Fatalf("generated %d, left %d", n.Load(), p.Len())
	}
	assertDistinct(t, keys)
}

func assertDistinct(t *testing.T, keys []*rsa.PrivateKey) {
	t.Helper()
	seen := map[string]bool{}
	for _, k := range keys {
		if k == nil {
			t.Fatal("nil key")
		}
		s := k.N.String()
		if seen[s] {
			t.Fatal("the same key was handed out twice")
		}
		seen[s] = true
	}
}

func TestRunKeepsPoolFilledAndNeverHandsOutAKeyTwice(t *testing.T) {
	p, _ := countingPool(4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	var mu sync.Mutex
	var all []*rsa.PrivateKey
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 5 {
				keys, err := p.GetN(ctx, 2)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, keys...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(all) != 60 {
		t.Fatalf("%d keys", len(all))
	}
	assertDistinct(t, all)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

func TestRunStopsWhenBlockedOnAFullPool(t *testing.T) {
	p, _ := countingPool(1)
	if err := p.Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

func TestZeroSizePoolAlwaysGenerates(t *testing.T) {
	p, n := countingPool(0)
	if err := p.Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if _, err := p.GetN(context.Background(), 2); err != nil || n.Load() != 2 {
		t.Fatalf("generated %d err %v", n.Load(), err)
	}
}

func TestGenerationErrorIsReturned(t *testing.T) {
	p := New(2, 1024, discard())
	p.generate = func(int) (*rsa.PrivateKey, error) { return nil, errors.New("entropy gone") }
	if _, err := p.Get(context.Background()); err == nil {
		t.Fatal("no error")
	}
	if err := p.Fill(context.Background()); err == nil {
		t.Fatal("no error from Fill")
	}
}
