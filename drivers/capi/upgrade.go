package capi

import (
	"context"
	"fmt"
	"slices"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

func notSupported(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return exception.ClassNotSupported.WithMessage("%(reason)s", map[string]any{"operation": "upgrade_cluster", "reason": msg})
}

// checkUpgrade refuses downgrades, major changes and minor-version skips
// (which CAPI's webhook would reject after the write, wedging the cluster).
func checkUpgrade(from, to string) error {
	fMaj, fMin, _, ok1 := parseVersion(from)
	tMaj, tMin, _, ok2 := parseVersion(to)
	switch {
	case !ok1 || !ok2:
		return notSupported("Cannot upgrade from %q to %q: versions must look like v1.33.4.", from, to)
	case compareVersions(to, from) < 0:
		return notSupported("Downgrading Kubernetes from %s to %s is not supported.", from, to)
	case tMaj != fMaj:
		return notSupported("Upgrading Kubernetes across major versions (%s to %s) is not supported.", from, to)
	case tMin > fMin+1:
		return notSupported("Upgrading Kubernetes from %s to %s skips a minor version; upgrade one minor version at a time.", from, to)
	}
	return nil
}

// UpgradeCluster implements drivers.Driver. Every check runs before the
// first write and answers NotSupported, which the conductor re-raises with
// the cluster status unchanged. The whole cluster moves at once (class,
// version, image); max_batch_size bounds the surge of each
// MachineDeployment. The previous template id is recorded on the Cluster
// and reported as AppliedTemplateID until the upgrade has rolled out (the
// status machine rolls a failed upgrade back to it). The conductor records
// the nodegroups' new versions and statuses itself.
func (d *Driver) UpgradeCluster(ctx context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	return drivers.Result{}, d.upgrade(ctx, req.ClusterRequest, req.NewTemplate, req.MaxBatchSize, req.NodeGroup)
}

func (d *Driver) upgrade(ctx context.Context, req drivers.ClusterRequest, t *objects.ClusterTemplate, maxBatchSize int, ng *objects.NodeGroup) error {
	if err := d.usable(); err != nil {
		return err
	}
	// The upgrade is worked out on copies: the request, as it was, is
	// what a repeated call must find again (its template is the one the
	// Cluster records as the previous).
	req.Cluster = objects.Clone(req.Cluster)
	req.NodeGroups = slices.Clone(req.NodeGroups)
	for i, n := range req.NodeGroups {
		req.NodeGroups[i] = objects.Clone(n)
	}
	if ng != nil {
		ng = objects.Clone(ng)
	}
	c := req.Cluster
	if t == nil {
		return notSupported("Upgrading needs a cluster template.")
	}
	if err := notManaged(c); err != nil {
		return err
	}
	r, ok := refOf(c)
	if !ok {
		return notSupported("Cluster %s has no Cluster API cluster to upgrade.", deref(c.UUID))
	}
	if maxBatchSize < 0 {
		return notSupported("max_batch_size must be positive, got %d.", maxBatchSize)
	}
	current, err := d.liveCluster(ctx, r)
	if err != nil {
		return notSupported("Cluster %s cannot be read: %v.", r, err)
	}
	if current.DeletionTimestamp != nil {
		return notSupported("Cluster %s is being deleted.", r)
	}
	// Only kube_tag comes from the new template into the cluster's labels
	// (as Magnum's drivers do); its other labels count under the
	// cluster's, as at every apply.
	newLabels := mergedLabels(&objects.Cluster{Labels: c.Labels}, nil)
	newTag, hasTag := t.Labels["kube_tag"]
	if hasTag {
		newLabels["kube_tag"] = newTag
	}
	parsed, err := d.opts.Labels.Parse(mergedLabels(&objects.Cluster{Labels: newLabels}, t))
	if err != nil {
		return notSupported("The new cluster template has invalid labels: %v", err)
	}
	from, to := current.Spec.Topology.Version, parsed.String("kube_tag")
	if err := checkUpgrade(from, to); err != nil {
		return err
	}
	// The class bundle the upgrade applies must be one the management
	// cluster serves (served.go).
	if err := d.classNotServed("upgrade_cluster", d.opts.ClusterClassVersion); err != nil {
		return err
	}
	ngs := nodeGroups(req, ng)
	// Validate the resulting topology, still without writing.
	next := *c
	next.Labels = newLabels
	next.ClusterTemplateID = t.UUID
	next.ClusterTemplate = t
	saved := snapshot(c, ngs)
	for _, n := range ngs {
		if t.ImageID != nil {
			n.ImageID = t.ImageID
		}
		n.Version = ptr(to)
		if _, ok := n.Labels["kube_tag"]; ok && hasTag {
			n.Labels = mergedLabels(&objects.Cluster{Labels: n.Labels}, nil) // a copy: the snapshot keeps the old map
			n.Labels["kube_tag"] = newTag
		}
	}
	if _, err := desiredCluster(spec{Cluster: &next, Template: t, NodeGroups: ngs, Labels: parsed, Namespace: r.Namespace,
		Name: r.Name, ClassVersion: d.opts.ClusterClassVersion, Classes: d.classes, IdentityRef: "x"}); err != nil {
		saved.restore(c)
		return notSupported("The new cluster template cannot be applied: %v", err)
	}

	prevTemplate, prevTag := deref(c.ClusterTemplateID), c.Labels["kube_tag"]
	c.Labels, c.ClusterTemplateID, c.ClusterTemplate = newLabels, t.UUID, t
	if err := d.applyClass(ctx, r.Namespace, d.opts.ClusterClassVersion); err != nil {
		saved.restore(c)
		return err
	}
	if _, err := d.apply(ctx, c, t, ngs, r, current, applyOptions{
		classVersion: d.opts.ClusterClassVersion,
		maxBatchSize: maxBatchSize,
		annotations:  upgradeAnnotations(prevTemplate, prevTag, maxBatchSize),
		check:        cloudCheck{all: true},
	}); err != nil {
		saved.restore(c)
		return fmt.Errorf("capi: upgrade to template %s rolled back: %w", deref(t.UUID), err)
	}
	d.log.Info("cluster upgrade applied", append(d.logAttrs(ctx, c), "from", from, "to", to,
		"cluster_template_id", deref(t.UUID), "previous_template_id", prevTemplate, "max_batch_size", maxBatchSize)...)
	return nil
}

// upgradeAnnotations record on the Cluster what a rejected upgrade rolls
// the cluster's record back to, and the upgrade's batch size. A cluster
// without kube_tag removes the previous upgrade's record of it.
func upgradeAnnotations(prevTemplate, prevTag string, maxBatchSize int) map[string]string {
	return map[string]string{annotationPreviousTemplateID: prevTemplate, annotationPreviousKubeTag: prevTag,
		annotationMaxBatch: fmt.Sprint(maxBatchSize)}
}

type clusterSnapshot struct {
	labels   map[string]string
	template *string
	tmplObj  *objects.ClusterTemplate
	ngs      []*objects.NodeGroup
	ngImages []*string
	ngVers   []*string
	ngStatus []string
	ngLabels []map[string]string
}

func snapshot(c *objects.Cluster, ngs []*objects.NodeGroup) clusterSnapshot {
	s := clusterSnapshot{labels: c.Labels, template: c.ClusterTemplateID, tmplObj: c.ClusterTemplate, ngs: ngs}
	for _, n := range ngs {
		s.ngImages = append(s.ngImages, n.ImageID)
		s.ngVers = append(s.ngVers, n.Version)
		s.ngStatus = append(s.ngStatus, n.Status)
		s.ngLabels = append(s.ngLabels, n.Labels)
	}
	return s
}

func (s clusterSnapshot) restore(c *objects.Cluster) {
	c.Labels, c.ClusterTemplateID, c.ClusterTemplate = s.labels, s.template, s.tmplObj
	for i, n := range s.ngs {
		n.ImageID, n.Version, n.Status, n.Labels = s.ngImages[i], s.ngVers[i], s.ngStatus[i], s.ngLabels[i]
	}
}
