package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
)

// Client is magnum-api's side of a scenario: the conductor RPC API on the
// site's broker, as magnum-api calls it.
type Client struct {
	API    *conductorapi.API
	client *oslo.Client
}

// NewClient connects to s's broker with the [oslo_messaging_rabbit]
// options of the conductors (quorum or durable queues).
func NewClient(t testing.TB, s Site, rabbit oslo.RabbitOptions) *Client {
	t.Helper()
	opts := oslo.DefaultOptions()
	opts.TransportURL = s.Broker
	opts.ControlExchange = s.Exchange
	opts.Rabbit = rabbit
	c, err := oslo.NewClient(opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &Client{API: conductorapi.New(c, s.Topic), client: c}
}

// AdminCtx carries the request context of a cloud admin's request.
func AdminCtx(ctx context.Context) context.Context {
	return request.With(ctx, &request.Context{IsAdmin: true, AllTenants: true, Roles: []string{"admin"},
		UserID: "chaos-user", ProjectID: "chaos-project", RequestID: request.NewRequestID()})
}

// CreateTemplate creates a cluster template of the simulated driver
// through object_action create, as magnum-api does.
func (c *Client) CreateTemplate(t testing.TB) *objects.ClusterTemplate {
	t.Helper()
	ct := &objects.ClusterTemplate{UUID: objects.Str(uuid.NewString()), Name: objects.Str("chaos-template"),
		ProjectID: objects.Str("chaos-project"), UserID: objects.Str("chaos-user"), Coe: "kubernetes",
		ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"), Driver: objects.Str("simulated"),
		ImageID: objects.Str("img"), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
		KeypairID: objects.Str("kp"), ExternalNetworkID: objects.Str("public"), NetworkDriver: objects.Str("calico"),
		DockerVolumeSize: objects.Int(10), Labels: map[string]string{"kube_tag": "v1.33.1"}, Public: true}
	prim, err := objects.EncodeJSON(ct, objects.NewestVersion(objects.NameClusterTemplate), objects.Manifest(ct))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(AdminCtx(context.Background()), 60*time.Second)
	defer cancel()
	if _, _, err := c.API.ObjectAction(ctx, prim, "create", []any{}, map[string]any{}); err != nil {
		t.Fatalf("creating the cluster template: %v", err)
	}
	return ct
}

// ClusterPrimitive is the Cluster magnum-api sends in cluster_create.
func ClusterPrimitive(t testing.TB, ct *objects.ClusterTemplate, name string) (string, json.RawMessage) {
	t.Helper()
	id := uuid.NewString()
	c := &objects.Cluster{UUID: objects.Str(id), Name: objects.Str(name), ProjectID: objects.Str("chaos-project"),
		UserID: objects.Str("chaos-user"), ClusterTemplateID: ct.UUID, Keypair: ct.KeypairID,
		FlavorID: ct.FlavorID, MasterFlavorID: ct.MasterFlavorID, DockerVolumeSize: ct.DockerVolumeSize,
		Labels: map[string]string{"kube_tag": "v1.33.1"}, CreateTimeout: objects.Int(60)}
	prim, err := objects.EncodeJSON(c, objects.NewestVersion(objects.NameCluster), objects.Manifest(c))
	if err != nil {
		t.Fatal(err)
	}
	return id, prim
}

// CastRecord is one cluster_create cast of a load.
type CastRecord struct {
	UUID string
	At   time.Time
	Took time.Duration
	Err  error // nil: the broker confirmed it
}

// CallRecord is one call of a load.
type CallRecord struct {
	Method     string
	Start, End time.Time
	Err        error
}

// Load sends a steady stream of cluster_create casts and calls
// (ping_conductor, and ClusterTemplate.get through the indirection API,
// which reads the database) and records what became of each.
type Load struct {
	c  *Client
	ct *objects.ClusterTemplate

	mu    sync.Mutex
	casts []CastRecord
	calls []CallRecord

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartLoad casts every castEvery and runs callers goroutines that call in
// a loop, each call bounded by callTimeout, until Stop.
func StartLoad(t testing.TB, c *Client, ct *objects.ClusterTemplate, castEvery time.Duration, callers int, callTimeout time.Duration) *Load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Load{c: c, ct: ct, cancel: cancel}
	t.Cleanup(l.Stop)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(castEvery)
		defer tick.Stop()
		var inflight sync.WaitGroup
		defer inflight.Wait()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			id, prim := ClusterPrimitive(t, ct, fmt.Sprintf("chaos-%05d", n))
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				start := time.Now()
				// As magnum-api: a cast waits for the broker until
				// rpc_response_timeout.
				cctx, cancel := context.WithTimeout(AdminCtx(context.Background()), 60*time.Second)
				defer cancel()
				to := 60
				err := c.API.ClusterCreateAsync(cctx, prim, 1, 1, &to)
				l.mu.Lock()
				l.casts = append(l.casts, CastRecord{UUID: id, At: start, Took: time.Since(start), Err: err})
				l.mu.Unlock()
			}()
		}
	}()
	for i := range callers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				cctx, cancel := context.WithTimeout(AdminCtx(context.Background()), callTimeout)
				start := time.Now()
				method := "ping_conductor"
				var err error
				if (i+n)%2 == 0 {
					_, err = c.API.PingConductor(cctx)
				} else {
					method = "object_class_action ClusterTemplate.get_by_uuid"
					_, err = c.API.ObjectClassAction(cctx, objects.NameClusterTemplate, "get_by_uuid",
						objects.NewestVersion(objects.NameClusterTemplate), []any{*ct.UUID}, map[string]any{})
				}
				cancel()
				l.mu.Lock()
				l.calls = append(l.calls, CallRecord{Method: method, Start: start, End: time.Now(), Err: err})
				l.mu.Unlock()
				// A steady load, not a flood: about 10 calls a second per caller.
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	return l
}

// Stop ends the load and waits for what is in flight.
func (l *Load) Stop() {
	l.cancel()
	l.wg.Wait()
}

// Casts and Calls return the records so far.
func (l *Load) Casts() []CastRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]CastRecord(nil), l.casts...)
}

// Calls returns the call records so far.
func (l *Load) Calls() []CallRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]CallRecord(nil), l.calls...)
}

// Fault is an injected failure: what, and when it happened.
type Fault struct {
	What string
	At   time.Time
}

// CallReport sorts the failed calls: those in flight at a fault (started
// before it, ended after it) and the others.
type CallReport struct {
	Total, Failed, InFlightAtFault int
	Others                         []CallRecord
}

// Report classifies calls against faults; a call that failed without being
// in flight at any fault (nor within settle after one: the time a broker
// needs to elect a queue leader, or the others to notice a dead conductor)
// is listed in Others.
func Report(calls []CallRecord, faults []Fault, settle time.Duration) CallReport {
	var r CallReport
	r.Total = len(calls)
	for _, c := range calls {
		if c.Err == nil {
			continue
		}
		r.Failed++
		near := false
		for _, f := range faults {
			if !c.Start.After(f.At.Add(settle)) && !c.End.Before(f.At) {
				near = true
			}
		}
		if near {
			r.InFlightAtFault++
		} else {
			r.Others = append(r.Others, c)
		}
	}
	return r
}

// Rows reads status, stack_id and ca_cert_ref of every cluster in the
// database at dsnURL (a [database]/connection URL).
type Row struct {
	Status    string
	Reason    sql.NullString
	StackID   sql.NullString
	CACertRef sql.NullString
	Updated   sql.NullTime
}

// OpenDB opens a [database]/connection URL (mysql+pymysql://root@host/db)
// with the Go driver.
func OpenDB(t testing.TB, connection string) *sql.DB {
	t.Helper()
	rest, ok := strings.CutPrefix(connection, "mysql+pymysql://")
	if !ok {
		t.Fatalf("not a MySQL URL: %s", connection)
	}
	rest, _, _ = strings.Cut(rest, "?")
	userHost, name, _ := strings.Cut(rest, "/")
	user, host, _ := strings.Cut(userHost, "@")
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName, cfg.ParseTime = user, "tcp", host, name, true
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 10*time.Second, 10*time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Clusters reads every cluster row, by uuid.
func Clusters(t testing.TB, db *sql.DB) map[string]Row {
	t.Helper()
	var rows *sql.Rows
	var err error
	for try := 0; try < 30; try++ { // a database node may be rejoining
		if rows, err = db.Query("SELECT uuid, status, status_reason, stack_id, ca_cert_ref, updated_at FROM cluster"); err == nil {
			break
		}
		time.Sleep(time.Second) // polling a peer that is coming back
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]Row{}
	for rows.Next() {
		var id string
		var r Row
		if err := rows.Scan(&id, &r.Status, &r.Reason, &r.StackID, &r.CACertRef, &r.Updated); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// FailedReasons counts the status_reason of the *_FAILED rows.
func FailedReasons(rows map[string]Row) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		if strings.HasSuffix(r.Status, "_FAILED") {
			out[r.Reason.String]++
		}
	}
	return out
}

// StatusCounts counts rows by status, for the log.
func StatusCounts(rows map[string]Row) string {
	n := map[string]int{}
	for _, r := range rows {
		n[r.Status]++
	}
	var parts []string
	for s, c := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", s, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
