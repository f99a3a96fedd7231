package capi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// memCore stands in for Namespaces and Secrets, which the CRD-only test API
// server does not serve.
type memCore struct {
	mu         sync.Mutex
	namespaces map[string]map[string]string
	secrets    map[string]*corev1.Secret // ns/name
	applies    int
}

func newMemCore() *memCore {
	return &memCore{namespaces: map[string]map[string]string{}, secrets: map[string]*corev1.Secret{}}
}

func (m *memCore) EnsureNamespace(_ context.Context, name string, l map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.namespaces[name] = l
	return nil
}

func (m *memCore) ApplySecret(_ context.Context, s *corev1.Secret) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.namespaces[s.Namespace]; !ok {
		return fmt.Errorf("namespaces %q not found", s.Namespace)
	}
	m.applies++
	m.secrets[s.Namespace+"/"+s.Name] = s.DeepCopy()
	return nil
}

func (m *memCore) ListSecrets(_ context.Context, ns, selector string) ([]corev1.Secret, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []corev1.Secret
	for k, s := range m.secrets {
		if strings.HasPrefix(k, ns+"/") && sel.Matches(labels.Set(s.Labels)) {
			out = append(out, *s.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memCore) DeleteSecret(_ context.Context, ns, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.secrets, ns+"/"+name)
	return nil
}

func (m *memCore) secret(ns, name string) *corev1.Secret {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.secrets[ns+"/"+name]
}

type fakeCerts struct{}

func (fakeCerts) CAKeyPair(_ context.Context, c *objects.Cluster, kind CAKind) ([]byte, []byte, error) {
	return []byte("CERT " + string(kind) + " " + deref(c.UUID)), []byte("KEY " + string(kind)), nil
}

type fakeCreds struct {
	mu        sync.Mutex
	n         int
	revoked   []string
	verifyErr error
}

func (f *fakeCreds) Issue(_ context.Context, c *objects.Cluster) (Credential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return Credential{ID: fmt.Sprintf("appcred-%d", f.n), Secret: "s3cret", AuthURL: "https://keystone.example/v3"}, nil
}

func (f *fakeCreds) Verify(context.Context, Credential) error { return f.verifyErr }

func (f *fakeCreds) Revoke(_ context.Context, _ *objects.Cluster, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, id)
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
