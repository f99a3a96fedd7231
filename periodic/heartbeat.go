package periodic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/request"
)

// HeartbeatOptions configure update_magnum_service.
type HeartbeatOptions struct {
	// Host is [DEFAULT]host. Unlike Magnum, it is required (§K.14): a
	// conductor without one would share a NULL-host row with the others.
	Host string
	// Binary defaults to magnum-conductor.
	Binary string
	// Interval is [DEFAULT]periodic_interval_max (default 60 s).
	Interval time.Duration
}

// Heartbeat is the update_magnum_service task. The database upserts the
// row and increments report_count in SQL, so conductors never clobber each
// other's count.
type Heartbeat struct {
	o     HeartbeatOptions
	store ServiceStore
	log   *slog.Logger

	mu        sync.Mutex
	lastCount int64
}

// NewHeartbeat returns the heartbeat job.
func NewHeartbeat(o HeartbeatOptions, store ServiceStore, log *slog.Logger) (*Heartbeat, error) {
	if o.Host == "" {
		return nil, errors.New("periodic: the heartbeat needs [DEFAULT]host")
	}
	if store == nil || log == nil {
		return nil, errors.New("periodic: the heartbeat needs a store and a logger")
	}
	if o.Binary == "" {
		o.Binary = ConductorBinary
	}
	if o.Interval <= 0 {
		o.Interval = 60 * time.Second
	}
	return &Heartbeat{o: o, store: store, log: log}, nil
}

// Name implements Job.
func (h *Heartbeat) Name() string { return "update_magnum_service" }

// Spacing implements Job.
func (h *Heartbeat) Spacing() time.Duration { return h.o.Interval }

// RunOnce reports this conductor up.
func (h *Heartbeat) RunOnce(ctx context.Context) error {
	ctx = request.With(ctx, request.Admin())
	s, err := h.store.ReportServiceUp(ctx, h.o.Host, h.o.Binary)
	if err != nil {
		return fmt.Errorf("reporting %s on %s up: %w", h.o.Binary, h.o.Host, err)
	}
	h.log.Debug("heartbeat", "host", h.o.Host, "binary", h.o.Binary, "report_count", s.ReportCount)
	h.mu.Lock()
	last := h.lastCount
	h.lastCount = s.ReportCount
	h.mu.Unlock()
	if last > 0 && s.ReportCount > last+1 {
		// Someone else reports under this host: two conductors would then
		// count as one and both handle the same clusters.
		h.log.Error("another process reports as this conductor's host; give each conductor a unique [DEFAULT]host",
			"host", h.o.Host, "binary", h.o.Binary, "report_count", s.ReportCount, "previous_report_count", last)
	}
	return nil
}
