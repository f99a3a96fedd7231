package capi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// The scale benchmarks (issue #22) put 1,000 and then 10,000 Magnum
// clusters into the test API server, each with what Cluster API would have
// made of it once it is up: the topology Cluster the driver builds, a
// KubeadmControlPlane, one MachineDeployment, a control-plane and a worker
// Machine, an OpenStackCluster and two OpenStackMachines, with the status
// the controllers report. The objects are created directly (no
// controllers); creating them is not measured. `make bench-capi-scale`
// runs them:
//
//	go test -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 180m ./drivers/capi/
const (
	scalePerProject = 100 // clusters per project (namespace)
	scaleCreators   = 16  // fixture objects created at once
	scaleSyncers    = 32  // clusters judged at once: the sync job's default Workers
)

// scaleFixture is the set of clusters created so far; it only grows, so the
// 10,000-cluster case reuses the first 1,000.
type scaleFixture struct {
	dyn        dynamic.Interface
	run        string // distinguishes this run's names
	template   *objects.ClusterTemplate
	clusters   []*objects.Cluster
	nodegroups [][]*objects.NodeGroup
}

// objectsPerScaleCluster is what one fixture cluster holds in the
// informers' view: Cluster, KubeadmControlPlane, MachineDeployment, two
// Machines, OpenStackCluster, two OpenStackMachines.
const objectsPerScaleCluster = 8

// grow creates clusters until there are n, scaleCreators at a time.
func (f *scaleFixture) grow(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	from := len(f.clusters)
	if n <= from {
		return
	}
	begin := time.Now()
	for p := from / scalePerProject; p*scalePerProject < n; p++ {
		if err := NewCore(f.dyn).EnsureNamespace(ctx, namespaceFor("magnum", f.project(p)), nil); err != nil {
			b.Fatal(err)
		}
	}
	f.clusters = append(f.clusters, make([]*objects.Cluster, n-from)...)
	f.nodegroups = append(f.nodegroups, make([][]*objects.NodeGroup, n-from)...)
	next := atomic.Int64{}
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, scaleCreators)
	for range scaleCreators {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f.create(ctx, i); err != nil {
					errs <- fmt.Errorf("cluster %d: %w", i, err)
					next.Store(int64(n)) // the others stop too
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	took := time.Since(begin)
	b.Logf("fixture: clusters %d to %d created in %s (%.0f objects/s with their status)", from, n,
		took.Round(time.Millisecond), float64((n-from)*objectsPerScaleCluster)/took.Seconds())
}

func (f *scaleFixture) project(p int) string { return fmt.Sprintf("scale%s%04d", f.run, p) }

// create writes cluster i and what Cluster API would have made of it, as a
// running cluster with one master and one worker.
func (f *scaleFixture) create(ctx context.Context, i int) error {
	uuid := fmt.Sprintf("%s-0000-4000-8000-%012d", f.run, i)
	c := &objects.Cluster{UUID: ptr(uuid), Name: ptr(fmt.Sprintf("scale-%05d", i)), ProjectID: ptr(f.project(i / scalePerProject)),
		UserID: ptr("user-1"), ClusterTemplateID: f.template.UUID, Keypair: ptr("kp"), Labels: map[string]string{"kube_tag": "v1.33.4"},
		FloatingIPEnabled: true, MasterLBEnabled: true, Status: objects.CreateInProgress, CreateTimeout: ptr(int64(60))}
	ngs := []*objects.NodeGroup{
		{UUID: uuid + "-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, ClusterID: uuid,
			Status: objects.CreateInProgress},
		{UUID: uuid + "-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 1, IsDefault: true, ClusterID: uuid,
			Status: objects.CreateInProgress},
	}
	r := ref{Namespace: namespaceFor("magnum", deref(c.ProjectID)), Name: capiNameFor(c)}
	c.StackID = ptr(r.String())
	f.clusters[i], f.nodegroups[i] = c, ngs

	labels, err := DefaultLabelSchema().Parse(mergedLabels(c, f.template))
	if err != nil {
		return err
	}
	cl, err := desiredCluster(spec{Cluster: c, Template: f.template, NodeGroups: ngs, Labels: labels, Namespace: r.Namespace,
		Name: r.Name, ClassVersion: LatestClassVersion, IdentityRef: credentialSecretName(r.Name),
		Annotations: map[string]string{annotationCreateDeadline: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}})
	if err != nil {
		return err
	}
	cl.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: fmt.Sprintf("203.0.%d.%d", i/250%250, i%250+1), Port: 6443}
	if err := f.createWithStatus(ctx, gvrCluster, r.Namespace, cl, func(u *unstructured.Unstructured) any {
		return clusterv1.ClusterStatus{ObservedGeneration: u.GetGeneration(), Conditions: healthyConds(),
			ControlPlane: &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}}
	}); err != nil {
		return err
	}

	owned := func(name string, extra map[string]string) metav1.ObjectMeta {
		l := map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelClusterUUID: uuid}
		for k, v := range extra {
			l[k] = v
		}
		return metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: l}
	}
	one := int32(1)
	kcp := map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
		"metadata": owned(r.Name+"-cp", nil),
		"spec": map[string]any{"replicas": 1, "version": "v1.33.4",
			"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef("OpenStackMachineTemplate", r.Name+"-cp")}}},
	}
	if err := f.createWithStatus(ctx, gvrKCP, r.Namespace, kcp, func(u *unstructured.Unstructured) any {
		return map[string]any{"observedGeneration": u.GetGeneration(), "replicas": 1, "readyReplicas": 1,
			"availableReplicas": 1, "upToDateReplicas": 1, "version": "v1.33.4",
			"conditions": []metav1.Condition{condition("Available", T, "Available", ""), condition("RollingOut", F, "NotRollingOut", ""),
				condition("ScalingUp", F, "NotScalingUp", ""), condition("ScalingDown", F, "NotScalingDown", "")}}
	}); err != nil {
		return err
	}
	md := &clusterv1.MachineDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineDeployment"},
		ObjectMeta: owned(r.Name+"-default-worker", map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: "default-worker"}),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: r.Name, Replicas: &one,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: "default-worker"}},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{ClusterName: r.Name,
				Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr("bootstrap")}, InfrastructureRef: infraRef("OpenStackMachineTemplate", r.Name+"-w")}},
		},
	}
	if err := f.createWithStatus(ctx, gvrMD, r.Namespace, md, func(u *unstructured.Unstructured) any {
		return clusterv1.MachineDeploymentStatus{ObservedGeneration: u.GetGeneration(), Replicas: &one,
			UpToDateReplicas: &one, AvailableReplicas: &one, ReadyReplicas: &one, Conditions: settledMDConds()}
	}); err != nil {
		return err
	}
	for j, m := range []struct {
		name, ip string
		extra    map[string]string
	}{
		{r.Name + "-cp-0", fmt.Sprintf("10.%d.%d.10", i/250%250, i%250), map[string]string{clusterv1.MachineControlPlaneLabel: ""}},
		{r.Name + "-default-worker-0", fmt.Sprintf("10.%d.%d.20", i/250%250, i%250),
			map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: "default-worker"}},
	} {
		machine := &clusterv1.Machine{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
			ObjectMeta: owned(m.name, m.extra),
			Spec: clusterv1.MachineSpec{ClusterName: r.Name, Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr("bootstrap")},
				InfrastructureRef: infraRef("OpenStackMachine", m.name), ProviderID: fmt.Sprintf("openstack:///srv-%d-%d", i, j)},
		}
		if err := f.createWithStatus(ctx, gvrMachine, r.Namespace, machine, func(*unstructured.Unstructured) any {
			return clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: m.ip}},
				NodeRef: clusterv1.MachineNodeReference{Name: m.name}}
		}); err != nil {
			return err
		}
		osm := map[string]any{
			"apiVersion": gvrOSM.GroupVersion().String(), "kind": "OpenStackMachine",
			"metadata": owned(m.name, nil),
			"spec": map[string]any{"flavor": map[string]any{"filter": map[string]any{"name": "m1.large"}},
				"image":      map[string]any{"filter": map[string]any{"name": "ubuntu-2404-kube-v1.33.4"}},
				"providerID": fmt.Sprintf("openstack:///srv-%d-%d", i, j), "sshKeyName": "kp"},
		}
		if err := f.createWithStatus(ctx, gvrOSM, r.Namespace, osm, nil); err != nil {
			return err
		}
	}
	osc := map[string]any{
		"apiVersion": gvrOSC.GroupVersion().String(), "kind": "OpenStackCluster",
		"metadata": owned(r.Name, nil),
		"spec": map[string]any{"identityRef": map[string]any{"cloudName": "openstack", "name": credentialSecretName(r.Name)},
			"externalNetwork": map[string]any{"id": "6f0d5f8e-3c2a-4b7e-9a51-2d4c8e1f0a77"}, "managedSubnets": []any{map[string]any{"cidr": "10.0.0.0/24"}}},
	}
	return f.createWithStatus(ctx, gvrOSC, r.Namespace, osc, nil)
}

// createWithStatus creates obj, then (when status is not nil) writes the
// status the controller would report.
func (f *scaleFixture) createWithStatus(ctx context.Context, gvr schema.GroupVersionResource, ns string, obj any, status func(*unstructured.Unstructured) any) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	got, err := f.dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create %s %s/%s: %w", gvr.Resource, ns, u.GetName(), err)
	}
	if status == nil {
		return nil
	}
	st, err := toUnstructuredMap(status(got))
	if err != nil {
		return err
	}
	got.Object["status"] = st
	if _, err := f.dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of %s %s/%s: %w", gvr.Resource, ns, u.GetName(), err)
	}
	return nil
}

// heapInUse is the live heap after two collections (the second frees what
// the first found unreachable through finalizers).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cpuTime is the CPU time (user and system) of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScale is the driver against a management cluster of 1,000 and
// then 10,000 running clusters: the informers' start and memory, one
// status-sync cycle (Observe of every cluster, as the sync job calls it),
// then the create throughput with the 10,000 in place.
func BenchmarkScale(b *testing.B) {
	needServer(b)
	dyn, err := dynamic.NewForConfig(server.Config)
	if err != nil {
		b.Fatal(err)
	}
	f := &scaleFixture{dyn: dyn, run: randHex(4), template: &objects.ClusterTemplate{UUID: ptr("tmpl-scale"), ImageID: ptr("img-1"),
		FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"), ExternalNetworkID: ptr("ext-net"), DNSNameserver: ptr("8.8.8.8"),
		Labels: map[string]string{"kube_tag": "v1.33.4"}, Coe: "kubernetes"}}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sync/clusters=%d", n), func(b *testing.B) { benchmarkScaleSync(b, f, n) })
	}
	b.Run("create/clusters=200", func(b *testing.B) { benchmarkScaleCreate(b, 200) })
}

func benchmarkScaleSync(b *testing.B, f *scaleFixture, n int) {
	f.grow(b, n)
	var requests atomic.Int64
	counted, err := dynamic.NewForConfig(countingConfig(&requests))
	if err != nil {
		b.Fatal(err)
	}
	// No reachability probe (one request every 10 s by default) during a cycle.
	d, err := New(Options{CreateTimeout: time.Hour, ProbeInterval: time.Hour}, Deps{Dynamic: counted, Core: NewCore(counted),
		Certs: fakeCerts{}, Credentials: &fakeCreds{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	heapBefore := heapInUse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin, cpuBegin := time.Now(), cpuTime(b)
	if err := d.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// Start waits for the informers' first lists; each lists every object
	// of the server's earlier runs too, so count this run's.
	startWall, startCPU := time.Since(begin), cpuTime(b)-cpuBegin
	cache := d.cache.Load()
	for _, inf := range []struct {
		name string
		got  int
		want int
	}{
		{"clusters", len(cache.clusters.GetStore().List()), n},
		{"machine deployments", len(cache.deployments.GetStore().List()), n},
		{"machines", len(cache.machines.GetStore().List()), 2 * n},
		{"control planes", len(cache.controlPlanes.GetStore().List()), n},
		{"infrastructure clusters", infraCached(cache, "OpenStackCluster"), n},
		{"infrastructure machines", infraCached(cache, "OpenStackMachine"), 2 * n},
	} {
		if inf.got < inf.want {
			b.Fatalf("%d %s cached after the start, want at least %d", inf.got, inf.name, inf.want)
		}
	}
	heap := heapInUse() - heapBefore

	before := requests.Load()
	var wall, cpu time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime(b)
		obs := syncCycle(b, d, f.template, f.clusters[:n], f.nodegroups[:n])
		wall += time.Since(t0)
		cpu += cpuTime(b) - c0
		// Every cluster is up: the cycle must have judged each one ready
		// with its two node addresses, from the cache alone.
		for i, o := range obs {
			if o.Phase != drivers.PhaseReady || o.APIAddress == "" || len(o.NodeGroups) != 2 {
				b.Fatalf("cluster %d observed as %s (%q), API %q, %d nodegroups", i, o.Phase, o.Reason, o.APIAddress, len(o.NodeGroups))
			}
			for _, ng := range o.NodeGroups {
				if ng.Phase != drivers.PhaseReady || len(ng.NodeAddresses) != 1 {
					b.Fatalf("cluster %d: nodegroup observed as %s (%q), addresses %v", i, ng.Phase, ng.Reason, ng.NodeAddresses)
				}
			}
		}
	}
	cycles := float64(b.N)
	if reqs := requests.Load() - before; reqs != 0 {
		b.Errorf("%d API requests during %d sync cycles, want none", reqs, b.N)
	}
	b.ReportMetric(wall.Seconds()/cycles, "s/cycle")
	b.ReportMetric(cpu.Seconds()/cycles, "cpu-s/cycle")
	b.ReportMetric(float64(cpu.Microseconds())/cycles/float64(n), "cpu-us/cluster")
	b.ReportMetric(float64(heap)/(1<<20), "MiB-informers")
	b.ReportMetric(float64(heap)/float64(n)/1024, "KiB-informers/cluster")
	b.ReportMetric(startWall.Seconds(), "s-start")
	b.ReportMetric(startCPU.Seconds(), "cpu-s-start")
}

// syncCycle observes every cluster as the sync job does: scaleSyncers at
// once, each on copies of the rows (periodic.observeRequest).
func syncCycle(b *testing.B, d drivers.Driver, t *objects.ClusterTemplate, clusters []*objects.Cluster, ngs [][]*objects.NodeGroup) []drivers.Observation {
	ctx := context.Background()
	out := make([]drivers.Observation, len(clusters))
	errs := make([]error, len(clusters))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range scaleSyncers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(clusters) {
					return
				}
				req := drivers.ObserveRequest{}
				req.Cluster, req.Template = objects.Clone(clusters[i]), objects.Clone(t)
				for _, ng := range ngs[i] {
					req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
				}
				out[i], errs[i] = d.Observe(ctx, req)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("cluster %d: %v", i, err)
		}
	}
	return out
}

// benchmarkScaleCreate creates n clusters through the driver
// (CreateCluster: namespace, ClusterClass bundle, credential and CA
// Secrets, the topology Cluster, each written by a server-side apply),
// scaleCreators at once, with whatever the server already holds.
func benchmarkScaleCreate(b *testing.B, n int) {
	var applies atomic.Int64
	e := newEnvWith(b, Options{CreateTimeout: time.Hour}, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
				applies.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	projects := make([]string, n/scalePerProject+1)
	for p := range projects {
		projects[p] = randHex(16)
	}
	var wall time.Duration
	var created, applied int64
	for b.Loop() {
		clusters := make([]*objects.Cluster, n)
		for i := range clusters {
			c := e.newCluster(fmt.Sprintf("create-%04d", i), map[string]string{"kube_tag": "v1.33.4"},
				&objects.NodeGroup{Name: "default-worker", NodeCount: 1})
			c.ProjectID = ptr(projects[i%len(projects)])
			clusters[i] = c
		}
		applies.Store(0)
		t0 := time.Now()
		next := atomic.Int64{}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for range scaleCreators {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					errs[i] = e.create(context.Background(), clusters[i], 60)
				}
			})
		}
		wg.Wait()
		wall += time.Since(t0)
		created += int64(n)
		applied += applies.Load()
		for i, err := range errs {
			if err != nil {
				b.Fatalf("create %d: %v", i, err)
			}
		}
	}
	b.ReportMetric(float64(created)/wall.Seconds(), "clusters/s")
	b.ReportMetric(float64(applied)/wall.Seconds(), "applies/s")
	b.ReportMetric(float64(applied)/float64(created), "applies/cluster")
}

// infraCached is the number of objects of an infrastructure kind in the
// cache (0 when the kind is not watched).
func infraCached(c *stateCache, kind string) int {
	c.infra.mu.Lock()
	defer c.infra.mu.Unlock()
	for _, w := range c.infra.watched {
		if w.kind.GroupKind.Kind == kind {
			return len(w.inf.GetStore().List())
		}
	}
	return 0
}
