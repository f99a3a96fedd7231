package capi

// The driver conformance suite (drivers/drivertest) against the Cluster API
// driver on the real Cluster API controllers and webhooks (realcapi_test.go's
// server) with the in-memory infrastructure provider, as
// TestRealCAPIDriverLifecycle runs it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/drivertest"
)

var (
	gvrAdmissionPolicy  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	gvrAdmissionBinding = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// realHarness gives the suite the driver on the real controllers.
type realHarness struct {
	t   *testing.T
	d   *Driver
	dyn dynamic.Interface
}

func (h *realHarness) Driver() drivers.Driver { return h.d }

func (h *realHarness) Fixture() drivertest.Fixture {
	_, tmpl, _ := defaultMagnumCluster()
	tmpl.UUID, tmpl.Name = ptr("tmpl-conformance-"+randHex(3)), ptr("conformance")
	tmpl.ServerType, tmpl.ClusterDistro = ptr("vm"), ptr("ubuntu")
	tmpl.Labels = map[string]string{"kube_tag": "v1.33.4"}
	// As a default Magnum template: the API gets a floating IP (without
	// one, and without a routed management network, create is refused).
	tmpl.FloatingIPEnabled = true
	next := objects.Clone(tmpl)
	next.UUID, next.Name, next.Labels = ptr("tmpl-conformance-next-"+randHex(3)), ptr("conformance-next"), map[string]string{"kube_tag": "v1.34.1"}
	return drivertest.Fixture{
		Template: tmpl, UpgradeTemplate: next, ProjectID: conformanceProject,
		// One operation of the real controllers (a create, an upgrade of
		// two Machines) takes about a minute here; on a loaded machine
		// several.
		Patience: 5 * time.Minute,
		// Fresh observations probe the API server: one observer keeps the
		// controllers' machine usable.
		Observers: 1,
	}
}

// Progress waits: the controllers move on their own.
func (h *realHarness) Progress(ctx context.Context, _ *objects.Cluster) error {
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	return nil
}

func (h *realHarness) Capabilities() drivertest.Capabilities {
	return drivertest.Capabilities{Lacks: map[drivertest.Capability]string{
		drivertest.CapStall: "the real controllers converge without being asked: a create the back end is not let " +
			"progress cannot be held (the driver's own create deadline is checked by TestStatusFollowsCAPIThroughCreate, the update deadline by TestResizeThatNeverConvergesTimesOut)",
	}}
}

// NodeNames are the Node names of the nodegroup's Machines, as
// --nodes-to-remove names them.
func (h *realHarness) NodeNames(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) ([]string, error) {
	r, ok := refOf(c)
	if !ok {
		return nil, fmt.Errorf("cluster %s has no stack_id", deref(c.UUID))
	}
	list, err := h.dyn.Resource(realGVRMachine).Namespace(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabel +
		"=" + r.Name + "," + clusterv1.ClusterTopologyMachineDeploymentNameLabel + "=" + mdNameFor(ng)})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range list.Items {
		m := &clusterv1.Machine{}
		if err := fromUnstructured(u.Object, m); err != nil {
			return nil, err
		}
		if m.DeletionTimestamp != nil {
			continue
		}
		name := m.Status.NodeRef.Name
		if name == "" {
			name = m.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// InjectFailure installs a ValidatingAdmissionPolicy that refuses, for
// this cluster only (by its cluster-name label), what the topology
// controller writes for op: the KubeadmControlPlane's creation, or the
// change of its version. The topology controller then reports
// TopologyReconciled False (ReconcileFailed) with the denial, which the
// driver observes as the back end giving up; nothing writes a status the
// controllers own. The policy goes with the test.
func (h *realHarness) InjectFailure(ctx context.Context, c *objects.Cluster, op drivertest.Op) error {
	name := "drivertest-" + capiNameFor(c)
	var operation, expression, message string
	switch op {
	case drivertest.OpCreate:
		operation, expression, message = "CREATE", "false", "drivertest: this cluster's control plane is refused"
	case drivertest.OpUpgrade:
		operation, expression, message = "UPDATE", "object.spec.version == oldObject.spec.version",
			"drivertest: this cluster's control plane upgrade is refused"
	default:
		return fmt.Errorf("no failure for %s", op)
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"controlplane.cluster.x-k8s.io"}, "apiVersions": []any{"*"},
				"operations": []any{operation}, "resources": []any{"kubeadmcontrolplanes"},
			}}},
			"validations": []any{map[string]any{"expression": expression, "message": message}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"policyName": name, "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"objectSelector": map[string]any{
				"matchLabels": map[string]any{clusterv1.ClusterNameLabel: capiNameFor(c)}}},
		},
	}}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		u   *unstructured.Unstructured
	}{{gvrAdmissionPolicy, policy}, {gvrAdmissionBinding, binding}} {
		if _, err := h.dyn.Resource(o.gvr).Apply(ctx, name, o.u, metav1.ApplyOptions{FieldManager: "drivertest", Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.u.GetKind(), name, err)
		}
		gvr := o.gvr
		h.t.Cleanup(func() {
			if err := h.dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				h.t.Errorf("delete %s %s: %v", gvr.Resource, name, err)
			}
		})
	}
	// The API server enforces a new policy once its informers have it: a
	// probe write in a namespace of its own is refused once it does.
	return h.awaitPolicy(ctx, c, op)
}

// conformanceProject owns the suite's clusters.
const conformanceProject = "c0f0a1b2c3d4e5f60718293a4b5c6d7e"

// awaitPolicy waits until the API server enforces the policy of op (it
// does once its informers have it): a dry run (which writes nothing) of
// what the policy refuses, a new KubeadmControlPlane of the cluster or the
// cluster's own with the upgrade's version, is refused with its message.
func (h *realHarness) awaitPolicy(ctx context.Context, c *objects.Cluster, op drivertest.Op) error {
	ns := namespaceFor("conformance", conformanceProject)
	try := func() error {
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
			"metadata": map[string]any{"name": "policy-probe", "namespace": ns,
				"labels": map[string]any{clusterv1.ClusterNameLabel: capiNameFor(c)}},
			"spec": map[string]any{"version": "v1.33.4", "replicas": int64(1),
				"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{
					"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "probe"}}}},
		}}
		if op == drivertest.OpCreate {
			if err := ensureNamespace(ctx, h.dyn, ns); err != nil {
				return err
			}
			_, err := h.dyn.Resource(gvrKCP).Namespace(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		list, err := h.dyn.Resource(gvrKCP).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabel + "=" + capiNameFor(c)})
		if err != nil {
			return fmt.Errorf("the cluster's KubeadmControlPlane: %w", err)
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("the cluster's KubeadmControlPlane: %d of them", len(list.Items))
		}
		kcp := &list.Items[0]
		if err := unstructured.SetNestedField(kcp.Object, "v1.34.1", "spec", "version"); err != nil {
			return err
		}
		_, err = h.dyn.Resource(gvrKCP).Namespace(ns).Update(ctx, kcp, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// Polling the API server's policy informer, which gives no signal.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return poll(waitCtx, "the admission policy enforced", func() (bool, string) {
		err := try()
		if err != nil && strings.Contains(err.Error(), "drivertest: this cluster") {
			return true, ""
		}
		return false, fmt.Sprintf("last dry run: %v", err) // nil while the policy is not enforced
	})
}

func ensureNamespace(ctx context.Context, dyn dynamic.Interface, ns string) error {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	_, err := dyn.Resource(namespacesResource).Apply(ctx, ns, u, metav1.ApplyOptions{FieldManager: "drivertest"})
	return err
}

// TestRealCAPIConformance: the Cluster API driver passes the driver
// conformance suite against the real Cluster API controllers and webhooks
// (in-memory infrastructure): create, resize (naming the node to remove),
// nodegroup create/update/delete, upgrade to the next minor, delete, each
// twice as after a lost reply, with concurrent observations; a create and
// an upgrade the back end refuses, the upgrade rolled back to the template
// the control plane still runs.
func TestRealCAPIConformance(t *testing.T) {
	s, dyn := needRealCAPI(t)
	dir, mapper, log := inMemoryDriverSetup(t, s)
	d, err := New(Options{NamespacePrefix: "conformance", ClassDir: dir},
		Deps{Dynamic: dyn, Core: NewCore(dyn), Certs: &pemCerts{}, Credentials: &fakeCreds{},
			Mapper: mapper}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Controllers().Logs(200))
		}
	})
	drivertest.Run(t, &realHarness{t: t, d: d, dyn: dyn})
}
