package capi

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
)

// brokenWorkerMachines makes the in-memory class's worker machine
// template one the in-memory provider fails on: a VM start-up jitter that
// is not a number, which its controller reports on each DevMachine as
// VMProvisioned False with a message (as CAPO reports a Nova error on an
// OpenStackMachine).
func brokenWorkerMachines(t *testing.T) func([]byte) []byte {
	return func(bundle []byte) []byte {
		objs, err := parseClassBundle(LatestClassVersion, bundle)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		broken := 0
		for _, o := range objs {
			if o.GetKind() == "DevMachineTemplate" && strings.HasSuffix(o.GetName(), "-worker") {
				if err := unstructured.SetNestedField(o.Object, "not-a-number",
					"spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupJitter"); err != nil {
					t.Fatal(err)
				}
				broken++
			}
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString("---\n")
			out.Write(data)
		}
		if broken != 1 {
			t.Fatalf("%d worker DevMachineTemplates in the in-memory class, want 1", broken)
		}
		return out.Bytes()
	}
}

// TestRealCAPIStatusReasonNamesTheInfrastructureFailure: against the real
// controllers, a cluster whose worker server cannot be provisioned (the
// in-memory provider's DevMachine fails, as an OpenStackMachine does on a
// Nova error) stays CREATE_IN_PROGRESS with a status_reason that names the
// infrastructure object and its message on one line: a kind no class
// bundle the driver embeds names (the class_dir bundle's), resolved through
// discovery. Health is UNHEALTHY naming the worker; delete then leaves
// nothing behind.
func TestRealCAPIStatusReasonNamesTheInfrastructureFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	l := newLifecycleWith(ctx, t, "infrafail", brokenWorkerMachines(t))
	empty, err := l.s.NewNamespace(ctx, "infrafail-empty")
	if err != nil {
		t.Fatal(err)
	}
	l.create()
	r := l.ref()
	var devMachine string // the worker Machine's
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
		l.sync()
		if l.cluster.Status != objects.CreateInProgress {
			t.Fatalf("create ended while the worker cannot be provisioned: %s", l.state())
		}
		if ms := l.live(realGVRMachine, clusterv1.ClusterTopologyMachineDeploymentNameLabel+"=default-worker"); len(ms) == 1 {
			devMachine, _, _ = unstructured.NestedString(ms[0].Object, "spec", "infrastructureRef", "name")
		}
		reason := deref(l.cluster.StatusReason)
		if devMachine != "" && strings.Contains(reason, "DevMachine "+devMachine+": ") &&
			strings.Contains(reason, "Please check controller logs for errors") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status_reason never named the worker's DevMachine and its failure: %s; DevMachines: %v", l.state(),
				devMachineConditions(t, l, r))
		}
	}
	reason := deref(l.cluster.StatusReason)
	if strings.Contains(reason, "\n") || strings.Contains(reason, "* ") {
		t.Errorf("status_reason not condensed to one line: %q", reason)
	}
	t.Logf("status_reason: %s", reason)
	// The controllers report it so: the worker's DevMachine is not
	// provisioned, with that message.
	if conds := devMachineConditions(t, l, r); !strings.Contains(conds, "Please check controller logs for errors") {
		t.Errorf("the controllers' DevMachines: %s", conds)
	}
	// Health: UNHEALTHY, the worker named; the control plane (available
	// by now, or within moments) ok.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		h := l.notHealthy("a worker that cannot be provisioned", objects.Unhealthy)
		if h.Reason["default-worker"] != "ok" && h.Reason["controlplane"] == "ok" {
			t.Logf("health: %s %v", h.Status, h.Reason)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health reason %v: want the worker named, the control plane ok", h.Reason)
		}
	}

	// Delete, as ClusterDelete does: gone, nothing left.
	l.cluster.Status = objects.DeleteInProgress
	if _, err := l.drv.DeleteCluster(ctx, l.request()); err != nil {
		t.Fatalf("DeleteCluster: %v", err)
	}
	if d := l.await("delete", objects.DeleteInProgress, 2*time.Minute, nil); l.cluster.Status != objects.DeleteComplete || !d.Deleted {
		t.Fatalf("delete ended: %s", l.state())
	}
	l.nothingLeft(empty)
}

// devMachineConditions are the cluster's DevMachines' conditions as the
// controllers wrote them, for messages.
func devMachineConditions(t *testing.T, l *lifecycle, r ref) string {
	t.Helper()
	var b strings.Builder
	for _, u := range l.live(realGVRMachine, "") {
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "name")
		if kind != "DevMachine" {
			continue
		}
		gvr, err := l.drv.resource("infrastructure.cluster.x-k8s.io/v1beta2", kind)
		if err != nil {
			t.Fatal(err)
		}
		dm, err := l.dyn.Resource(gvr).Namespace(r.Namespace).Get(l.ctx, name, metav1.GetOptions{})
		if err != nil {
			b.WriteString(name + ": " + err.Error() + "; ")
			continue
		}
		for _, c := range unstructuredConditions(dm) {
			b.WriteString(name + " " + describe(&c) + "; ")
		}
	}
	return b.String()
}
