package periodic_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// memStore is an in-memory ClusterStore and ServiceStore for the unit tests
// that need no database. It copies objects in and out like a database and
// records which fields each save wrote.
type memStore struct {
	mu        sync.Mutex
	clusters  map[string]*objects.Cluster
	templates map[string]*objects.ClusterTemplate
	ngs       map[string]map[string]*objects.NodeGroup
	services  map[string]*objects.MagnumService
	saved     map[string][][]string // cluster uuid → fields of each save
	listErr   error
	destroyed map[string]int
	now       func() time.Time
}

func newMemStore() *memStore {
	return &memStore{
		clusters: map[string]*objects.Cluster{}, templates: map[string]*objects.ClusterTemplate{},
		ngs: map[string]map[string]*objects.NodeGroup{}, services: map[string]*objects.MagnumService{},
		saved: map[string][][]string{}, destroyed: map[string]int{}, now: time.Now,
	}
}

func copyCluster(c *objects.Cluster) *objects.Cluster {
	out := *c
	out.Labels = maps.Clone(c.Labels)
	out.HealthStatusReason = maps.Clone(c.HealthStatusReason)
	objects.ResetChanges(&out)
	return &out
}

func copyNG(n *objects.NodeGroup) *objects.NodeGroup {
	out := *n
	out.NodeAddresses = slices.Clone(n.NodeAddresses)
	out.Labels = maps.Clone(n.Labels)
	objects.ResetChanges(&out)
	return &out
}

func (s *memStore) addCluster(c *objects.Cluster, ngs ...*objects.NodeGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[*c.UUID] = copyCluster(c)
	s.ngs[*c.UUID] = map[string]*objects.NodeGroup{}
	for _, n := range ngs {
		n.ClusterID = *c.UUID
		s.ngs[*c.UUID][n.UUID] = copyNG(n)
	}
}

func (s *memStore) cluster(uuid string) *objects.Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clusters[uuid]; ok {
		return copyCluster(c)
	}
	return nil
}

func (s *memStore) ListClusters(_ context.Context, _ db.ListOpts, f db.ClusterFilters) ([]*objects.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []*objects.Cluster
	for _, c := range s.clusters {
		if f.Status == nil || slices.Contains(f.Status, c.Status) {
			out = append(out, copyCluster(c))
		}
	}
	slices.SortFunc(out, func(a, b *objects.Cluster) int { return int(a.ID - b.ID) })
	return out, nil
}

func (s *memStore) GetClusterTemplateByUUID(_ context.Context, uuid string) (*objects.ClusterTemplate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct, ok := s.templates[uuid]
	if !ok {
		return nil, exception.ClusterTemplateNotFound(uuid)
	}
	out := *ct
	return &out, nil
}

func (s *memStore) save(c *objects.Cluster, allowed []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.clusters[objects.Deref(c.UUID)]
	if !ok {
		return exception.ClusterNotFound(objects.Deref(c.UUID))
	}
	if allowed != nil && !slices.Contains(allowed, cur.Status) {
		return db.ErrStatusChanged
	}
	changes := objects.Changes(c)
	s.saved[*c.UUID] = append(s.saved[*c.UUID], changes)
	for _, f := range changes {
		switch f {
		case "status":
			cur.Status = c.Status
		case "status_reason":
			cur.StatusReason = c.StatusReason
		case "health_status":
			cur.HealthStatus = c.HealthStatus
		case "health_status_reason":
			cur.HealthStatusReason = maps.Clone(c.HealthStatusReason)
		case "api_address":
			cur.APIAddress = c.APIAddress
		case "coe_version":
			cur.CoeVersion = c.CoeVersion
		case "container_version":
			cur.ContainerVersion = c.ContainerVersion
		case "stack_id":
			cur.StackID = c.StackID
		case "cluster_template_id":
			cur.ClusterTemplateID = c.ClusterTemplateID
		case "labels":
			cur.Labels = maps.Clone(c.Labels)
		}
	}
	objects.ResetChanges(cur)
	objects.ResetChanges(c)
	return nil
}

func (s *memStore) SaveCluster(_ context.Context, c *objects.Cluster) error { return s.save(c, nil) }

func (s *memStore) SaveClusterIfStatus(_ context.Context, c *objects.Cluster, allowed []string) error {
	return s.save(c, allowed)
}

// InTx runs fn: each call of the memory store is atomic on its own, which
// is all the unit tests need (the real transactions are tested on MariaDB).
func (s *memStore) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return fn(ctx)
}

func (s *memStore) LockCluster(_ context.Context, uuid string) (*objects.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[uuid]
	if !ok {
		return nil, exception.ClusterNotFound(uuid)
	}
	return copyCluster(c), nil
}

func (s *memStore) SaveClusterIf(_ context.Context, c *objects.Cluster, cond db.ClusterCond) error {
	s.mu.Lock()
	cur, ok := s.clusters[objects.Deref(c.UUID)]
	if ok && len(cond.Fields) > 0 && !db.ClusterUnchanged(cond.Read, cur) {
		s.mu.Unlock()
		return db.ErrStatusChanged
	}
	s.mu.Unlock()
	return s.save(c, cond.Status)
}

func (s *memStore) SaveNodeGroupIf(_ context.Context, n *objects.NodeGroup, cond db.NodeGroupCond) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.ngs[n.ClusterID][n.UUID]
	switch {
	case !ok:
		return exception.NodeGroupNotFound(n.UUID)
	case cond.Status != nil && !slices.Contains(cond.Status, cur.Status),
		len(cond.Fields) > 0 && !db.NodeGroupUnchanged(cond.Read, cur):
		return db.ErrStatusChanged
	}
	s.ngs[n.ClusterID][n.UUID] = copyNG(n)
	objects.ResetChanges(n)
	return nil
}

func (s *memStore) DestroyNodeGroupIf(_ context.Context, clusterUUID, uuid string, cond db.NodeGroupCond) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.ngs[clusterUUID][uuid]
	switch {
	case !ok:
		return exception.NodeGroupNotFound(uuid)
	case cond.Status != nil && !slices.Contains(cond.Status, cur.Status),
		len(cond.Fields) > 0 && !db.NodeGroupUnchanged(cond.Read, cur):
		return db.ErrStatusChanged
	}
	delete(s.ngs[clusterUUID], uuid)
	return nil
}

func (s *memStore) DestroyCluster(_ context.Context, uuid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clusters[uuid]; !ok {
		return exception.ClusterNotFound(uuid)
	}
	delete(s.clusters, uuid)
	s.destroyed[uuid]++
	return nil
}

func (s *memStore) ListNodeGroupsOfClusters(ctx context.Context, clusterUUIDs []string) (map[string][]*objects.NodeGroup, error) {
	out := map[string][]*objects.NodeGroup{}
	for _, u := range clusterUUIDs {
		ngs, err := s.ListNodeGroups(ctx, u, db.ListOpts{}, db.NodeGroupFilters{})
		if err != nil {
			return nil, err
		}
		if len(ngs) > 0 {
			out[u] = ngs
		}
	}
	return out, nil
}

func (s *memStore) ListNodeGroups(_ context.Context, clusterUUID string, _ db.ListOpts, _ db.NodeGroupFilters) ([]*objects.NodeGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*objects.NodeGroup
	for _, n := range s.ngs[clusterUUID] {
		out = append(out, copyNG(n))
	}
	slices.SortFunc(out, func(a, b *objects.NodeGroup) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out, nil
}

func (s *memStore) SaveNodeGroup(_ context.Context, n *objects.NodeGroup) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ngs[n.ClusterID][n.UUID]; !ok {
		return exception.NodeGroupNotFound(n.UUID)
	}
	s.ngs[n.ClusterID][n.UUID] = copyNG(n)
	objects.ResetChanges(n)
	return nil
}

func (s *memStore) DestroyNodeGroup(_ context.Context, clusterUUID, uuid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ngs[clusterUUID][uuid]; !ok {
		return exception.NodeGroupNotFound(uuid)
	}
	delete(s.ngs[clusterUUID], uuid)
	return nil
}

func (s *memStore) nodeGroups(clusterUUID string) map[string]*objects.NodeGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ngs[clusterUUID])
}

func (s *memStore) ListMagnumServices(_ context.Context, _ db.ListOpts) ([]*objects.MagnumService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*objects.MagnumService
	for _, m := range s.services {
		c := *m
		out = append(out, &c)
	}
	return out, nil
}

func (s *memStore) ReportServiceUp(_ context.Context, host, binary string) (*objects.MagnumService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := host + "/" + binary
	m, ok := s.services[k]
	if !ok {
		m = &objects.MagnumService{ID: int64(len(s.services) + 1), Host: objects.Str(host), Binary: objects.Str(binary)}
		s.services[k] = m
	}
	now := s.now()
	m.ReportCount++
	m.LastSeenUp = &now
	c := *m
	return &c, nil
}
