package capi

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// Test doubles for what is not Kubernetes (the cluster CAs, Keystone
// application credentials, the database). Namespaces and Secrets go to the
// test kube-apiserver through the real Core.

type fakeCerts struct{}

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
	saved     []string
}

func (s *memStore) GetClusterTemplateByUUID(_ context.Context, uuid string) (*objects.ClusterTemplate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.templates[uuid]; ok {
		return t, nil
	}
	return nil, exception.New("ClusterTemplateNotFound", map[string]any{"clustertemplate": uuid})
}

func (s *memStore) ListClusterNodeGroups(_ context.Context, clusterUUID string) ([]*objects.NodeGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*objects.NodeGroup(nil), s.ngs[clusterUUID]...), nil
}

func (s *memStore) SaveNodeGroup(_ context.Context, ng *objects.NodeGroup) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, ng.Name)
	return nil
}

// updateStatus plays the conductor's sync_cluster_status for c and its
// nodegroups ngs (the store's rows, changed in place): the driver observes
// them, the shared status machine judges the observation (observed again
// fresh when it asks), and the decision is applied to the rows; nodegroups
// whose deletion completed leave the store, and their rows in ngs are
// marked DELETE_COMPLETE. The status machine has no
// deadlines of its own here: the driver's (create_timeout, delete_timeout)
// are what these tests check.
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
	in := statusmachine.Input{Cluster: c, NodeGroups: ngs, Now: e.d.now()}
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
