package db

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// txKey carries the transaction of InTx in a context.
type txKey struct{}

// txOf returns the transaction ctx carries, or nil.
func txOf(ctx context.Context) *gorm.DB {
	tx, _ := ctx.Value(txKey{}).(*gorm.DB)
	return tx
}

// ErrNotInTransaction is returned by the methods that only make sense
// inside InTx (LockCluster) when called outside one.
var ErrNotInTransaction = errors.New("db: not inside a transaction")

// InTx runs fn in one database transaction: every Store method called with
// the context fn receives joins it, and all of it is committed when fn
// returns nil, or rolled back when it returns an error (which InTx returns).
// A deadlock or a busy database rolls back and runs fn again (up to
// max_retries times, as oslo.db's retry_on_deadlock), so fn must only do
// database work, or work it is safe to repeat. Inside a transaction, Store
// methods do not retry on their own. A call of InTx inside fn joins the
// outer transaction.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if txOf(ctx) != nil {
		return fn(ctx)
	}
	limit := s.maxRetries
	if limit <= 0 {
		limit = 20
	}
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := s.gdb.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return fn(context.WithValue(ctx, txKey{}, tx))
		})
		if err == nil || attempt >= limit || !isRetriable(err) {
			return s.wrap("transaction", err)
		}
		s.log.WarnContext(ctx, "database deadlock, transaction retried", "attempt", attempt+1, "error", err.Error())
		select {
		case <-ctx.Done():
			return s.wrap("transaction", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// LockCluster reads the cluster row uuid (no tenant filter) and locks it
// until the transaction of ctx ends: on MySQL with SELECT … FOR UPDATE, on
// SQLite by taking the database's write lock first. Writers that lock, or
// update, the cluster row before they touch its nodegroups are so
// serialised with each other. It must be called inside InTx
// (ErrNotInTransaction otherwise); a missing row is ClusterNotFound.
func (s *Store) LockCluster(ctx context.Context, uuid string) (*objects.Cluster, error) {
	tx := txOf(ctx)
	if tx == nil {
		return nil, ErrNotInTransaction
	}
	if s.dialect != "mysql" {
		// A write makes SQLite take its write lock now, rather than at
		// the first real write, after reads another writer could change.
		if err := tx.Exec("UPDATE "+s.q("cluster")+" SET "+s.q("id")+" = "+s.q("id")+" WHERE "+s.q("uuid")+" = ?",
			uuid).Error; err != nil {
			return nil, s.wrap("lock cluster", err)
		}
	}
	var rows []clusterRow
	if err := s.lockForUpdate(tx.Model(&clusterRow{})).Where(s.q("uuid")+" = ?", uuid).Limit(1).
		Find(&rows).Error; err != nil {
		return nil, s.wrap("lock cluster", err)
	}
	if len(rows) == 0 {
		return nil, exception.ClusterNotFound(uuid)
	}
	c := rows[0].toObject()
	resetLoaded(c)
	return c, nil
}
