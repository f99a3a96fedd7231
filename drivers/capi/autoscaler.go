package capi

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// The cluster-autoscaler of a cluster with autoscaled nodegroups runs in
// the management cluster, beside the cluster's Cluster API objects (as
// magnum-cluster-api and magnum-capi-helm run it): Cluster API's own
// provider of the autoscaler (--cloud-provider=clusterapi) scales the
// MachineDeployments that carry the size annotations, through their scale
// subresource, and reads the workload cluster through the kubeconfig
// Secret Cluster API writes. Nothing of it runs on the cluster's nodes, so
// users cannot change or starve it.
//
// It is a Deployment with its ServiceAccount, Role and RoleBinding, all
// named <cluster>-autoscaler in the cluster's namespace, owned by the
// Cluster (the garbage collector removes them with it; cleanup does too),
// applied when a nodegroup is autoscaled and deleted when none is.

// DefaultAutoscalerImage is the cluster-autoscaler image, without a tag.
const DefaultAutoscalerImage = "registry.k8s.io/autoscaling/cluster-autoscaler"

var (
	gvrDeployment     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrServiceAccount = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrRole           = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	gvrRoleBinding    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// autoscalerName is the name of a cluster's autoscaler objects.
func autoscalerName(clusterName string) string { return clusterName + "-autoscaler" }

// autoscalerTag is the image tag: the autoscaler_tag label, else the
// release of the cluster's Kubernetes minor (the autoscaler is released
// per Kubernetes minor, and supports that minor).
func autoscalerTag(l Labels) string {
	if t := l.String("autoscaler_tag"); t != "" {
		return t
	}
	if maj, min, _, ok := parseVersion(l.String("kube_tag")); ok {
		return fmt.Sprintf("v%d.%d.0", maj, min)
	}
	return ""
}

// anyAutoscaled reports whether the topology hands a MachineDeployment to
// the autoscaler.
func anyAutoscaled(cl *clusterv1.Cluster) bool {
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		if _, ok := md.Metadata.Annotations[clusterv1.AutoscalerMinSizeAnnotation]; ok {
			return true
		}
	}
	return false
}

// autoscalerObjects are the objects of a cluster's autoscaler. owner is
// the applied Cluster.
func (d *Driver) autoscalerObjects(c *objects.Cluster, r ref, owner metav1.OwnerReference, l Labels) []autoscalerObject {
	name := autoscalerName(r.Name)
	meta := func(kind, apiVersion string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels:          mapWith(ownerLabels(c), map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelComponent: "cluster-autoscaler"}),
			OwnerReferences: []metav1.OwnerReference{owner}}
	}
	sa := &corev1.ServiceAccount{}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "v1")
	sa.AutomountServiceAccountToken = ptr(true)

	role := &rbacv1.Role{}
	role.TypeMeta, role.ObjectMeta = meta("Role", "rbac.authorization.k8s.io/v1")
	role.Rules = []rbacv1.PolicyRule{
		{APIGroups: []string{clusterv1.GroupVersion.Group}, Resources: []string{"machinedeployments", "machinedeployments/scale",
			"machinesets", "machinesets/scale", "machinepools", "machinepools/scale", "machines"},
			Verbs: []string{"get", "list", "watch", "update", "patch"}},
		// Scale from zero reads the machine templates' capacity.
		{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	}

	rb := &rbacv1.RoleBinding{}
	rb.TypeMeta, rb.ObjectMeta = meta("RoleBinding", "rbac.authorization.k8s.io/v1")
	rb.RoleRef = rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}
	rb.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: r.Namespace}}

	dep := &appsv1.Deployment{}
	dep.TypeMeta, dep.ObjectMeta = meta("Deployment", "apps/v1")
	selector := map[string]string{LabelClusterUUID: deref(c.UUID), LabelComponent: "cluster-autoscaler"}
	image := d.opts.AutoscalerImage
	if tag := autoscalerTag(l); tag != "" {
		image += ":" + tag
	}
	dep.Spec = appsv1.DeploymentSpec{
		Replicas: ptr(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: selector},
		// One autoscaler at a time: Recreate, not a surge of two.
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: selector},
			Spec: corev1.PodSpec{
				ServiceAccountName: name,
				Containers: []corev1.Container{{
					Name:    "cluster-autoscaler",
					Image:   image,
					Command: []string{"/cluster-autoscaler"},
					Args: []string{
						"--cloud-provider=clusterapi",
						// The workload cluster, through Cluster API's kubeconfig
						// Secret; the management cluster through the Pod's
						// ServiceAccount (no --cloud-config).
						"--kubeconfig=/etc/kubernetes/workload/value",
						"--clusterapi-cloud-config-authoritative",
						"--node-group-auto-discovery=clusterapi:namespace=" + r.Namespace + ",clusterName=" + r.Name,
						"--leader-elect=false",
						"--v=2",
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "workload-kubeconfig", MountPath: "/etc/kubernetes/workload", ReadOnly: true}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("300Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("600Mi")},
					},
					SecurityContext: &corev1.SecurityContext{
						RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), ReadOnlyRootFilesystem: ptr(true),
						AllowPrivilegeEscalation: ptr(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				}},
				Volumes: []corev1.Volume{{Name: "workload-kubeconfig", VolumeSource: corev1.VolumeSource{
					Secret: &corev1.SecretVolumeSource{SecretName: r.Name + "-kubeconfig"}}}},
			},
		},
	}
	return []autoscalerObject{{gvrServiceAccount, sa}, {gvrRole, role}, {gvrRoleBinding, rb}, {gvrDeployment, dep}}
}

// autoscalerObject is one object of the autoscaler and its resource, in
// the order they are applied (the Deployment last: its Pod needs the rest).
type autoscalerObject struct {
	gvr schema.GroupVersionResource
	obj any
}

var autoscalerGVRs = []schema.GroupVersionResource{gvrDeployment, gvrRoleBinding, gvrRole, gvrServiceAccount}

// reconcileAutoscaler applies the cluster's autoscaler when applied hands
// a nodegroup to it, and deletes it otherwise.
func (d *Driver) reconcileAutoscaler(ctx context.Context, c *objects.Cluster, r ref, applied *clusterv1.Cluster, uid string, l Labels) error {
	if !anyAutoscaled(applied) {
		return d.deleteAutoscalerOf(ctx, c, r.Namespace)
	}
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: r.Name,
		UID: types.UID(uid)}
	for _, o := range d.autoscalerObjects(c, r, owner, l) {
		u, err := toUnstructured(o.obj)
		if err != nil {
			return err
		}
		if _, err := d.deps.Dynamic.Resource(o.gvr).Namespace(r.Namespace).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("capi: apply the cluster-autoscaler's %s %s/%s: %w", u.GetKind(), r.Namespace, u.GetName(), err)
		}
	}
	return nil
}

// deleteAutoscalerOf deletes, by label, the autoscaler objects of cluster
// c in ns: when no nodegroup is autoscaled any more, and at the cleanup
// (which knows the cluster but not its Cluster's name).
func (d *Driver) deleteAutoscalerOf(ctx context.Context, c *objects.Cluster, ns string) error {
	sel := LabelClusterUUID + "=" + deref(c.UUID) + "," + LabelComponent + "=cluster-autoscaler"
	var errs []error
	for _, gvr := range autoscalerGVRs {
		if err := d.deps.Dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("capi: delete the cluster-autoscaler's %s: %w", gvr.Resource, err))
		}
	}
	return errors.Join(errs...)
}
