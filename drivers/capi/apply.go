package capi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// ref is a CAPI cluster's namespace and name, from stack_id.
type ref struct{ Namespace, Name string }

func (r ref) String() string { return r.Namespace + "/" + r.Name }

// refOf is the Cluster of a row whose stack_id is of this driver's shape;
// false for an empty stack_id (not applied yet) and for a foreign one
// (notManaged tells them apart).
func refOf(c *objects.Cluster) (ref, bool) {
	return parseRef(deref(c.StackID))
}

// requestTemplate is the request's cluster template.
func requestTemplate(req drivers.ClusterRequest) (*objects.ClusterTemplate, error) {
	if req.Template == nil {
		return nil, fmt.Errorf("capi: the request for cluster %s carries no cluster template", deref(req.Cluster.UUID))
	}
	return req.Template, nil
}

// nodeGroups are the request's nodegroups, with the given ones (the
// operation's own, as the caller passed it) replacing theirs.
func nodeGroups(req drivers.ClusterRequest, override ...*objects.NodeGroup) []*objects.NodeGroup {
	ngs := slices.Clone(req.NodeGroups)
	for _, o := range override {
		if o == nil {
			continue
		}
		i := slices.IndexFunc(ngs, func(n *objects.NodeGroup) bool { return n.UUID == o.UUID })
		if i >= 0 {
			ngs[i] = o
		} else {
			ngs = append(ngs, o)
		}
	}
	return ngs
}

func mergedLabels(c *objects.Cluster, t *objects.ClusterTemplate) map[string]string {
	out := map[string]string{}
	if t != nil {
		for k, v := range t.Labels {
			out[k] = v
		}
	}
	for k, v := range c.Labels {
		out[k] = v
	}
	return out
}

// liveCluster reads the Cluster from the API server (for writes that must
// not act on a stale cache).
func (d *Driver) liveCluster(ctx context.Context, r ref) (*clusterv1.Cluster, error) {
	u, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cl := &clusterv1.Cluster{}
	if err := fromUnstructured(u.Object, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

func variableString(cl *clusterv1.Cluster, name string) string {
	if cl == nil {
		return ""
	}
	for _, v := range cl.Spec.Topology.Variables {
		if v.Name == name {
			var s string
			_ = jsonUnmarshal(v.Value.Raw, &s)
			return s
		}
	}
	return ""
}

// applyOptions carries what an operation changes beyond the Magnum objects.
type applyOptions struct {
	classVersion string
	identityRef  string
	annotations  map[string]string
	maxBatchSize int
	// check selects the flavor and image checks run before the write.
	check cloudCheck
}

// apply builds the desired Cluster and writes it with server-side apply.
// Fields of the existing Cluster the driver does not decide (class version,
// credential Secret, annotations, rollout batch) are carried over.
func (d *Driver) apply(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, ngs []*objects.NodeGroup, r ref, current *clusterv1.Cluster, ao applyOptions) (*clusterv1.Cluster, error) {
	labels, err := d.opts.Labels.Parse(mergedLabels(c, t))
	if err != nil {
		return nil, err
	}
	ann := map[string]string{}
	if current != nil {
		for _, k := range []string{annotationTemplateID, annotationPreviousTemplateID, annotationPreviousKubeTag, annotationCreateDeadline, annotationMaxBatch, annotationImageWarnings} {
			if v := current.Annotations[k]; v != "" {
				ann[k] = v
			}
		}
		if ao.classVersion == "" {
			ao.classVersion = strings.TrimPrefix(current.Spec.Topology.ClassRef.Name, "magnum-")
		}
		if ao.identityRef == "" {
			ao.identityRef = variableString(current, "identityRefName")
		}
	}
	for k, v := range ao.annotations {
		if v == "" {
			delete(ann, k) // an empty value removes what an earlier apply wrote
		} else {
			ann[k] = v
		}
	}
	if ao.maxBatchSize == 0 {
		fmt.Sscan(ann[annotationMaxBatch], &ao.maxBatchSize)
	}
	if ao.classVersion == "" {
		ao.classVersion = d.opts.ClusterClassVersion
	}
	if ao.identityRef == "" {
		ao.identityRef = credentialSecretName(r.Name)
	}
	ann[annotationTemplateID] = firstNonEmpty(c.ClusterTemplateID)
	if err := d.checkCloud(ctx, c, t, ngs, labels, r, ao.identityRef, ao.check, ann); err != nil {
		return nil, err
	}
	if err := d.noteLabelWarnings(ctx, c, t, ngs, ao.classVersion, ann); err != nil {
		return nil, err
	}
	sgs, err := d.ensureServerGroups(ctx, c, ngs, labels, r, ao.classVersion, ao.identityRef)
	if err != nil {
		return nil, err
	}
	want, err := desiredCluster(spec{
		Cluster: c, Template: t, NodeGroups: ngs, Labels: labels, Namespace: r.Namespace, Name: r.Name,
		ClassVersion: ao.classVersion, Classes: d.classes, IdentityRef: ao.identityRef, Annotations: ann, MaxBatchSize: ao.maxBatchSize,
		ManagementCIDRs: d.opts.ManagementCIDRs, ServerGroups: sgs,
		Capacity: d.capacities(ctx, c, t, ngs, labels, r, ao.identityRef),
	})
	if err != nil {
		return nil, err
	}
	if current != nil {
		if err := noteUpdateStart(want, current, c, ngs, d.now()); err != nil {
			return nil, err
		}
	}
	u, err := toUnstructured(want)
	if err != nil {
		return nil, err
	}
	applied, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Apply(ctx, r.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("capi: apply Cluster %s: %w", r, err)
	}
	d.written.note(r, string(applied.GetUID()), applied.GetGeneration(), d.now())
	if err := d.reconcileAutoscaler(ctx, c, r, want, string(applied.GetUID()), labels); err != nil {
		return nil, err
	}
	if err := d.writeAddOns(ctx, c, r, want, string(applied.GetUID()), labels); err != nil {
		return nil, err
	}
	return want, nil
}

const annotationMaxBatch = "magnum.openstack.org/max-batch-size"

// applyClass applies a ClusterClass bundle into ns.
func (d *Driver) applyClass(ctx context.Context, ns, version string) error {
	objs, err := d.classes.bundle(version)
	if err != nil {
		return err
	}
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetNamespace(ns)
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["magnum.openstack.org/class-version"] = version
		o.SetLabels(l)
		gvr, err := d.resource(o.GetAPIVersion(), o.GetKind())
		if err != nil {
			return err
		}
		if _, err := d.deps.Dynamic.Resource(gvr).Namespace(ns).Apply(ctx, o.GetName(), o,
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("capi: apply %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
	}
	return nil
}

// UpdateCluster implements drivers.Driver: re-apply the desired topology
// (Magnum's update_cluster only carries node_count changes, which resize
// covers).
func (d *Driver) UpdateCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{}, d.reapply(ctx, req, nil, applyOptions{})
}

// reapply applies the request's cluster with ngs (nil: the request's).
func (d *Driver) reapply(ctx context.Context, req drivers.ClusterRequest, ngs []*objects.NodeGroup, ao applyOptions) error {
	c := req.Cluster
	r, err := mustRef(c)
	if err != nil {
		return err
	}
	t, err := requestTemplate(req)
	if err != nil {
		return err
	}
	if ngs == nil {
		ngs = req.NodeGroups
	}
	current, err := d.liveCluster(ctx, r)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("capi: Cluster %s does not exist", r)
		}
		return err
	}
	_, err = d.apply(ctx, c, t, ngs, r, current, ao)
	return err
}
