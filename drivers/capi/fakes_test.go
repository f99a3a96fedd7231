package capi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// Test doubles for what is not Kubernetes (the cluster CAs, Keystone
// application credentials, the database). Namespaces and Secrets go to the
// test kube-apiserver through the real Core.

type fakeCerts struct{}

// logRecorder keeps what a test's driver logs (slog's text format), safe
// for the driver's goroutines.
type logRecorder struct{ testkit.SyncBuffer }

// lines are the lines logged so far that contain every one of subs.
func (l *logRecorder) lines(subs ...string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(line, s) }) {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

func (fakeCerts) CAKeyPair(_ context.Context, c *objects.Cluster, kind CAKind) ([]byte, []byte, error) {
	return []byte("CERT " + string(kind) + " " + deref(c.UUID)), []byte("KEY " + string(kind)), nil
}

type fakeCreds struct {
	mu          sync.Mutex
	n           int
	revoked     []string
	revokedRefs []CredentialRef
	verifyErr   error
	// cloud, when set, is the fake OpenStack the credentials are for.
	cloud *cloudsweeptest.Cloud
}

func (f *fakeCreds) Issue(ctx context.Context, c *objects.Cluster) (Credential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.cloud != nil {
		return Credential{ID: cloudsweeptest.CredentialID, Secret: cloudsweeptest.CredentialSecret, AuthURL: f.cloud.URL + "/identity",
			UserID: request.From(ctx).UserID}, nil
	}
	return Credential{ID: fmt.Sprintf("appcred-%d", f.n), Secret: "s3cret", AuthURL: "https://keystone.example/v3",
		UserID: request.From(ctx).UserID}, nil
}

func (f *fakeCreds) Verify(context.Context, Credential) error { return f.verifyErr }

func (f *fakeCreds) Revoke(_ context.Context, _ *objects.Cluster, cred CredentialRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, cred.ID)
	f.revokedRefs = append(f.revokedRefs, cred)
	return nil
}

type memStore struct {
	mu        sync.Mutex
	templates map[string]*objects.ClusterTemplate
	ngs       map[string][]*objects.NodeGroup
}

func (s *memStore) ListClusterNodeGroups(_ context.Context, clusterUUID string) ([]*objects.NodeGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*objects.NodeGroup(nil), s.ngs[clusterUUID]...), nil
}

// updateStatus plays the conductor's sync_cluster_status for c and its
// nodegroups ngs (the store's rows, changed in place): the driver observes
// them, the shared status machine judges the observation (observed again
// fresh when it asks; Refresh for a settled cluster), and the decision is applied to the rows; nodegroups
// whose deletion completed leave the store, and their rows in ngs are
// marked DELETE_COMPLETE. The status machine has no
// deadlines of its own here unless a test sets e.timeouts: the driver's
// (create_timeout, delete_timeout) are what most of these tests check.
func (e *env) updateStatus(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup) error {
	e.store.mu.Lock()
	tmpl := e.store.templates[deref(c.ClusterTemplateID)]
	e.store.mu.Unlock()
	req := drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: objects.Clone(c)}}
	if tmpl != nil {
		req.Template = objects.Clone(tmpl)
	}
	for _, ng := range ngs {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	in := statusmachine.Input{Cluster: c, NodeGroups: ngs, Now: e.d.now(), Timeouts: e.timeouts}
	if statusmachine.Settled(c.Status) {
		// The driver is a SettledObserver: what the back end decided on
		// its own is stored (statusmachine.Refresh).
		obs, err := e.d.Observe(ctx, req)
		if err != nil {
			return err
		}
		in.Observation = obs
		e.apply(c, ngs, statusmachine.Refresh(in))
		return nil
	}
	if d, observe := statusmachine.Triage(c, in.Now, in.Timeouts); !observe {
		e.apply(c, ngs, d)
		return nil
	}
	obs, err := e.d.Observe(ctx, req)
	if err != nil {
		return err
	}
	in.Observation = obs
	d := statusmachine.Decide(in)
	if d.NeedFresh {
		req.Fresh, in.Fresh = true, true
		if in.Observation, err = e.d.Observe(ctx, req); err != nil {
			return err
		}
		d = statusmachine.Decide(in)
	}
	e.apply(c, ngs, d)
	return nil
}

// apply records a status machine decision as the conductor does.
func (e *env) apply(c *objects.Cluster, ngs []*objects.NodeGroup, d statusmachine.Decision) {
	if d.Cluster != nil {
		n := d.Cluster
		c.Status, c.StatusReason, c.ClusterTemplateID, c.Labels = n.Status, n.StatusReason, n.ClusterTemplateID, n.Labels
		c.APIAddress, c.CoeVersion, c.ContainerVersion = n.APIAddress, n.CoeVersion, n.ContainerVersion
		c.HealthStatus, c.HealthStatusReason = n.HealthStatus, n.HealthStatusReason
	}
	for _, n := range d.NodeGroups {
		for _, ng := range ngs {
			if ng.UUID == n.UUID {
				ng.Status, ng.StatusReason, ng.NodeAddresses, ng.NodeCount = n.Status, n.StatusReason, n.NodeAddresses, n.NodeCount
				ng.Version, ng.StackID = n.Version, n.StackID
			}
		}
	}
	if len(d.Destroy) > 0 {
		e.store.mu.Lock()
		defer e.store.mu.Unlock()
		for _, gone := range d.Destroy {
			for _, ng := range ngs {
				if ng.UUID == gone.UUID {
					ng.Status = objects.DeleteComplete
				}
			}
			rows := e.store.ngs[deref(c.UUID)]
			e.store.ngs[deref(c.UUID)] = slices.DeleteFunc(rows, func(n *objects.NodeGroup) bool { return n.UUID == gone.UUID })
		}
	}
}

// request is what the conductor hands the driver for c: the cluster, its
// template and its nodegroups (the store's rows themselves, so that what
// an operation changes in them is what the conductor records).
func (e *env) request(c *objects.Cluster) drivers.ClusterRequest {
	e.store.mu.Lock()
	tmpl := e.store.templates[deref(c.ClusterTemplateID)]
	e.store.mu.Unlock()
	return drivers.ClusterRequest{Cluster: c, Template: tmpl, NodeGroups: e.nodeGroups(c)}
}

// The operations as the conductor calls them, with what it records.

func (e *env) create(ctx context.Context, c *objects.Cluster, timeoutMinutes int) error {
	res, err := e.d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: e.request(c),
		Timeout: time.Duration(timeoutMinutes) * time.Minute})
	if res.StackID != "" {
		c.StackID = &res.StackID
	}
	return err
}

func (e *env) resize(ctx context.Context, c *objects.Cluster, n int, remove []string, ng *objects.NodeGroup) error {
	sent := objects.Clone(ng)
	sent.NodeCount = int64(n)
	req := e.request(c)
	_, err := e.d.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: req, NodeGroup: sent, NodeCount: n, NodesToRemove: remove})
	if err == nil {
		ng.NodeCount, ng.Status = int64(n), objects.UpdateInProgress
	}
	return err
}

// upgrade records the upgrade of the whole cluster as the conductor does
// (recordUpgrade), once the driver accepted it.
func (e *env) upgrade(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, maxBatch int, ng *objects.NodeGroup) error {
	req := e.request(c)
	_, err := e.d.UpgradeCluster(ctx, drivers.UpgradeRequest{ClusterRequest: req, NewTemplate: t, MaxBatchSize: maxBatch, NodeGroup: ng})
	if err != nil {
		return err
	}
	tag, hasTag := t.Labels["kube_tag"]
	c.ClusterTemplateID = t.UUID
	if hasTag {
		c.Labels = maps.Clone(c.Labels)
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["kube_tag"] = tag
	}
	for _, n := range req.NodeGroups {
		if t.ImageID != nil {
			n.ImageID = t.ImageID
		}
		if hasTag {
			n.Version = ptr(tag)
			if _, ok := n.Labels["kube_tag"]; ok {
				n.Labels = maps.Clone(n.Labels)
				n.Labels["kube_tag"] = tag
			}
		}
		if n.Status != objects.DeleteInProgress {
			n.Status = objects.UpdateInProgress
		}
	}
	return nil
}

func (e *env) deleteCluster(ctx context.Context, c *objects.Cluster) error {
	_, err := e.d.DeleteCluster(ctx, e.request(c))
	return err
}

func (e *env) nodeGroupRequest(c *objects.Cluster, ng *objects.NodeGroup) drivers.NodeGroupRequest {
	req := e.request(c)
	req.NodeGroups = nodeGroups(req, ng)
	return drivers.NodeGroupRequest{ClusterRequest: req, NodeGroup: ng}
}

func (e *env) createNG(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	_, err := e.d.CreateNodeGroup(ctx, e.nodeGroupRequest(c, ng))
	return err
}

func (e *env) updateNG(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	_, err := e.d.UpdateNodeGroup(ctx, e.nodeGroupRequest(c, ng))
	return err
}

func (e *env) deleteNG(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	_, err := e.d.DeleteNodeGroup(ctx, e.nodeGroupRequest(c, ng))
	if err == nil {
		ng.Status = objects.DeleteInProgress
	}
	return err
}
