package conductor

// Test harness: a real MariaDB database per test (through db.Store), a
// recording notifier, a fake cert manager and an in-test driver with
// failure injection, selected through the real drivers.Registry.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/drivers"
)

const (
	testProject = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
	testUser    = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
)

// newTestStore is a store on a fresh MariaDB database of the test's own at
// the schema head, dropped when the test ends.
func newTestStore(t *testing.T) *db.Store {
	t.Helper()
	return dbtest.MySQLStore(t, db.Options{MaxRetries: 1, RetryInterval: time.Second}, discardLog())
}

// note is one recorded notification.
type note struct {
	Priority, EventType string
	Outcome, Status     string
	Reason              any
	Content             map[string]any
}

func (n note) String() string {
	return fmt.Sprintf("%s %s/%s status=%s", n.Priority, n.EventType, n.Outcome, n.Status)
}

// recorder is a Notifier that keeps what it is asked to send.
type recorder struct {
	mu    sync.Mutex
	notes []note
}

func (r *recorder) Notify(_ context.Context, priority, eventType string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	var p struct {
		Outcome string `json:"outcome"`
		Target  struct {
			Attachments []struct {
				Content map[string]any `json:"content"`
			} `json:"attachments"`
		} `json:"target"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	n := note{Priority: priority, EventType: eventType, Outcome: p.Outcome}
	if len(p.Target.Attachments) == 1 {
		n.Content = p.Target.Attachments[0].Content
		n.Status, _ = n.Content["status"].(string)
		n.Reason = n.Content["status_reason"]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
	return nil
}

func (r *recorder) take() []note {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.notes
	r.notes = nil
	return out
}

// fakeCerts stands in for certmanager.Manager: references are counters.
type fakeCerts struct {
	mu      sync.Mutex
	n       int
	deleted []string
	failGen error
	signed  []string // ca types
}

func (f *fakeCerts) GenerateForCluster(_ context.Context, c *objects.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failGen != nil {
		return f.failGen
	}
	f.n++
	c.CACertRef = objects.Str(fmt.Sprintf("ca-%d", f.n))
	c.MagnumCertRef = objects.Str(fmt.Sprintf("client-%d", f.n))
	c.EtcdCACertRef = objects.Str(fmt.Sprintf("etcd-%d", f.n))
	c.FrontProxyCACertRef = objects.Str(fmt.Sprintf("fp-%d", f.n))
	return nil
}

func (f *fakeCerts) RotateForCluster(ctx context.Context, c *objects.Cluster) ([]string, error) {
	old := []string{objects.Deref(c.CACertRef), objects.Deref(c.MagnumCertRef), objects.Deref(c.EtcdCACertRef),
		objects.Deref(c.FrontProxyCACertRef)}
	if err := f.GenerateForCluster(ctx, c); err != nil {
		return nil, err
	}
	return old, nil
}

func (f *fakeCerts) DeleteRefs(_ context.Context, _ string, refs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, refs...)
}

func (f *fakeCerts) SignCSR(_ context.Context, c *objects.Cluster, csr, caType string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signed = append(f.signed, caType)
	return "signed(" + csr + ")by(" + caType + ")", nil
}

func (f *fakeCerts) GetCACertificate(_ context.Context, c *objects.Cluster, caType string) (string, error) {
	return "PEM of " + caType + " CA " + objects.Deref(c.CACertRef), nil
}

func (f *fakeCerts) DeleteForCluster(_ context.Context, c *objects.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range []*string{c.CACertRef, c.MagnumCertRef, c.EtcdCACertRef, c.FrontProxyCACertRef} {
		if r != nil {
			f.deleted = append(f.deleted, *r)
		}
	}
	return nil
}

// testDriver records calls and fails, panics or hangs on demand.
type testDriver struct {
	drivers.Unimplemented
	mu     sync.Mutex
	calls  []string
	fail   map[string]error
	panics map[string]bool
	// hang blocks the named method until release is closed, ignoring ctx.
	hang    map[string]bool
	release chan struct{}
	// entered is signalled when a hanging method starts.
	entered chan string
	// reqs keeps the request of the last call of each method.
	reqs map[string]any
	// obs is the observation a method returns with its result.
	obs map[string]*drivers.Observation
	// scribble makes every method write on the objects of its request,
	// as a careless driver would.
	scribble bool
	// onCall runs at the start of every method.
	onCall func(method string)
	// admitErr, when set, is what Admit answers (drivers.Admitter).
	admitErr error
}

func newTestDriver() *testDriver {
	return &testDriver{fail: map[string]error{}, panics: map[string]bool{}, hang: map[string]bool{},
		release: make(chan struct{}), entered: make(chan string, 8), reqs: map[string]any{},
		obs: map[string]*drivers.Observation{}}
}

// lastReq returns the request of the last call of m.
func (d *testDriver) lastReq(m string) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reqs[m]
}

var (
	_ drivers.Driver            = (*testDriver)(nil)
	_ drivers.PreDeleter        = (*testDriver)(nil)
	_ drivers.CARotator         = (*testDriver)(nil)
	_ drivers.CredentialRotator = (*testDriver)(nil)
	_ drivers.Admitter          = (*testDriver)(nil)
)

// Admit refuses with admitErr; it is not recorded in calls (it changes
// nothing).
func (d *testDriver) Admit(context.Context, drivers.ClusterRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.admitErr
}

func (d *testDriver) Name() string { return "test" }
func (d *testDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "test-os", COE: "kubernetes"}}
}

// do records the call of m with req, then fails, panics or hangs as asked.
func (d *testDriver) do(ctx context.Context, m string, req drivers.ClusterRequest, full any) error {
	d.mu.Lock()
	d.calls = append(d.calls, m)
	d.reqs[m] = full
	err, p, h, hook := d.fail[m], d.panics[m], d.hang[m], d.onCall
	scribble := d.scribble
	d.mu.Unlock()
	if hook != nil {
		hook(m)
	}
	if scribble {
		req.Cluster.Status = objects.CreateComplete
		req.Cluster.APIAddress = objects.Str("https://scribbled")
		for _, ng := range req.NodeGroups {
			ng.Status, ng.NodeCount = objects.CreateComplete, 99
		}
	}
	if p {
		panic("boom in " + m)
	}
	if h {
		d.entered <- m
		<-d.release
	}
	return err
}

func (d *testDriver) result(m, stackID string) drivers.Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	return drivers.Result{StackID: stackID, Observation: d.obs[m]}
}

func (d *testDriver) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

func (d *testDriver) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	if err := d.do(ctx, "create_cluster", req.ClusterRequest, req); err != nil {
		return drivers.Result{}, err
	}
	return d.result("create_cluster", "stack-"+objects.Deref(req.Cluster.UUID)), nil
}
func (d *testDriver) UpdateCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.result("update_cluster", ""), d.do(ctx, "update_cluster", req, req)
}
func (d *testDriver) DeleteCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.result("delete_cluster", ""), d.do(ctx, "delete_cluster", req, req)
}
func (d *testDriver) PreDeleteCluster(ctx context.Context, req drivers.ClusterRequest) error {
	return d.do(ctx, "pre_delete_cluster", req, req)
}
func (d *testDriver) ResizeCluster(ctx context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return d.result("resize_cluster", ""), d.do(ctx, "resize_cluster", req.ClusterRequest, req)
}
func (d *testDriver) UpgradeCluster(ctx context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	return d.result("upgrade_cluster", ""), d.do(ctx, "upgrade_cluster", req.ClusterRequest, req)
}
func (d *testDriver) CreateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.do(ctx, "create_nodegroup", req.ClusterRequest, req); err != nil {
		return drivers.Result{}, err
	}
	return d.result("create_nodegroup", "ng-stack"), nil
}
func (d *testDriver) UpdateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.result("update_nodegroup", ""), d.do(ctx, "update_nodegroup", req.ClusterRequest, req)
}
func (d *testDriver) DeleteNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.result("delete_nodegroup", ""), d.do(ctx, "delete_nodegroup", req.ClusterRequest, req)
}
func (d *testDriver) RotateCACertificate(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.result("rotate_ca_certificate", ""), d.do(ctx, "rotate_ca_certificate", req, req)
}
func (d *testDriver) RotateCredential(ctx context.Context, req drivers.ClusterRequest) error {
	return d.do(ctx, "rotate_credential", req, req)
}

// plainDriver has only the required methods (no optional capabilities).
type plainDriver struct{ drivers.Driver }

func (plainDriver) Name() string { return "plain" }
func (plainDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "plain-os", COE: "kubernetes"}}
}

// flakyStore fails the next n conditional saves as a database that went
// away would.
type flakyStore struct {
	*db.Store
	mu   sync.Mutex
	left int
}

func (s *flakyStore) failNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left = n
}

func (s *flakyStore) fail() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == 0 {
		return nil
	}
	s.left--
	return errors.New("db: save: invalid connection")
}

func (s *flakyStore) SaveClusterIf(ctx context.Context, c *objects.Cluster, cond db.ClusterCond) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.SaveClusterIf(ctx, c, cond)
}

func (s *flakyStore) SaveNodeGroupIf(ctx context.Context, ng *objects.NodeGroup, cond db.NodeGroupCond) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.SaveNodeGroupIf(ctx, ng, cond)
}

type env struct {
	t     *testing.T
	ctx   context.Context
	store *db.Store
	notes *recorder
	certs *fakeCerts
	drv   *testDriver
	h     *Handlers
	ct    *objects.ClusterTemplate
	plain *objects.ClusterTemplate
}

func newEnv(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	e := &env{t: t, store: newTestStore(t), notes: &recorder{}, certs: &fakeCerts{}, drv: newTestDriver()}
	t.Cleanup(func() {
		select {
		case <-e.drv.release:
		default:
			close(e.drv.release)
		}
	})
	e.ctx = request.With(context.Background(), &request.Context{
		UserID: testUser, ProjectID: testProject, RequestID: request.NewRequestID(),
		GlobalRequestID: "req-global-1", Roles: []string{"member"},
	})
	reg, err := drivers.NewRegistry(nil, e.drv, plainDriver{e.drv})
	if err != nil {
		t.Fatal(err)
	}
	e.h, err = New(Deps{
		Store: e.store, Certs: e.certs, Drivers: reg, Log: discardLog(),
		Notifications: NewNotifications(e.notes, e.store, "openstack", discardLog()),
		RetryBackoff:  time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ct = e.template("test-os")
	e.plain = e.template("plain-os")
	return e
}

func (e *env) template(distro string) *objects.ClusterTemplate {
	e.t.Helper()
	ct := &objects.ClusterTemplate{
		Name: objects.Str("ct-" + distro), ProjectID: objects.Str(testProject), UserID: objects.Str(testUser),
		ImageID: objects.Str("fedora-coreos"), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
		DockerVolumeSize: objects.Int(10), ClusterDistro: objects.Str(distro), Coe: "kubernetes",
		ServerType: objects.Str("vm"), FloatingIPEnabled: true,
	}
	if err := e.store.CreateClusterTemplate(e.ctx, ct); err != nil {
		e.t.Fatal(err)
	}
	return ct
}

// newCluster returns a cluster as magnum-api sends it to cluster_create.
func (e *env) newCluster(ct *objects.ClusterTemplate) *objects.Cluster {
	return &objects.Cluster{
		UUID: objects.Str(newUUID()), Name: objects.Str("c-" + newUUID()[:8]),
		ProjectID: objects.Str(testProject), UserID: objects.Str(testUser),
		ClusterTemplateID: ct.UUID, Keypair: objects.Str("kp"), Labels: map[string]string{"min_node_count": "1"},
		CreateTimeout: objects.Int(60), FloatingIPEnabled: true,
	}
}

// seed inserts a cluster in status with a master and a worker nodegroup
// and returns it as loaded from the database (as the API would send it).
func (e *env) seed(ct *objects.ClusterTemplate, status string, workers int64) *objects.Cluster {
	e.t.Helper()
	c := e.newCluster(ct)
	c.Status = status
	c.StatusReason = objects.Str("seeded")
	c.CACertRef, c.MagnumCertRef = objects.Str("ca-old"), objects.Str("client-old")
	c.EtcdCACertRef, c.FrontProxyCACertRef = objects.Str("etcd-old"), objects.Str("fp-old")
	if err := e.store.CreateCluster(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
	for _, ng := range []*objects.NodeGroup{
		{Name: "default-master", Role: objects.RoleMaster, NodeCount: 1},
		{Name: "default-worker", Role: objects.RoleWorker, NodeCount: workers},
	} {
		ng.ClusterID, ng.ProjectID, ng.IsDefault, ng.Status = *c.UUID, testProject, true, objects.CreateComplete
		ng.NodeAddresses = []string{"10.0.0." + fmt.Sprint(ng.NodeCount)}
		if err := e.store.CreateNodeGroup(e.ctx, ng); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.cluster(*c.UUID)
}

func (e *env) cluster(uuid string) *objects.Cluster {
	e.t.Helper()
	c, err := e.store.GetClusterByUUID(e.ctx, uuid)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) nodegroup(c *objects.Cluster, name string) *objects.NodeGroup {
	e.t.Helper()
	ng, err := e.store.GetNodeGroupByName(e.ctx, *c.UUID, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ng
}

func (e *env) setStatus(c *objects.Cluster, status string) {
	e.t.Helper()
	row := e.cluster(*c.UUID)
	row.Status = status
	if err := e.store.SaveCluster(e.ctx, row); err != nil {
		e.t.Fatal(err)
	}
}

// wantStatus checks the cluster row's status and reason ("" reason: null;
// "*": any non-empty reason).
func (e *env) wantStatus(uuid, status, reason string) {
	e.t.Helper()
	c := e.cluster(uuid)
	if c.Status != status {
		e.t.Errorf("cluster status %s, want %s", c.Status, status)
	}
	checkReason(e.t, "cluster", c.StatusReason, reason)
}

func (e *env) wantNGStatus(c *objects.Cluster, name, status, reason string, count int64) {
	e.t.Helper()
	ng := e.nodegroup(c, name)
	if ng.Status != status {
		e.t.Errorf("nodegroup %s status %s, want %s", name, ng.Status, status)
	}
	if ng.NodeCount != count {
		e.t.Errorf("nodegroup %s node_count %d, want %d", name, ng.NodeCount, count)
	}
	checkReason(e.t, "nodegroup "+name, ng.StatusReason, reason)
}

func checkReason(t *testing.T, what string, got *string, want string) {
	t.Helper()
	switch {
	case want == "" && got != nil:
		t.Errorf("%s status_reason %q, want null", what, *got)
	case want == "*" && (got == nil || *got == ""):
		t.Errorf("%s status_reason empty, want a reason", what)
	case want != "" && want != "*" && objects.Deref(got) != want:
		t.Errorf("%s status_reason %q, want %q", what, objects.Deref(got), want)
	}
}

// wantNotes checks the notifications sent since the last check, as
// "PRIORITY event/outcome status=STATUS".
func (e *env) wantNotes(want ...string) []note {
	e.t.Helper()
	got := e.notes.take()
	var s []string
	for _, n := range got {
		s = append(s, n.String())
	}
	if !slices.Equal(s, want) {
		e.t.Errorf("notifications\n got: %q\nwant: %q", s, want)
	}
	return got
}

func wantClass(t *testing.T, err error, class, message string) {
	t.Helper()
	var ee *exception.Error
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T), want %s", err, err, class)
	}
	if ee.Class != class {
		t.Errorf("error class %s (%v), want %s", ee.Class, ee, class)
	}
	if message != "" && ee.Message != message {
		t.Errorf("error message %q, want %q", ee.Message, message)
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
