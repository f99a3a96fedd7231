package capi

// Health through the real controllers: what sync_cluster_health_status
// stores (health_status, health_status_reason) for a cluster of the
// lifecycle, from the driver's Monitor, checked against the controllers'
// own conditions.

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// health polls the cluster's health as sync_cluster_health_status does
// (the driver's Monitor, then PollHealth) and stores it on the row.
func (l *lifecycle) health() drivers.Health {
	l.t.Helper()
	mon, err := l.drv.Monitor(l.ctx, l.request())
	if err != nil || mon == nil {
		l.t.Fatalf("Monitor: %v (monitor %v)", err, mon)
	}
	h, err := mon.PollHealth(l.ctx)
	if err != nil {
		l.t.Fatalf("PollHealth: %v", err)
	}
	l.cluster.HealthStatus, l.cluster.HealthStatusReason = h.Status, h.Reason
	return h
}

// healthy waits (the health job polls again; the informers follow the
// controllers within a moment) until the cluster's health is HEALTHY with
// "ok" for the cluster, its API (the management cluster's probe of it),
// its control plane and each of nodegroups' MachineDeployments, and
// nothing else; then checks that against the controllers: the Cluster
// Available and its RemoteConnectionProbe True, every Machine's node
// healthy.
func (l *lifecycle) healthy(what string, nodegroups ...string) {
	l.t.Helper()
	want := map[string]string{"cluster": "ok", "api": "ok", "controlplane": "ok"}
	for _, ng := range nodegroups {
		want[ng] = "ok"
	}
	var h drivers.Health
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if h = l.health(); h.Status == objects.Healthy && maps.Equal(h.Reason, want) {
			break
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: health %s %v, want HEALTHY %v", what, h.Status, h.Reason, want)
		}
	}
	cl, err := l.drv.liveCluster(l.ctx, l.ref())
	if err != nil {
		l.t.Fatal(err)
	}
	for _, c := range []string{clusterv1.AvailableCondition, clusterv1.ClusterRemoteConnectionProbeCondition} {
		if !isTrue(cl.Status.Conditions, c) {
			l.t.Errorf("%s: HEALTHY while the controllers report the Cluster %s", what, describe(cond(cl.Status.Conditions, c)))
		}
	}
	for _, u := range l.live(realGVRMachine, "") {
		if u.GetDeletionTimestamp() != nil {
			continue // going: its node is being drained
		}
		if st, msg := conditionOf(&u, clusterv1.MachineNodeHealthyCondition); st != "True" {
			l.t.Errorf("%s: HEALTHY while the controllers report Machine %s NodeHealthy %s: %s", what, u.GetName(), st, msg)
		}
	}
}

// notHealthy checks that the health polled now is not HEALTHY, and gives
// its reason.
func (l *lifecycle) notHealthy(what string, status ...string) drivers.Health {
	l.t.Helper()
	h := l.health()
	if !slices.Contains(status, h.Status) || len(h.Reason) == 0 {
		l.t.Errorf("%s: health %s %v, want one of %v with a reason", what, h.Status, h.Reason, status)
	}
	return h
}

var gvrNodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// workload is a client of the cluster's workload API server (the
// in-memory provider's), through the kubeconfig Cluster API wrote.
func (l *lifecycle) workload() dynamic.Interface {
	l.t.Helper()
	r := l.ref()
	s, err := l.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(r.Namespace).
		Get(l.ctx, r.Name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	enc, _, _ := unstructured.NestedString(s.Object, "data", "value")
	kc, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		l.t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		l.t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	return dyn
}

// setNodeReady sets the Ready condition of a workload cluster's Node, as
// its kubelet would report it.
func (l *lifecycle) setNodeReady(wl dynamic.Interface, node string, ready bool) {
	l.t.Helper()
	status, reason, msg := "True", "KubeletReady", "kubelet is posting ready status"
	if !ready {
		status, reason, msg = "False", "KubeletNotReady", "container runtime network not ready: the lifecycle test's fault"
	}
	// A merge patch replaces the list: the pressure conditions the
	// provider wrote are written again as they were.
	now := time.Now().UTC().Format(time.RFC3339)
	conds := []map[string]string{{"type": "Ready", "status": status, "reason": reason, "message": msg}}
	for _, p := range [][2]string{{"MemoryPressure", "KubeletHasSufficientMemory"}, {"DiskPressure", "KubeletHasNoDiskPressure"},
		{"PIDPressure", "KubeletHasSufficientPID"}} {
		conds = append(conds, map[string]string{"type": p[0], "status": "False", "reason": p[1]})
	}
	for _, c := range conds {
		c["lastTransitionTime"], c["lastHeartbeatTime"] = now, now
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		l.t.Fatal(err)
	}
	patch := string(body)
	if _, err := wl.Resource(gvrNodes).Patch(l.ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		l.t.Fatalf("patch Node %s Ready %s in the workload cluster: %v", node, status, err)
	}
}

// nodeFault makes the Node of one of the worker's Machines NotReady in
// the workload cluster: the controllers report the Machine's node
// unhealthy, and health_status goes UNHEALTHY naming that Machine's node,
// the cluster's status untouched; the Node Ready again, health is HEALTHY.
func (l *lifecycle) nodeFault(nodegroups ...string) {
	l.t.Helper()
	var m clusterv1.Machine
	items := l.live(realGVRMachine, clusterv1.ClusterTopologyMachineDeploymentNameLabel+"=default-worker")
	if len(items) == 0 {
		l.t.Fatal("no worker Machine")
	}
	if err := fromUnstructured(items[0].Object, &m); err != nil {
		l.t.Fatal(err)
	}
	node := m.Status.NodeRef.Name
	wl := l.workload()
	l.setNodeReady(wl, node, false)
	status := l.cluster.Status
	key := m.Name + ".node"
	var h drivers.Health
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		h = l.health()
		if h.Status == objects.Unhealthy && strings.Contains(h.Reason[key], "NodeHealthy False") {
			break
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("Node %s NotReady: health %s %v, want UNHEALTHY with %s NodeHealthy False", node, h.Status, h.Reason, key)
		}
	}
	u, err := l.dyn.Resource(realGVRMachine).Namespace(m.Namespace).Get(l.ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	if st, msg := conditionOf(u, clusterv1.MachineNodeHealthyCondition); st != "False" {
		l.t.Errorf("UNHEALTHY (%s) while the controllers report Machine %s NodeHealthy %s: %s", h.Reason[key], m.Name, st, msg)
	}
	l.t.Logf("Node %s NotReady: health %s, %s: %s", node, h.Status, key, h.Reason[key])
	// The status sync leaves the settled cluster as it is: health is not
	// status.
	obs, err := l.drv.Observe(l.ctx, drivers.ObserveRequest{ClusterRequest: l.request()})
	if err != nil {
		l.t.Fatal(err)
	}
	in := sm.Input{Cluster: objects.Clone(l.cluster), Observation: obs, Now: time.Now()}
	for _, ng := range l.ngs {
		in.NodeGroups = append(in.NodeGroups, objects.Clone(ng))
	}
	if d := sm.Decide(in); d.Cluster != nil && d.Cluster.Status != status {
		l.t.Errorf("an unhealthy node moved the cluster from %s to %s (%s)", status, d.Cluster.Status, deref(d.Cluster.StatusReason))
	}
	l.setNodeReady(wl, node, true)
	l.healthy("the Node Ready again", nodegroups...)
}
