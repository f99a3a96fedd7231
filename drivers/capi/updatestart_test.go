package capi

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// claimUpdate plays the conductor's claim of an update at the env's clock:
// the cluster row in UPDATE_IN_PROGRESS, written (updated_at) now.
func (e *env) claimUpdate(c *objects.Cluster) {
	now := e.d.now()
	c.Status, c.StatusReason, c.UpdatedAt = objects.UpdateInProgress, nil, &now
}

// advance moves the env's clock by d.
func (e *env) advance(d time.Duration) time.Time {
	now := e.now.Load().Add(d)
	e.now.Store(&now)
	return now
}

// observeStarted observes c until the cache shows the Cluster's last write
// and returns the Started it reports.
func (e *env) observeStarted(t *testing.T, c *objects.Cluster, want time.Time) {
	t.Helper()
	eventually(t, "Started reported", func() (bool, string) {
		req := drivers.ObserveRequest{ClusterRequest: e.request(c)}
		obs, err := e.d.Observe(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return obs.Started.Equal(want), "Started " + obs.Started.String() + ", want " + want.String()
	})
}

// TestResizeThatNeverConvergesTimesOut: a resize whose MachineDeployment
// stays at 1 of 3 ends UPDATE_FAILED on the update deadline, counted from
// when the resize was applied (recorded on the Cluster, so that a restarted
// conductor's driver reports the same start), with a reason naming what did
// not converge. A repeat of the same request keeps the start; a retry after
// the failure (a new claim) gets a new one.
func TestResizeThatNeverConvergesTimesOut(t *testing.T) {
	e := newEnv(t)
	e.timeouts = statusmachine.Timeouts{Create: time.Hour, UpdateAsCreate: true}
	ctx := context.Background()
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	c.CreateTimeout = ptr(int64(30)) // the stack's timeout, as with Heat
	worker := e.nodeGroups(c)[1]

	e.claimUpdate(c)
	start := e.d.now().UTC().Truncate(time.Second)
	if err := e.resize(ctx, c, 3, nil, worker); err != nil {
		t.Fatal(err)
	}
	cl := e.getCluster(t, p.r)
	if got := cl.Annotations[annotationUpdateStarted]; got != start.Format(time.RFC3339) {
		t.Fatalf("update-started-at %q, want %s", got, start.Format(time.RFC3339))
	}
	// The topology controller wants 3; only 1 comes up.
	if _, err := e.dyn.Resource(gvrMD).Namespace(p.r.Namespace).Patch(ctx, p.r.Name+"-default-worker", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "capi-topology"}); err != nil {
		t.Fatal(err)
	}
	stuck := []metav1.Condition{condition("Available", T, "Available", ""), condition("RollingOut", F, "NotRollingOut", ""),
		condition("ScalingUp", T, "ScalingUp", "Scaling up MachineSet lifecycle-default-worker-x from 1 to 3 replicas"),
		condition("ScalingDown", F, "NotScalingDown", "")}
	p.mdStatus("default-worker", 3, 1, 1, stuck...)
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = healthyConds()
		st.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}
	})
	e.syncUntil(t, c, objects.UpdateInProgress, "waiting for nodegroups: default-worker")
	if r := deref(e.nodeGroups(c)[1].StatusReason); !strings.Contains(r, "from 1 to 3 replicas") {
		t.Fatalf("nodegroup reason %q", r)
	}
	e.observeStarted(t, c, start)

	// The same request again (a lost reply), ten minutes on: the start
	// stays.
	e.advance(10 * time.Minute)
	if err := e.resize(ctx, c, 3, nil, worker); err != nil {
		t.Fatal(err)
	}
	if got := e.getCluster(t, p.r).Annotations[annotationUpdateStarted]; got != start.Format(time.RFC3339) {
		t.Fatalf("a repeated request moved update-started-at to %q (first applied %s)", got, start.Format(time.RFC3339))
	}

	// A conductor restart: a new driver reads the start from the Cluster.
	e.d = e.restartedDriver(t)
	e.observeStarted(t, c, start)
	e.advance(19 * time.Minute) // 29 min after the start
	e.syncUntil(t, c, objects.UpdateInProgress, "waiting for nodegroups: default-worker")

	e.advance(2 * time.Minute) // past create_timeout (30 min)
	e.syncUntil(t, c, objects.UpdateFailed, "timed out: ")
	if reason := deref(c.StatusReason); !strings.Contains(reason, "nodegroup default-worker failed: timed out: ") ||
		!strings.Contains(reason, "from 1 to 3 replicas") {
		t.Errorf("reason %q does not name what did not converge", reason)
	}

	// Retried after the failure: a new claim, the same size; a new start,
	// so the retry is not failed at once.
	e.advance(5 * time.Minute)
	e.claimUpdate(c)
	retried := e.d.now().UTC().Truncate(time.Second)
	if err := e.resize(ctx, c, 3, nil, worker); err != nil {
		t.Fatal(err)
	}
	if got := e.getCluster(t, p.r).Annotations[annotationUpdateStarted]; got != retried.Format(time.RFC3339) {
		t.Fatalf("retry: update-started-at %q, want %s", got, retried.Format(time.RFC3339))
	}
	e.observeStarted(t, c, retried)
	e.advance(29 * time.Minute)
	e.syncUntil(t, c, objects.UpdateInProgress, "waiting for nodegroups: default-worker")
}

// TestUpgradeStartedIsReported: an upgrade, applied through apply like
// every update, records its start too; a cluster being created reports
// the Cluster's creation, not an update's start.
func TestUpgradeStartedIsReported(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	if _, ok := e.getCluster(t, p.r).Annotations[annotationUpdateStarted]; ok {
		t.Fatal("a create recorded an update start")
	}
	e.advance(time.Hour)
	e.claimUpdate(c)
	start := e.d.now().UTC().Truncate(time.Second)
	next := &objects.ClusterTemplate{UUID: ptr("tmpl-next"), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"),
		Labels: map[string]string{"kube_tag": "v1.34.1"}}
	if err := e.upgrade(context.Background(), c, next, 1, nil); err != nil {
		t.Fatal(err)
	}
	e.store.mu.Lock()
	e.store.templates["tmpl-next"] = next
	e.store.mu.Unlock()
	e.observeStarted(t, c, start)
	// Settled, nothing is reported as started.
	c.Status = objects.UpdateFailed
	e.observeStarted(t, c, time.Time{})
}

// restartedDriver is a new driver on the env's API server and clock, as a
// restarted conductor has: nothing in memory.
func (e *env) restartedDriver(t *testing.T) *Driver {
	t.Helper()
	return startDriver(t, Options{CreateTimeout: time.Hour}, Deps{Dynamic: e.dyn, Core: NewCore(e.dyn), Certs: fakeCerts{},
		Credentials: e.creds, Now: func() time.Time { return *e.now.Load() }}, slog.New(slog.DiscardHandler))
}
