package clusterstate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/conductor/clusterstate"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

func eachDialect(t *testing.T, f func(t *testing.T, s *db.Store)) {
	for _, d := range []string{"mysql", "sqlite"} {
		t.Run(d, func(t *testing.T) {
			url := dbtest.SQLite(t)
			if d == "mysql" {
				_, url = dbtest.MySQL(t)
			}
			f(t, dbtest.Migrated(t, url, db.Options{MaxPoolSize: 10, MaxOverflow: 10}, nil))
		})
	}
}

var ctx = request.With(context.Background(), request.Admin())

type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) ClusterEvent(_ context.Context, action, outcome string, c *objects.Cluster) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, action+"/"+outcome+" "+c.Status)
}

func (e *events) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.got
	e.got = nil
	return out
}

type certs struct{ deleted int }

func (c *certs) DeleteForCluster(context.Context, *objects.Cluster) error { c.deleted++; return nil }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seed inserts a cluster in status with a master and a worker nodegroup in
// ngStatus.
func seed(t *testing.T, s *db.Store, name, status, ngStatus string) string {
	t.Helper()
	c := &objects.Cluster{Name: objects.Str(name), ProjectID: objects.Str("p"), Status: status, StackID: objects.Str("stack-" + name),
		ClusterTemplateID: objects.Str("ct")}
	must(t, s.CreateCluster(ctx, c))
	for _, ng := range []*objects.NodeGroup{
		{Name: "default-master", Role: objects.RoleMaster, NodeCount: 1},
		{Name: "default-worker", Role: objects.RoleWorker, NodeCount: 2},
	} {
		ng.ClusterID, ng.ProjectID, ng.IsDefault, ng.Status, ng.StackID = *c.UUID, "p", true, ngStatus, c.StackID
		must(t, s.CreateNodeGroup(ctx, ng))
	}
	return *c.UUID
}

func read(t *testing.T, s *db.Store, uuid string) (*objects.Cluster, []*objects.NodeGroup) {
	t.Helper()
	c, err := s.GetClusterByUUID(ctx, uuid)
	must(t, err)
	ngs, err := s.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	must(t, err)
	return c, ngs
}

// ready is what a driver reports once everything converged to the sizes
// seed gave the nodegroups (its back end's desired state).
func ready(ngs []*objects.NodeGroup) drivers.Observation {
	o := drivers.Observation{Phase: drivers.PhaseReady, APIAddress: "https://10.0.0.1:6443",
		NodeGroups: map[string]drivers.NodeGroupObservation{},
		Request:    &drivers.BackendRequest{Exists: true, NodeGroups: map[string]drivers.NodeGroupRequestState{}}}
	for _, ng := range ngs {
		o.NodeGroups[ng.UUID] = drivers.NodeGroupObservation{Phase: drivers.PhaseReady, NodeAddresses: []string{"10.0.0.2"}}
		n := 2
		if ng.Role == objects.RoleMaster {
			n = 1
		}
		o.Request.NodeGroups[ng.UUID] = drivers.NodeGroupRequestState{NodeCount: &n}
	}
	return o
}

func decide(c *objects.Cluster, ngs []*objects.NodeGroup, o drivers.Observation) statusmachine.Decision {
	return statusmachine.Decide(statusmachine.Input{Cluster: c, NodeGroups: ngs, Observation: o, Now: time.Now()})
}

func newApplier(s *db.Store, ev *events, cs *certs) *clusterstate.Applier {
	return &clusterstate.Applier{Store: s, Notifier: ev, Certs: cs, Log: slog.New(slog.DiscardHandler)}
}

func TestApplyRecordsTheDecision(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ev, cs := &events{}, &certs{}
		a := newApplier(s, ev, cs)
		uuid := seed(t, s, "done", objects.CreateInProgress, objects.CreateInProgress)
		c, ngs := read(t, s, uuid)
		out, err := a.Apply(ctx, c, ngs, decide(c, ngs, ready(ngs)))
		if err != nil || !out.Saved || out.Deleted {
			t.Fatalf("%+v %v", out, err)
		}
		c, ngs = read(t, s, uuid)
		if c.Status != objects.CreateComplete || objects.Deref(c.APIAddress) != "https://10.0.0.1:6443" {
			t.Fatalf("cluster %s %v", c.Status, c.APIAddress)
		}
		for _, ng := range ngs {
			if ng.Status != objects.CreateComplete || len(ng.NodeAddresses) != 1 {
				t.Fatalf("nodegroup %s %s %v", ng.Name, ng.Status, ng.NodeAddresses)
			}
		}
		if got := ev.take(); len(got) != 1 || got[0] != "create/success CREATE_COMPLETE" {
			t.Fatalf("events %v", got)
		}

		// A finished deletion: saved, notified, then the rows go.
		uuid = seed(t, s, "gone", objects.DeleteInProgress, objects.CreateComplete)
		c, ngs = read(t, s, uuid)
		out, err = a.Apply(ctx, c, ngs, decide(c, ngs, drivers.Observation{Phase: drivers.PhaseGone}))
		if err != nil || !out.Saved || !out.Deleted {
			t.Fatalf("%+v %v", out, err)
		}
		if _, err := s.GetClusterByUUID(ctx, uuid); err == nil {
			t.Fatal("the deleted cluster's row is still there")
		}
		if ngs, _ := s.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{}); len(ngs) != 0 || cs.deleted != 1 {
			t.Fatalf("%d nodegroups left, certificates deleted %d times", len(ngs), cs.deleted)
		}
		if got := ev.take(); len(got) != 1 || got[0] != "delete/success DELETE_COMPLETE" {
			t.Fatalf("events %v", got)
		}
	})
}

// TestApplyLosesToAnOperationStartedSinceTheRead: the decision was made on
// rows read before an operation claimed the cluster; whatever the claim
// changed (the status unchanged), nothing is written and nothing notified.
func TestApplyLosesToAnOperationStartedSinceTheRead(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		for name, claim := range map[string]func(t *testing.T, uuid string, ngs []*objects.NodeGroup){
			// cluster_resize of a cluster in UPDATE_IN_PROGRESS (the
			// autoscaler stacks them): the worker's size and status.
			"resize": func(t *testing.T, uuid string, ngs []*objects.NodeGroup) {
				w := objects.Clone(ngs[1])
				w.NodeCount, w.Status = 5, objects.UpdateInProgress
				must(t, s.SaveNodeGroupIf(ctx, w, db.NodeGroupCond{Status: []string{objects.UpdateComplete, objects.UpdateInProgress}}))
			},
			// nodegroup_create: a new row.
			"nodegroup create": func(t *testing.T, uuid string, _ []*objects.NodeGroup) {
				must(t, s.CreateNodeGroup(ctx, &objects.NodeGroup{ClusterID: uuid, ProjectID: "p", Name: "extra",
					Role: objects.RoleWorker, NodeCount: 1, Status: objects.CreateInProgress}))
			},
			// A driver result handed over since (a new stack_id).
			"hand-over": func(t *testing.T, uuid string, _ []*objects.NodeGroup) {
				c, err := s.GetClusterByUUID(ctx, uuid)
				must(t, err)
				c.StackID = objects.Str("sim:update:2")
				must(t, s.SaveCluster(ctx, c))
			},
			// A delete.
			"delete": func(t *testing.T, uuid string, _ []*objects.NodeGroup) {
				c, err := s.GetClusterByUUID(ctx, uuid)
				must(t, err)
				c.Status = objects.DeleteInProgress
				must(t, s.SaveCluster(ctx, c))
			},
		} {
			t.Run(name, func(t *testing.T) {
				ev := &events{}
				a := newApplier(s, ev, &certs{})
				uuid := seed(t, s, "stale-"+name, objects.UpdateInProgress, objects.UpdateComplete)
				c, ngs := read(t, s, uuid)
				d := decide(c, ngs, ready(ngs))
				if d.Cluster.Status != objects.UpdateComplete {
					t.Fatalf("decided %s", d.Cluster.Status)
				}
				claim(t, uuid, ngs)
				before, beforeNGs := read(t, s, uuid)
				if _, err := a.Apply(ctx, c, ngs, d); !errors.Is(err, clusterstate.ErrStale) || !errors.Is(err, db.ErrStatusChanged) {
					t.Fatalf("err = %v, want ErrStale", err)
				}
				after, afterNGs := read(t, s, uuid)
				if after.Status != before.Status || objects.Deref(after.APIAddress) != "" || len(afterNGs) != len(beforeNGs) {
					t.Fatalf("the stale decision was written: %s %v, %d nodegroups", after.Status, after.APIAddress, len(afterNGs))
				}
				for i, ng := range afterNGs {
					if !db.NodeGroupUnchanged(beforeNGs[i], ng) || len(ng.NodeAddresses) != 0 {
						t.Fatalf("nodegroup %s changed by the stale decision", ng.Name)
					}
				}
				if got := ev.take(); len(got) != 0 {
					t.Fatalf("events %v", got)
				}
			})
		}
	})
}

// TestApplyAndClaimsNeverInterleave: the status sync (observe, decide,
// apply) and resizes (a claim of the cluster and its worker in one
// transaction, as the handlers do) run at once, many times. Whatever the
// order, a cluster is never UPDATE_COMPLETE while its worker is in
// UPDATE_IN_PROGRESS: a decision lands before a claim, or is dropped (or,
// made after the claim, sees that the back end has not taken up the new
// size).
func TestApplyAndClaimsNeverInterleave(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		a := newApplier(s, &events{}, &certs{})
		for i := range 15 {
			uuid := seed(t, s, fmt.Sprintf("race-%d", i), objects.UpdateInProgress, objects.UpdateComplete)
			var wg sync.WaitGroup
			wg.Add(2)
			var syncErr, claimErr error
			go func() {
				defer wg.Done()
				c, ngs := read(t, s, uuid)
				_, syncErr = a.Apply(ctx, c, ngs, decide(c, ngs, ready(ngs)))
			}()
			go func() {
				defer wg.Done()
				claimErr = s.InTx(ctx, func(ctx context.Context) error {
					c, err := s.GetClusterByUUID(ctx, uuid)
					if err != nil {
						return err
					}
					c.Status = objects.UpdateInProgress
					objects.MarkChanged(c, "status")
					if err := s.SaveClusterIfStatus(ctx, c, []string{objects.UpdateInProgress, objects.UpdateComplete}); err != nil {
						return err
					}
					w, err := s.GetNodeGroupByName(ctx, uuid, "default-worker")
					if err != nil {
						return err
					}
					w.NodeCount, w.Status = 7, objects.UpdateInProgress
					return s.SaveNodeGroupIfStatus(ctx, w, []string{objects.UpdateComplete, objects.UpdateInProgress})
				})
			}()
			wg.Wait()
			must(t, claimErr)
			if syncErr != nil && !errors.Is(syncErr, clusterstate.ErrStale) {
				t.Fatal(syncErr)
			}
			c, ngs := read(t, s, uuid)
			w := ngs[1]
			if w.NodeCount != 7 || w.Status != objects.UpdateInProgress || c.Status != objects.UpdateInProgress {
				t.Fatalf("run %d: cluster %s, worker %s with %d nodes (sync: %v)", i, c.Status, w.Status, w.NodeCount, syncErr)
			}
		}
	})
}
