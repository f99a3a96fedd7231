package capi

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openstack/magnum-conductor/api/objects"
)

func TestAutoscalerTag(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"kube_tag": "v1.33.4"}, "v1.33.0"},
		{map[string]string{"kube_tag": "v1.34.1", "autoscaler_tag": "v1.34.2"}, "v1.34.2"},
	} {
		l, err := DefaultLabelSchema().Parse(tc.labels)
		if err != nil {
			t.Fatal(err)
		}
		if got := autoscalerTag(l); got != tc.want {
			t.Errorf("autoscalerTag(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// A cluster with an autoscaled nodegroup gets its cluster-autoscaler in
// the management cluster, beside its Cluster API objects: Cluster API's
// provider of the autoscaler, discovering exactly this cluster's
// MachineDeployments, reading the workload cluster through Cluster API's
// kubeconfig Secret, with a Role limited to the cluster's namespace; all
// owned by the Cluster. It goes when no nodegroup is autoscaled any more,
// and with the cluster.
func TestAutoscalerRunsBesideAnAutoscaledCluster(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	plain := e.newCluster("plain", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, plain, 60); err != nil {
		t.Fatal(err)
	}
	pr, _ := refOf(plain)
	if _, err := e.dyn.Resource(gvrDeployment).Namespace(pr.Namespace).Get(ctx, autoscalerName(pr.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a cluster without autoscaled nodegroups got an autoscaler: %v", err)
	}

	c := e.newCluster("auto", map[string]string{"kube_tag": "v1.33.4", "auto_scaling_enabled": "true", "autoscaler_tag": "v1.33.1"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 2, MinNodeCount: 1, MaxNodeCount: ptr(int64(5))})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	cl := e.getCluster(t, r)
	get := func(gvr schema.GroupVersionResource, into any) error {
		u, err := e.dyn.Resource(gvr).Namespace(r.Namespace).Get(ctx, autoscalerName(r.Name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		return fromUnstructured(u.Object, into)
	}
	dep := &appsv1.Deployment{}
	if err := get(gvrDeployment, dep); err != nil {
		t.Fatal(err)
	}
	ct := dep.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"--cloud-provider=clusterapi", "--kubeconfig=/etc/kubernetes/workload/value",
		"--node-group-auto-discovery=clusterapi:namespace=" + r.Namespace + ",clusterName=" + r.Name}
	for _, a := range wantArgs {
		if !slices.Contains(ct.Args, a) {
			t.Errorf("autoscaler args %v lack %s", ct.Args, a)
		}
	}
	if ct.Image != DefaultAutoscalerImage+":v1.33.1" {
		t.Errorf("image = %s", ct.Image)
	}
	if v := dep.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != r.Name+"-kubeconfig" {
		t.Errorf("volumes = %+v, want Cluster API's kubeconfig Secret", v)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != autoscalerName(r.Name) || deref(dep.Spec.Replicas) != 1 {
		t.Errorf("service account %s, replicas %d", dep.Spec.Template.Spec.ServiceAccountName, deref(dep.Spec.Replicas))
	}
	if o := dep.OwnerReferences; len(o) != 1 || o[0].Kind != "Cluster" || o[0].UID != cl.UID {
		t.Errorf("owner references = %+v, want the Cluster %s", o, cl.UID)
	}
	role := &rbacv1.Role{}
	if err := get(gvrRole, role); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(role.Rules[0].Resources, "machinedeployments/scale") || role.Namespace != r.Namespace {
		t.Errorf("role = %+v", role.Rules)
	}
	rb := &rbacv1.RoleBinding{}
	if err := get(gvrRoleBinding, rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Name != autoscalerName(r.Name) || len(rb.Subjects) != 1 || rb.Subjects[0].Name != autoscalerName(r.Name) {
		t.Errorf("role binding = %+v", rb)
	}

	// No nodegroup autoscaled any more: the autoscaler goes.
	ng := e.nodeGroups(c)[1]
	ng.Labels = map[string]string{"auto_scaling_enabled": "false"}
	if err := e.updateNG(ctx, c, ng); err != nil {
		t.Fatal(err)
	}
	for _, gvr := range autoscalerGVRs {
		if _, err := e.dyn.Resource(gvr).Namespace(r.Namespace).Get(ctx, autoscalerName(r.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s left after autoscaling was switched off: %v", gvr.Resource, err)
		}
	}
	// On again, then the cluster is deleted: cleanup removes it (the
	// garbage collector would too, through the owner reference).
	ng.Labels = map[string]string{"auto_scaling_enabled": "true"}
	if err := e.updateNG(ctx, c, ng); err != nil {
		t.Fatal(err)
	}
	if err := get(gvrDeployment, &appsv1.Deployment{}); err != nil {
		t.Fatalf("autoscaler not back: %v", err)
	}
	if err := e.d.cleanup(ctx, c, r.Namespace); err != nil {
		t.Fatal(err)
	}
	for _, gvr := range autoscalerGVRs {
		if _, err := e.dyn.Resource(gvr).Namespace(r.Namespace).Get(ctx, autoscalerName(r.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s left after the clean-up: %v", gvr.Resource, err)
		}
	}
}
