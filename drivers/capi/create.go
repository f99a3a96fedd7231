package capi

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/drivers"
)

// CreateCluster implements drivers.Driver: namespace, ClusterClass, cloud
// credentials, CA Secrets, then the topology Cluster. Result.StackID is
// <namespace>/<name>.
func (d *Driver) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	if err := d.createCluster(ctx, req); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{StackID: deref(req.Cluster.StackID)}, nil
}

func (d *Driver) createCluster(ctx context.Context, req drivers.CreateClusterRequest) error {
	if err := d.usable(); err != nil {
		return err
	}
	c := req.Cluster
	t, err := requestTemplate(req.ClusterRequest)
	if err != nil {
		return err
	}
	if _, err := d.opts.Labels.Parse(mergedLabels(c, t)); err != nil {
		return err
	}
	if err := notManaged(c); err != nil {
		// A row another driver applied: a second cluster must not be
		// made beside it, nor its stack_id replaced.
		return err
	}
	ngs := req.NodeGroups
	r := ref{Namespace: namespaceFor(d.opts.NamespacePrefix, deref(c.ProjectID)), Name: capiNameFor(c)}
	if existing, ok := refOf(c); ok {
		r = existing // a retried create keeps its name
	}
	// Validate the whole topology before the first write.
	labels, _ := d.opts.Labels.Parse(mergedLabels(c, t))
	if err := d.opts.checkAPIReachable(c, labels); err != nil {
		return err
	}
	if err := checkBootstrap(t); err != nil {
		return err
	}
	if _, err := desiredCluster(spec{Cluster: c, Template: t, NodeGroups: ngs, Labels: labels, Namespace: r.Namespace,
		Name: r.Name, ClassVersion: d.opts.ClusterClassVersion, Classes: d.classes, IdentityRef: "x"}); err != nil {
		return err
	}
	if err := d.classNotServed("create_cluster", d.opts.ClusterClassVersion); err != nil {
		return err
	}
	c.StackID = ptr(r.String())
	timeout := d.opts.CreateTimeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	} else if n := deref(c.CreateTimeout); n > 0 {
		timeout = time.Duration(n) * time.Minute
	}
	log := d.log.With(d.logAttrs(ctx, c)...)
	log.Info("creating CAPI cluster", "capi_cluster", r.String(), "class", className(d.opts.ClusterClassVersion))

	owner := ownerLabels(c)
	if err := d.deps.Core.EnsureNamespace(ctx, r.Namespace, map[string]string{LabelProjectID: owner[LabelProjectID]}); err != nil {
		return err
	}
	if err := d.applyClass(ctx, r.Namespace, d.opts.ClusterClassVersion); err != nil {
		return err
	}
	if err := d.ensureCredential(ctx, c, r, log); err != nil {
		return err
	}
	for _, kind := range []CAKind{CAKubernetes, CAEtcd, CAFrontProxy} {
		certPEM, keyPEM, err := d.deps.Certs.CAKeyPair(ctx, c, kind)
		if err != nil {
			return fmt.Errorf("capi: %s CA of cluster: %w", kind, err)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-" + string(kind), Namespace: r.Namespace,
				Labels: mapWith(owner, map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelSecretKind: "ca-" + string(kind)})},
			Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		if err := d.deps.Core.ApplySecret(ctx, s); err != nil {
			return err
		}
	}
	deadline := d.now().Add(timeout).UTC().Format(time.RFC3339)
	if _, err := d.apply(ctx, c, t, ngs, r, nil, applyOptions{
		classVersion: d.opts.ClusterClassVersion,
		annotations:  map[string]string{annotationCreateDeadline: deadline},
		check:        cloudCheck{all: true},
	}); err != nil {
		return err
	}
	log.Info("CAPI cluster applied", "capi_cluster", r.String(), "create_deadline", deadline)
	return nil
}
