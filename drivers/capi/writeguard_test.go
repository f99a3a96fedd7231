package capi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Observe called for the same cluster from several goroutines at once
// sizes an autoscaled nodegroup's MachineDeployment once: the PATCH is
// slowed down so that every other observation reads the cache before the
// write lands (without the driver's writeGuard, each of them patches).
func TestConcurrentObserveSizesAutoscaledNodeGroupOnce(t *testing.T) {
	var patches atomic.Int64
	e := newEnvWith(t, Options{CreateTimeout: time.Hour}, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/machinedeployments/") {
				patches.Add(1)
				time.Sleep(300 * time.Millisecond)
			}
			return rt.RoundTrip(r)
		})
	})
	c := e.newCluster("concurrent", map[string]string{"kube_tag": "v1.33.4", "auto_scaling_enabled": "true"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 3, MinNodeCount: 1, MaxNodeCount: ptr(int64(5))})
	ctx := context.Background()
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	p := &capi{t: t, e: e, r: r, c: c}
	topo := e.getCluster(t, r).Spec.Topology.Workers.MachineDeployments[0]
	p.machineDeployment("default-worker", 1)
	mdName := r.Name + "-default-worker"
	u, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Get(ctx, mdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(topo.Metadata.Annotations)
	if _, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache shows the autoscaled MachineDeployment", func() (bool, string) {
		obs := e.d.cache.Load().observe(r.Namespace, r.Name)
		return obs.Cluster != nil && !e.d.written.behind(r, string(obs.Cluster.UID), obs.Cluster.Generation, e.d.now()) &&
			appliedAutoscaled(obs.Deployments["default-worker"]), "not yet"
	})
	ngs := e.nodeGroups(c)
	if ngs[1].Status != objects.CreateInProgress {
		t.Fatalf("nodegroup %s, want %s", ngs[1].Status, objects.CreateInProgress)
	}
	req := drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: objects.Clone(c)}}
	for _, ng := range ngs {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	patches.Store(0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.d.Observe(ctx, req); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := patches.Load(); n != 1 {
		t.Errorf("%d PATCHes of the MachineDeployment, want 1", n)
	}
	got, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Get(ctx, mdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 3 || got.GetAnnotations()[annotationSizedNodeCount] != "3" {
		t.Errorf("MachineDeployment replicas %d, annotations %v; want sized to 3", n, got.GetAnnotations())
	}
	// Once the cache shows the write, the guard forgets it.
	eventually(t, "the cache shows the MachineDeployment sized", func() (bool, string) {
		md := e.d.cache.Load().observe(r.Namespace, r.Name).Deployments["default-worker"]
		return md != nil && md.Annotations[annotationSizedNodeCount] == "3", "not yet"
	})
	if _, err := e.d.Observe(ctx, req); err != nil {
		t.Fatal(err)
	}
	e.d.guard.mu.Lock()
	left, locks := len(e.d.guard.wrote), len(e.d.guard.locks)
	e.d.guard.mu.Unlock()
	if left != 0 || locks != 0 || patches.Load() != 1 {
		t.Errorf("after the cache caught up: %d writes remembered, %d locks, %d PATCHes; want 0, 0, 1", left, locks, patches.Load())
	}
}

// A write waiting for its key's lock gives up when its ctx ends.
func TestWriteGuardLockHonoursContext(t *testing.T) {
	var g writeGuard
	unlock, err := g.lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.lock(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock: %v, want the deadline", err)
	}
	if _, err := g.lock(context.Background(), "other"); err != nil {
		t.Fatal(err) // other keys are not held up
	}
	unlock()
	u, err := g.lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	u()
}

// Observe called for the same deleted cluster from several goroutines at
// once cleans up once: each Secret is deleted once, the credential revoked
// once, and every observation reports the cluster gone (without the guard,
// measured: 32 Secret DELETEs for 4 Secrets and 8 revocations).
func TestConcurrentObserveCleansUpOnce(t *testing.T) {
	var secretDeletes atomic.Int64
	e := newEnvWith(t, Options{CreateTimeout: time.Hour}, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/secrets/") {
				secretDeletes.Add(1)
				time.Sleep(100 * time.Millisecond)
			}
			return rt.RoundTrip(r)
		})
	})
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ctx := context.Background()
	p.heldDeletion(c, "MachineDeployments default-worker are being deleted")
	e.syncUntil(t, c, objects.DeleteInProgress, "")
	labelled := LabelClusterUUID + "=" + *c.UUID
	secrets := len(e.secretNames(t, p.r.Namespace, labelled))
	if secrets == 0 {
		t.Fatal("no labelled Secrets before the delete")
	}
	if _, err := e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Patch(ctx, p.r.Name, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache shows the Cluster gone", func() (bool, string) {
		return e.d.cache.Load().observe(p.r.Namespace, p.r.Name).Cluster == nil, "still there"
	})
	req := drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: objects.Clone(c)}}
	for _, ng := range e.nodeGroups(c) {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	secretDeletes.Store(0)
	var wg sync.WaitGroup
	phases := make([]drivers.Phase, 8)
	for i := range phases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs, err := e.d.Observe(ctx, req)
			if err != nil {
				t.Error(err)
			}
			phases[i] = obs.Phase
		}()
	}
	wg.Wait()
	for i, ph := range phases {
		if ph != drivers.PhaseGone {
			t.Errorf("observation %d: %s, want %s", i, ph, drivers.PhaseGone)
		}
	}
	if n := secretDeletes.Load(); n != int64(secrets) {
		t.Errorf("%d Secret DELETEs, want %d (one each)", n, secrets)
	}
	e.creds.mu.Lock()
	revoked := len(e.creds.revoked)
	e.creds.mu.Unlock()
	if revoked != 1 {
		t.Errorf("credential revoked %d times, want once", revoked)
	}
	if n := e.secretNames(t, "", labelled); len(n) != 0 {
		t.Errorf("labelled Secrets left: %v", n)
	}
}
