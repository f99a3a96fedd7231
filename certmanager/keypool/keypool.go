// Package keypool keeps a few RSA keys generated ahead of time, so that a
// cluster create does not wait for four key generations (~100 ms each).
//
// A key is handed out at most once (each lives in a channel slot that one
// receiver empties). When the pool is empty, Get generates inline, so a
// caller never waits for more than its own key generation, and GetN
// generates the missing keys in parallel.
package keypool

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Pool is a bounded pool of pre-generated RSA keys of one size.
type Pool struct {
	bits int
	keys chan *rsa.PrivateKey
	log  *slog.Logger
	// generate is rsa.GenerateKey; tests replace it to count calls.
	generate func(bits int) (*rsa.PrivateKey, error)
}

// New returns a pool of up to size keys of bits bits. A size below 1 makes
// a pool that never holds keys: Get always generates inline.
func New(size, bits int, logger *slog.Logger) *Pool {
	if size < 0 {
		size = 0
	}
	return &Pool{
		bits: bits, keys: make(chan *rsa.PrivateKey, size), log: logger,
		generate: func(bits int) (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, bits) },
	}
}

// Size is the pool's capacity.
func (p *Pool) Size() int { return cap(p.keys) }

// Len is the number of keys ready now.
func (p *Pool) Len() int { return len(p.keys) }

// Bits is the size of the keys the pool hands out.
func (p *Pool) Bits() int { return p.bits }

// Run keeps the pool full until ctx is done. Generation happens one key at a
// time on this goroutine, so it uses at most one CPU. It returns ctx.Err().
func (p *Pool) Run(ctx context.Context) error {
	if cap(p.keys) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	p.log.Debug("key pool started", "size", cap(p.keys), "bits", p.bits)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k, err := p.generate(p.bits)
		if err != nil {
			p.log.Error("key pool: key generation failed", "error", err)
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
				continue
			}
		}
		select {
		case p.keys <- k:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Fill generates keys until the pool is full (or ctx is done), on the
// calling goroutine: a synchronous warm-up.
func (p *Pool) Fill(ctx context.Context) error {
	for len(p.keys) < cap(p.keys) {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := p.generate(p.bits)
		if err != nil {
			return fmt.Errorf("keypool: generate %d-bit RSA key: %w", p.bits, err)
		}
		select {
		case p.keys <- k:
		default:
			return nil // filled concurrently by Run
		}
	}
	return nil
}

// Get returns a pooled key, or generates one when the pool is empty.
func (p *Pool) Get(ctx context.Context) (*rsa.PrivateKey, error) {
	keys, err := p.GetN(ctx, 1)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// GetN returns n distinct keys: as many from the pool as it holds, the rest
// generated in parallel.
func (p *Pool) GetN(ctx context.Context, n int) ([]*rsa.PrivateKey, error) {
	out := make([]*rsa.PrivateKey, n)
	missing := 0
	for i := range out {
		select {
		case k := <-p.keys:
			out[i] = k
		default:
			missing++
		}
	}
	if missing == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range out {
		if out[i] != nil {
			continue
		}
		wg.Go(func() {
			out[i], errs[i] = p.generate(p.bits)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("keypool: generate %d-bit RSA key: %w", p.bits, err)
		}
	}
	return out, nil
}
