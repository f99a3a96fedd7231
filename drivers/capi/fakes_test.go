package capi

import (
	"context"
	"fmt"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
	"sync"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
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
