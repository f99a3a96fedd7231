package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// TestSaveClusterIfLosesToAConcurrentChange: a save conditional on what was
// read writes nothing once another writer changed a guarded field (the
// status unchanged), and writes when nothing did.
func TestSaveClusterIfLosesToAConcurrentChange(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		for _, tc := range []struct {
			field  string
			change func(c *objects.Cluster)
		}{
			// A handler hands the create over (stack_id NULL → set).
			{"stack_id", func(c *objects.Cluster) { c.StackID = objects.Str("ns/name") }},
			// An upgrade moves the template, the status staying in progress.
			{"cluster_template_id", func(c *objects.Cluster) { c.ClusterTemplateID = objects.Str("ct-new") }},
			// A claim UPDATE_IN_PROGRESS → DELETE_IN_PROGRESS.
			{"status", func(c *objects.Cluster) { c.Status = objects.DeleteInProgress }},
		} {
			t.Run(tc.field, func(t *testing.T) {
				c := cluster("guard-"+tc.field, "p1", objects.UpdateInProgress)
				must(t, s.CreateCluster(ctx, c))
				read, err := s.GetClusterByUUID(ctx, *c.UUID)
				must(t, err)

				other, err := s.GetClusterByUUID(ctx, *c.UUID)
				must(t, err)
				tc.change(other)
				must(t, s.SaveCluster(ctx, other))

				mine := objects.Clone(read)
				mine.Status = objects.UpdateComplete
				mine.StatusReason = objects.Str("done")
				err = s.SaveClusterIf(ctx, mine, db.ClusterCond{Read: read, Fields: db.ClusterGuardFields()})
				if !errors.Is(err, db.ErrStatusChanged) {
					t.Fatalf("err = %v, want ErrStatusChanged", err)
				}
				now, err := s.GetClusterByUUID(ctx, *c.UUID)
				must(t, err)
				if objects.Deref(now.StatusReason) == "done" {
					t.Fatal("the stale save was written")
				}
				// Read again: the save lands.
				mine = objects.Clone(now)
				mine.StatusReason = objects.Str("done")
				must(t, s.SaveClusterIf(ctx, mine, db.ClusterCond{Read: now, Fields: db.ClusterGuardFields()}))
				now, err = s.GetClusterByUUID(ctx, *c.UUID)
				must(t, err)
				if objects.Deref(now.StatusReason) != "done" {
					t.Fatalf("reason %q", objects.Deref(now.StatusReason))
				}
			})
		}
		// Status list and fields together; a missing row is not found.
		c := cluster("guard-both", "p1", objects.UpdateInProgress)
		must(t, s.CreateCluster(ctx, c))
		read, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		mine := objects.Clone(read)
		mine.Status = objects.UpdateComplete
		if err := s.SaveClusterIf(ctx, mine, db.ClusterCond{Status: []string{objects.CreateInProgress}, Read: read,
			Fields: []string{"stack_id"}}); !errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("status not allowed: %v", err)
		}
		must(t, s.DestroyCluster(ctx, *c.UUID))
		wantExc(t, s.SaveClusterIf(ctx, mine, db.ClusterCond{Read: read, Fields: []string{"stack_id"}}), exception.ClassClusterNotFound)
		if err := s.SaveClusterIf(ctx, mine, db.ClusterCond{Read: read, Fields: []string{"labels"}}); err == nil ||
			errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("a JSON column cannot guard: %v", err)
		}
	})
}

// TestSaveNodeGroupIfLosesToAConcurrentResize: a nodegroup save conditional
// on node_count loses to a resize that kept the status; node_count NULL
// reads (and guards) as 1. DestroyNodeGroupIf is guarded the same way.
func TestSaveNodeGroupIfLosesToAConcurrentResize(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("ng-guard", "p1", objects.UpdateInProgress)
		must(t, s.CreateCluster(ctx, c))
		ng := nodegroup(c, "w", objects.RoleWorker, 2)
		ng.Status = objects.UpdateInProgress
		must(t, s.CreateNodeGroup(ctx, ng))
		read, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)

		resize := objects.Clone(read)
		resize.NodeCount = 3
		must(t, s.SaveNodeGroupIf(ctx, resize, db.NodeGroupCond{Status: []string{objects.UpdateInProgress}}))

		mine := objects.Clone(read)
		mine.Status = objects.UpdateComplete
		if err := s.SaveNodeGroupIf(ctx, mine, db.NodeGroupCond{Read: read, Fields: db.NodeGroupGuardFields()}); !errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("err = %v, want ErrStatusChanged", err)
		}
		if err := s.DestroyNodeGroupIf(ctx, *c.UUID, ng.UUID, db.NodeGroupCond{Read: read, Fields: db.NodeGroupGuardFields()}); !errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("destroy: err = %v, want ErrStatusChanged", err)
		}
		now, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)
		if now.NodeCount != 3 || now.Status != objects.UpdateInProgress {
			t.Fatalf("the resize was overwritten: %d %s", now.NodeCount, now.Status)
		}
		// NULL node_count (a row written by an older Magnum) reads as 1
		// and guards as 1.
		_, err = s.UpdateNodeGroupValues(ctx, *c.UUID, ng.UUID, map[string]any{"node_count": nil})
		must(t, err)
		null, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)
		if null.NodeCount != 1 {
			t.Fatalf("NULL node_count read as %d", null.NodeCount)
		}
		mine = objects.Clone(null)
		mine.Status = objects.UpdateComplete
		must(t, s.SaveNodeGroupIf(ctx, mine, db.NodeGroupCond{Read: null, Fields: db.NodeGroupGuardFields()}))
		must(t, s.DestroyNodeGroupIf(ctx, *c.UUID, ng.UUID, db.NodeGroupCond{Status: []string{objects.UpdateComplete}}))
		wantExc(t, s.DestroyNodeGroupIf(ctx, *c.UUID, ng.UUID, db.NodeGroupCond{Status: []string{objects.UpdateComplete}}),
			exception.ClassNodeGroupNotFound)
	})
}

// TestInTxCommitsOrRollsBackTogether: the writes of one InTx land
// together or not at all, and a read inside sees the transaction's own
// writes.
func TestInTxCommitsOrRollsBackTogether(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("tx", "p1", objects.CreateComplete)
		must(t, s.CreateCluster(ctx, c))
		boom := errors.New("boom")
		err := s.InTx(ctx, func(ctx context.Context) error {
			row, err := s.LockCluster(ctx, *c.UUID)
			if err != nil {
				return err
			}
			row.Status = objects.UpdateInProgress
			if err := s.SaveClusterIf(ctx, row, db.ClusterCond{Status: []string{objects.CreateComplete}}); err != nil {
				return err
			}
			ng := nodegroup(c, "extra", objects.RoleWorker, 1)
			if err := s.CreateNodeGroup(ctx, ng); err != nil {
				return err
			}
			got, err := s.GetClusterByUUID(ctx, *c.UUID)
			if err != nil {
				return fmt.Errorf("own write not seen: %w", err)
			}
			if got.Status != objects.UpdateInProgress {
				return fmt.Errorf("own write not seen: %v", got)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		got, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		ngs, err := s.ListNodeGroups(ctx, *c.UUID, db.ListOpts{}, db.NodeGroupFilters{})
		must(t, err)
		if got.Status != objects.CreateComplete || len(ngs) != 0 {
			t.Fatalf("rolled back transaction left %s and %d nodegroups", got.Status, len(ngs))
		}
		if _, err := s.LockCluster(ctx, *c.UUID); !errors.Is(err, db.ErrNotInTransaction) {
			t.Fatalf("LockCluster outside a transaction: %v", err)
		}
		err = s.InTx(ctx, func(ctx context.Context) error {
			_, err := s.LockCluster(ctx, "00000000-0000-0000-0000-000000000000")
			return err
		})
		wantExc(t, err, exception.ClassClusterNotFound)
	})
}

// TestLockedClusterSerialisesClaims: a claim (a conditional update of the
// cluster row) made while another transaction holds the cluster's lock
// sees that transaction's outcome, never the state before it. Run many
// times with both orders possible, the claim either wins before the
// transaction (which then sees it and backs off) or loses after it.
func TestLockedClusterSerialisesClaims(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		for i := range 20 {
			c := cluster(fmt.Sprintf("serial-%d", i), "p1", objects.UpdateInProgress)
			must(t, s.CreateCluster(ctx, c))
			read, err := s.GetClusterByUUID(ctx, *c.UUID)
			must(t, err)
			var wg sync.WaitGroup
			var syncErr, claimErr error
			wg.Add(2)
			go func() { // the status sync completing the update
				defer wg.Done()
				syncErr = s.InTx(ctx, func(ctx context.Context) error {
					now, err := s.LockCluster(ctx, *c.UUID)
					if err != nil {
						return err
					}
					if objects.Deref(now.StackID) != objects.Deref(read.StackID) || now.Status != read.Status {
						return db.ErrStatusChanged
					}
					done := objects.Clone(read)
					done.Status = objects.UpdateComplete
					return s.SaveClusterIf(ctx, done, db.ClusterCond{Read: read, Fields: db.ClusterGuardFields()})
				})
			}()
			go func() { // a handler claiming a new update on the same cluster
				defer wg.Done()
				claim, err := s.GetClusterByUUID(ctx, *c.UUID)
				if err != nil {
					claimErr = err
					return
				}
				claim.Status = objects.UpdateInProgress
				// A claim writes its status even when it is the one read.
				objects.MarkChanged(claim, "status")
				claim.StackID = objects.Str("new-operation")
				claimErr = s.SaveClusterIfStatus(ctx, claim, []string{objects.UpdateInProgress, objects.UpdateComplete})
			}()
			wg.Wait()
			must(t, claimErr)
			now, err := s.GetClusterByUUID(ctx, *c.UUID)
			must(t, err)
			// Whatever the order, the new operation is in progress: the
			// sync either completed the old one before the claim, or saw
			// the claim and dropped its result.
			if now.Status != objects.UpdateInProgress || objects.Deref(now.StackID) != "new-operation" {
				t.Fatalf("run %d: %s %s (sync: %v)", i, now.Status, objects.Deref(now.StackID), syncErr)
			}
			if syncErr != nil && !errors.Is(syncErr, db.ErrStatusChanged) {
				t.Fatalf("run %d: sync: %v", i, syncErr)
			}
		}
	})
}

// TestInTxRetriesADeadlock: two transactions locking two clusters in
// opposite orders deadlock on MariaDB; the one the server rolls back runs
// again, and both land.
func TestInTxRetriesADeadlock(t *testing.T) {
	s := newStore(t, "mysql")
	ctx := adminCtx()
	a, b := cluster("dl-a", "p1", objects.CreateComplete), cluster("dl-b", "p1", objects.CreateComplete)
	must(t, s.CreateCluster(ctx, a))
	must(t, s.CreateCluster(ctx, b))
	aLocked, bLocked := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	attempts := make([]int, 2)
	run := func(i int, first, second *objects.Cluster, mine, theirs chan struct{}, once *sync.Once) error {
		return s.InTx(ctx, func(ctx context.Context) error {
			attempts[i]++
			if _, err := s.LockCluster(ctx, *first.UUID); err != nil {
				return err
			}
			once.Do(func() {
				close(mine)
				<-theirs // both hold their first lock: the second locks deadlock
			})
			row, err := s.LockCluster(ctx, *second.UUID)
			if err != nil {
				return err
			}
			row.StatusReason = objects.Str(fmt.Sprintf("by %d", i))
			return s.SaveCluster(ctx, row)
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- run(0, a, b, aLocked, bLocked, &once1) }()
	go func() { errs <- run(1, b, a, bLocked, aLocked, &once2) }()
	for range 2 {
		must(t, <-errs)
	}
	if attempts[0]+attempts[1] < 3 {
		t.Fatalf("no transaction was retried: attempts %v", attempts)
	}
}
