package periodic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// ConductorBinary is the magnum_service binary of conductors.
const ConductorBinary = "magnum-conductor"

// Sharding modes.
const (
	// ShardRendezvous shares clusters between the live conductors.
	ShardRendezvous = "rendezvous"
	// ShardNone makes every conductor handle every cluster, as Magnum does.
	ShardNone = "none"
)

// MembershipOptions configure how conductors share clusters.
type MembershipOptions struct {
	// Mode is ShardRendezvous (default) or ShardNone.
	Mode string
	// Host is this conductor's [DEFAULT]host: its magnum_service row. It
	// must be unique per conductor process and is required in rendezvous
	// mode.
	Host string
	// Binary defaults to magnum-conductor.
	Binary string
	// ServiceDownTime is [DEFAULT]service_down_time (default 180 s): a
	// conductor whose last heartbeat is older is dead and its clusters
	// move to the others.
	ServiceDownTime time.Duration
}

// Sharder tells, once per cycle, which clusters this conductor handles.
type Sharder interface {
	Snapshot(ctx context.Context) (Shard, error)
}

// Shard is one cycle's view of the live conductors.
type Shard struct {
	all   bool
	self  string
	hosts []string
}

// Owns reports whether this conductor handles the cluster with uuid in
// this cycle.
func (s Shard) Owns(uuid string) bool {
	if s.all {
		return true
	}
	return s.self != "" && Owner(s.hosts, uuid) == s.self
}

// Hosts returns the live conductors of the snapshot (nil in ShardNone mode).
func (s Shard) Hosts() []string { return s.hosts }

// Owner returns the host among hosts that wins rendezvous (highest random
// weight) hashing for key, or "" when hosts is empty.
func Owner(hosts []string, key string) string {
	best, bestScore := "", uint64(0)
	for _, h := range hosts {
		s := score(h, key)
		if best == "" || s > bestScore || (s == bestScore && h < best) {
			best, bestScore = h, s
		}
	}
	return best
}

func score(host, key string) uint64 {
	f := fnv.New64a()
	_, _ = f.Write([]byte(host))
	_, _ = f.Write([]byte{0})
	_, _ = f.Write([]byte(key))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], f.Sum64())
	// splitmix64 finaliser: FNV alone mixes the last bytes poorly.
	z := binary.LittleEndian.Uint64(b[:])
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Membership derives the live conductors from the magnum_service rows:
// binary magnum-conductor, not forced down, and a heartbeat (last_seen_up,
// else updated_at, else created_at) no older than service_down_time, the
// rule magnum-api applies (§H).
type Membership struct {
	o       MembershipOptions
	store   ServiceStore
	clock   Clock
	log     *slog.Logger
	metrics *Metrics
}

// NewMembership returns the sharder for o. In ShardNone mode store may be
// nil.
func NewMembership(o MembershipOptions, store ServiceStore, clock Clock, log *slog.Logger, metrics *Metrics) (*Membership, error) {
	if o.Mode == "" {
		o.Mode = ShardRendezvous
	}
	if o.Binary == "" {
		o.Binary = ConductorBinary
	}
	if o.ServiceDownTime <= 0 {
		o.ServiceDownTime = 180 * time.Second
	}
	if clock == nil {
		clock = RealClock{}
	}
	switch o.Mode {
	case ShardNone:
	case ShardRendezvous:
		if o.Host == "" {
			return nil, errors.New("periodic: sharing clusters between conductors needs a unique [DEFAULT]host per conductor")
		}
		if store == nil {
			return nil, errors.New("periodic: membership needs a service store")
		}
	default:
		return nil, fmt.Errorf("periodic: unknown sharding mode %q (want %q or %q)", o.Mode, ShardRendezvous, ShardNone)
	}
	return &Membership{o: o, store: store, clock: clock, log: log, metrics: metrics}, nil
}

// Snapshot reads the live conductors. When this conductor's own heartbeat
// is not live, it handles nothing (the others have taken its clusters),
// unless no conductor is live at all: then nobody else handles them either
// (typically every heartbeat went stale during a database outage), so this
// one handles every cluster rather than skip the cycle.
func (m *Membership) Snapshot(ctx context.Context) (Shard, error) {
	if m.o.Mode == ShardNone {
		return Shard{all: true}, nil
	}
	rows, err := m.store.ListMagnumServices(ctx, db.ListOpts{})
	if err != nil {
		return Shard{}, fmt.Errorf("listing conductors: %w", err)
	}
	hosts := LiveHosts(rows, m.o.Binary, m.clock.Now(), m.o.ServiceDownTime)
	m.metrics.setLive(len(hosts))
	s := Shard{hosts: hosts}
	for _, h := range hosts {
		if h == m.o.Host {
			s.self = h
		}
	}
	switch {
	case s.self != "":
	case len(hosts) == 0:
		m.log.Warn("no conductor's heartbeat is live, this one's included (the database was unreachable?); "+
			"handling every cluster this cycle", "host", m.o.Host)
		return Shard{all: true}, nil
	default:
		m.log.Warn("this conductor's heartbeat is not live; leaving all clusters to the other conductors",
			"host", m.o.Host, "live_conductors", len(hosts))
	}
	return s, nil
}

// LiveHosts returns the sorted hosts of the rows of binary that are up at
// now.
func LiveHosts(rows []*objects.MagnumService, binary string, now time.Time, downTime time.Duration) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if objects.Deref(r.Binary) != binary || r.Host == nil || r.ForcedDown {
			continue
		}
		if !Up(r, now, downTime) || seen[*r.Host] {
			continue
		}
		seen[*r.Host] = true
		out = append(out, *r.Host)
	}
	sort.Strings(out)
	return out
}

// Up is magnum.api.servicegroup.ServiceGroup.service_is_up.
func Up(r *objects.MagnumService, now time.Time, downTime time.Duration) bool {
	if r.ForcedDown {
		return false
	}
	var last *time.Time
	switch {
	case r.LastSeenUp != nil:
		last = r.LastSeenUp
	case r.UpdatedAt != nil:
		last = r.UpdatedAt
	case r.CreatedAt != nil:
		last = r.CreatedAt
	default:
		return false
	}
	d := now.Sub(*last)
	if d < 0 {
		d = -d
	}
	return d <= downTime
}
