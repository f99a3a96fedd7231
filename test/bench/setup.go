package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/test/harness"
)

// Versions magnum-api 15.0.1 sends (its objects' VERSION).
var pyManifest = map[string]string{
	objects.NameCluster:         "1.23",
	objects.NameClusterTemplate: "1.20",
	objects.NameNodeGroup:       "1.1",
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// database is one MariaDB schema of the benchmark.
type database struct {
	name string
	url  string // SQLAlchemy URL for magnum.conf
}

func openAdmin(ctx context.Context, addr string) (*sql.DB, error) {
	return openMySQL(ctx, addr, "")
}

// openDatabase opens database name at addr (root, no password), for the
// raw server's list query: as many connections as callers kept open.
func openDatabase(addr, name string) (*sql.DB, error) {
	db, err := openMySQL(context.Background(), addr, name)
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(64)
	return db, nil
}

func openMySQL(ctx context.Context, addr, dbName string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.DBName = dbName
	cfg.Timeout = 5 * time.Second
	conn, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.PingContext(pctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("MariaDB at %s (root, no password) does not answer: %w", addr, err)
	}
	return conn, nil
}

func createDatabase(ctx context.Context, admin *sql.DB, addr, prefix string) (*database, error) {
	name := randomName(prefix)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci"); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	return &database{name: name, url: "mysql+pymysql://root@" + addr + "/" + name + "?charset=utf8"}, nil
}

func dropDatabase(admin *sql.DB, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	return err
}

// server is one conductor under test.
type server struct {
	label string // "python" | "ours" | "python-23.0.0"
	// versions, when set, is the object manifest of the
	// object_class_action_versions calls magnum-api 2026.2 sends in place
	// of 15.0.1's object_class_action (Magnum 23.0.0 serves only those).
	versions map[string]string
	exchange string
	topic    string
	conf     string
	cmd      *exec.Cmd
	log      *tailBuffer
	exited   chan struct{}
	client   *oslo.Client
	api      *conductorapi.API
	serving  time.Time // when it first answered ping_conductor
}

// writeConf writes a magnum.conf for one conductor. Python ignores the
// options it does not know ([simulated_driver]); workers is left to its
// default (the CPU count) for both.
func writeConf(dir string, s *server, dbURL string) error {
	body := fmt.Sprintf(`[DEFAULT]
transport_url = %s
control_exchange = %s
host = %s
[conductor]
topic = %s
[database]
connection = %s
[certificates]
cert_manager_type = x509keypair
[oslo_messaging_notifications]
driver = noop
[simulated_driver]
enabled = true
operation_delay = 0
[kubernetes]
health_polling_interval = 0
`, harness.Broker, s.exchange, "bench-"+s.label+"-host", s.topic, dbURL)
	s.conf = filepath.Join(dir, s.label+".conf")
	return os.WriteFile(s.conf, []byte(body), 0o600)
}

// tailBuffer keeps the last 64 KiB a process logged.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 64<<10 {
		t.b = append([]byte(nil), t.b[len(t.b)-32<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func runCommand(ctx context.Context, timeout time.Duration, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(string(out), 4000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// start runs argv as the leader of its own process group (the Python
// conductor forks workers; stop ends the whole group).
func (s *server) start(argv []string) error {
	s.log = &tailBuffer{}
	s.exited = make(chan struct{})
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.SysProcAttr = harness.ProcessGroup()
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s conductor: %w", s.label, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	return nil
}

// stop sends SIGTERM to the process group, SIGKILL after 10 s.
func (s *server) stop() {
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	// Workers may outlive the leader: make sure the group is gone.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// connect makes the load generator's client for s.
func (s *server) connect() error {
	opts := oslo.DefaultOptions()
	opts.TransportURL = harness.Broker
	opts.ControlExchange = s.exchange
	opts.RPCResponseTimeout = 60 * time.Second
	c, err := oslo.NewClient(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	s.client = c
	s.api = conductorapi.New(c, s.topic)
	return nil
}

// waitPing waits until the conductor answers ping_conductor.
func (s *server) waitPing(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("%s conductor exited during start-up:\n%s", s.label, tail(s.log.String(), 4000))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ok, err := s.api.PingConductor(adminCtx(cctx))
		cancel()
		if err == nil && ok {
			s.serving = time.Now()
			return nil
		}
		last = err
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("%s conductor did not answer ping_conductor within %s (last error %v):\n%s",
		s.label, within, last, tail(s.log.String(), 4000)) //nolint:errorlint // last may be nil: text for the reader
}

// adminCtx attaches the request context a cloud admin's magnum-api request
// carries (admin, all tenants), as magnumctl does.
func adminCtx(ctx context.Context) context.Context {
	return request.With(ctx, &request.Context{IsAdmin: true, AllTenants: true, Roles: []string{"admin"},
		UserID: "bench-user", ProjectID: "bench-project", RequestID: request.NewRequestID()})
}

// seedData is what both databases hold before the load.
type seedData struct {
	template *objects.ClusterTemplate
	clusters []*objects.Cluster
	ngs      []*objects.NodeGroup
}

func newSeed(n int) *seedData {
	ct := &objects.ClusterTemplate{UUID: objects.Str(uuid.NewString()), Name: objects.Str("bench-template"),
		ProjectID: objects.Str("bench-project"), UserID: objects.Str("bench-user"), Coe: "kubernetes",
		ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"), ImageID: objects.Str("fedora-coreos"),
		FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"), KeypairID: objects.Str("kp"),
		ExternalNetworkID: objects.Str("public"), NetworkDriver: objects.Str("calico"),
		DockerVolumeSize: objects.Int(10), Labels: map[string]string{"kube_tag": "v1.33.1"}, Public: true,
		FloatingIPEnabled: true}
	objects.MarkChanged(ct, "floating_ip_enabled", "public")
	s := &seedData{template: ct}
	for i := range n {
		c := &objects.Cluster{UUID: objects.Str(uuid.NewString()), Name: objects.Str(fmt.Sprintf("bench-%03d", i)),
			ProjectID: objects.Str("bench-project"), UserID: objects.Str("bench-user"), ClusterTemplateID: ct.UUID,
			Keypair: objects.Str("kp"), DockerVolumeSize: objects.Int(10), Labels: map[string]string{"kube_tag": "v1.33.1"},
			MasterFlavorID: objects.Str("m1.medium"), FlavorID: objects.Str("m1.small"),
			StackID: objects.Str("seeded"), Status: objects.CreateComplete, StatusReason: objects.Str("seeded"),
			CreateTimeout: objects.Int(60), APIAddress: objects.Str(fmt.Sprintf("https://10.0.%d.%d:6443", i/250, i%250+1)),
			CoeVersion: objects.Str("v1.33.1"), ContainerVersion: objects.Str("1.7.27"), FloatingIPEnabled: true}
		objects.MarkChanged(c, "floating_ip_enabled", "master_lb_enabled")
		s.clusters = append(s.clusters, c)
		for _, role := range []string{objects.RoleMaster, objects.RoleWorker} {
			count, flavor := int64(1), "m1.medium"
			if role == objects.RoleWorker {
				count, flavor = 3, "m1.small"
			}
			ng := &objects.NodeGroup{UUID: uuid.NewString(), Name: "default-" + role, ClusterID: *c.UUID,
				ProjectID: "bench-project", Role: role, NodeCount: count, MinNodeCount: 1, IsDefault: true,
				Status: objects.CreateComplete, ImageID: objects.Str("fedora-coreos"), FlavorID: objects.Str(flavor),
				DockerVolumeSize: objects.Int(10), Labels: map[string]string{"kube_tag": "v1.33.1"},
				StackID: objects.Str("seeded"), Version: objects.Str("v1.33.1")}
			s.ngs = append(s.ngs, ng)
		}
	}
	return s
}

// seed creates the data through s's own object_action create calls (the
// indirection API magnum-api uses), at the versions 15.0.1 sends.
func (d *seedData) seed(ctx context.Context, s *server) error {
	create := func(o objects.Object) error {
		prim, err := objects.EncodeJSON(o, pyManifest[o.ObjName()], pyManifest)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, _, err = s.api.ObjectAction(adminCtx(cctx), prim, "create", []any{}, map[string]any{})
		if err != nil {
			return fmt.Errorf("%s %s.create: %w", s.label, o.ObjName(), err)
		}
		return nil
	}
	if err := create(objects.Clone(d.template)); err != nil {
		return err
	}
	// A few at a time: the seed is not measured.
	sem := make(chan struct{}, 4)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i, c := range d.clusters {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := create(objects.Clone(c))
			for _, ng := range d.ngs[2*i : 2*i+2] {
				if err == nil {
					err = create(objects.Clone(ng))
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// listClusters is Cluster.list as magnum-api 15.0.1's GET /v1/clusters
// sends it (objver 1.23, limit from [api]/max_limit, sort by id).
func listClusters(ctx context.Context, s *server) (int, error) {
	raw, err := listRaw(ctx, s)
	if err != nil {
		return 0, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return 0, fmt.Errorf("decoding Cluster.list: %w", err)
	}
	return len(items), nil
}

// countClusters counts the Cluster primitives in a Cluster.list result
// without decoding it (the load generator shares the machine with the
// servers): a primitive names its class once, and a nested ClusterTemplate
// does not match. It looks for `.name":`, rare in a primitive, and checks
// what is around it, which is an order of magnitude faster than searching
// for the whole key, whose first byte is a quote.
func countClusters(raw []byte) int {
	const obj, key = `"magnum_object`, `.name":`
	n := 0
	for {
		i := bytes.Index(raw, []byte(key))
		if i < 0 {
			return n
		}
		isName := i >= len(obj) && string(raw[i-len(obj):i]) == obj
		raw = raw[i+len(key):]
		if len(raw) > 0 && raw[0] == ' ' {
			raw = raw[1:]
		}
		if isName && bytes.HasPrefix(raw, []byte(`"Cluster"`)) {
			n++
		}
	}
}

// listRaw is Cluster.list's result as received.
func listRaw(ctx context.Context, s *server) ([]byte, error) {
	args, kwargs := []any{1000, nil}, map[string]any{"sort_key": "id", "sort_dir": "asc", "filters": map[string]any{}}
	if s.versions != nil {
		return s.api.ObjectClassActionVersions(adminCtx(ctx), objects.NameCluster, "list", s.versions, args, kwargs)
	}
	return s.api.ObjectClassAction(adminCtx(ctx), objects.NameCluster, "list", "1.23", args, kwargs)
}

// versions2026 is what magnum-api 23.0.0 sends with a Cluster class call
// (oslo's obj_tree_get_versions("Cluster") there).
func versions2026() map[string]string {
	return map[string]string{objects.NameCluster: "1.24", objects.NameClusterTemplate: "1.21"}
}

// listClustersFast is listClusters with countClusters.
func listClustersFast(ctx context.Context, s *server) (int, error) {
	raw, err := listRaw(ctx, s)
	if err != nil {
		return 0, err
	}
	return countClusters(raw), nil
}

// getStatus is Cluster.get_by_uuid; "" when the cluster does not exist yet.
func getStatus(ctx context.Context, s *server, id string) (string, error) {
	var raw json.RawMessage
	var err error
	if s.versions != nil {
		raw, err = s.api.ObjectClassActionVersions(adminCtx(ctx), objects.NameCluster, "get_by_uuid", s.versions,
			[]any{id}, map[string]any{})
	} else {
		raw, err = s.api.ObjectClassAction(adminCtx(ctx), objects.NameCluster, "get_by_uuid", "1.23",
			[]any{id}, map[string]any{})
	}
	if err != nil {
		if errors.Is(err, exception.ClassClusterNotFound.New(nil)) {
			return "", nil
		}
		return "", err
	}
	c, err := objects.DecodeCluster(raw)
	if err != nil {
		return "", err
	}
	return c.Status, nil
}

// createPrimitive is the Cluster magnum-api sends in cluster_create.
func createPrimitive(ct *objects.ClusterTemplate, name string) (string, json.RawMessage, error) {
	id := uuid.NewString()
	c := &objects.Cluster{UUID: objects.Str(id), Name: objects.Str(name), ProjectID: objects.Str("bench-project"),
		UserID: objects.Str("bench-user"), ClusterTemplateID: ct.UUID, Keypair: ct.KeypairID,
		FlavorID: ct.FlavorID, MasterFlavorID: ct.MasterFlavorID, DockerVolumeSize: ct.DockerVolumeSize,
		Labels: map[string]string{"kube_tag": "v1.33.1"}, CreateTimeout: objects.Int(60),
		FloatingIPEnabled: true}
	objects.MarkChanged(c, "floating_ip_enabled", "master_lb_enabled")
	prim, err := objects.EncodeJSON(c, "1.23", pyManifest)
	return id, prim, err
}

// bytesMiB formats bytes as MiB.
func bytesMiB(b int64) float64 { return float64(b) / (1 << 20) }
