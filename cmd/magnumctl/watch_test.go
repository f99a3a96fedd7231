package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

const testBroker = "rabbit://guest:guest@127.0.0.1:5672/"

// fakeConductor serves, on the real broker, what magnumctl asks of a
// conductor: the template "dev"; the cluster "c1" (watchedUUID), whose
// lookups answer a scripted sequence of statuses (the last one repeats;
// "" means the row is gone); a default worker nodegroup; and the change
// methods, which it records with their request context and answers with
// refuse[method] when set.
type fakeConductor struct {
	exchange, topic string

	mu       sync.Mutex
	statuses []string
	reason   string
	gets     int
	requests int                         // every request received
	calls    []string                    // the change methods received, in order
	contexts map[string]*request.Context // the request context of each change method
	kwargs   map[string]map[string]any   // the arguments of each change method
	refuse   map[string]error
	// lookupErrors answer the Cluster lookups after a change, in turn,
	// before the statuses do.
	lookupErrors []error
	// updateAnswersNone makes cluster_update answer None (nothing changed).
	updateAnswersNone bool
	created           string // the uuid of the cluster a cluster_create named
}

const watchedUUID = "5d12f6fd-a196-4bf8-ae4b-8f72ec2f2aa9"

func startFakeConductor(t *testing.T, reason string, statuses ...string) *fakeConductor {
	t.Helper()
	testkit.NeedsService(t, "RabbitMQ")
	var b [6]byte
	_, _ = rand.Read(b[:])
	f := &fakeConductor{exchange: "ctl_" + hex.EncodeToString(b[:]), topic: "ctl_" + hex.EncodeToString(b[:]),
		statuses: statuses, reason: reason, contexts: map[string]*request.Context{}, kwargs: map[string]map[string]any{},
		refuse: map[string]error{}}
	d := oslo.NewDispatcher()
	if err := d.Handle("object_class_action", oslo.Method(func(ctx context.Context, a struct {
		ObjName   string         `json:"objname"`
		ObjMethod string         `json:"objmethod"`
		ObjVer    string         `json:"objver"`
		Args      []any          `json:"args"`
		Kwargs    map[string]any `json:"kwargs"`
	}) (any, error) {
		f.mu.Lock()
		f.requests++
		created := f.created
		f.mu.Unlock()
		arg := func(i int) string {
			if len(a.Args) > i {
				s, _ := a.Args[i].(string)
				return s
			}
			return ""
		}
		switch {
		case a.ObjName == objects.NameClusterTemplate && arg(0) == "dev":
			return objects.Encode(&objects.ClusterTemplate{ID: 3, UUID: objects.Str("7c3a3b9e-1d7e-4bd0-9b0a-3f1c2d4e5f60"),
				Name: objects.Str("dev"), Coe: "kubernetes", FloatingIPEnabled: true}, a.ObjVer, nil)
		case a.ObjName == objects.NameClusterTemplate:
			return nil, exception.ClusterTemplateNotFound(arg(0))
		case a.ObjName == objects.NameNodeGroup && a.ObjMethod == "list":
			return []any{mustEncode(&objects.NodeGroup{ID: 1, UUID: "0b9f4c7e-5a53-4a4e-9d1c-2b3c4d5e6f70", Name: "default-worker",
				ClusterID: watchedUUID, Role: "worker", IsDefault: true, NodeCount: 2, MinNodeCount: 1,
				MaxNodeCount: objects.Int(4), Status: objects.CreateComplete}, a.ObjVer)}, nil
		case a.ObjName != objects.NameCluster:
			return nil, exception.Builtin("ValueError", "unexpected call "+a.ObjName+"."+a.ObjMethod)
		case a.ObjMethod == "get_by_name" && arg(0) != "c1":
			return nil, exception.ClusterNotFound(arg(0))
		case a.ObjMethod == "get_by_name", arg(0) == watchedUUID, created != "" && arg(0) == created:
		default:
			return nil, exception.ClusterNotFound(arg(0))
		}
		f.mu.Lock()
		if len(f.calls) > 0 && len(f.lookupErrors) > 0 {
			err := f.lookupErrors[0]
			f.lookupErrors = f.lookupErrors[1:]
			f.mu.Unlock()
			return nil, err
		}
		f.mu.Unlock()
		status := f.next()
		if status == "" {
			return nil, exception.ClusterNotFound(watchedUUID)
		}
		cl := &objects.Cluster{ID: 7, UUID: objects.Str(watchedUUID), Name: objects.Str("c1"), Status: status,
			HealthStatus: "HEALTHY", HealthStatusReason: map[string]string{"api": "ok"}}
		if strings.HasSuffix(status, "_FAILED") {
			cl.StatusReason = objects.Str(f.reason)
		}
		return objects.Encode(cl, a.ObjVer, nil)
	})); err != nil {
		t.Fatal(err)
	}
	change := func(method string, answer func(a map[string]any) (any, error)) {
		if err := d.Handle(method, func(ctx context.Context, call *oslo.Call) (any, error) {
			a := map[string]any{}
			for _, kw := range call.Args {
				var v any
				if err := json.Unmarshal(kw.Value, &v); err != nil {
					return nil, err
				}
				a[kw.Name] = v
			}
			f.mu.Lock()
			f.requests++
			f.calls = append(f.calls, method)
			f.contexts[method] = request.From(ctx)
			f.kwargs[method] = a
			refusal := f.refuse[method]
			f.mu.Unlock()
			if refusal != nil {
				return nil, refusal
			}
			return answer(a)
		}); err != nil {
			t.Fatal(err)
		}
	}
	change("cluster_create", func(a map[string]any) (any, error) {
		cl, err := objects.DecodeCluster(mustJSON(a["cluster"]))
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.created = objects.Deref(cl.UUID)
		f.mu.Unlock()
		cl.Status = objects.CreateInProgress
		return objects.Encode(cl, "", nil)
	})
	clusterAnswer := func(status string) func(a map[string]any) (any, error) {
		return func(a map[string]any) (any, error) {
			f.mu.Lock()
			none := f.updateAnswersNone
			f.mu.Unlock()
			if none && status == objects.UpdateInProgress {
				return nil, nil
			}
			cl, err := objects.DecodeCluster(mustJSON(a["cluster"]))
			if err != nil {
				return nil, err
			}
			cl.Status = status
			return objects.Encode(cl, "", nil)
		}
	}
	change("cluster_update", clusterAnswer(objects.UpdateInProgress))
	change("cluster_resize", clusterAnswer(objects.UpdateInProgress))
	change("cluster_delete", func(map[string]any) (any, error) { return nil, nil })
	change("credential_rotate", func(map[string]any) (any, error) { return nil, nil })
	opts := oslo.DefaultOptions()
	opts.TransportURL = testBroker
	opts.ControlExchange = f.exchange
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{GracePeriod: 5 * time.Second}, oslo.Target{Topic: f.topic}, d, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	t.Cleanup(func() {
		_ = srv.Stop(context.Background())
		if conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/"); err == nil {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(f.topic, false, false, false)
				_, _ = ch.QueueDelete(f.topic+"."+srv.Target().Server, false, false, false)
				_ = ch.ExchangeDelete(f.exchange, false, false)
			}
			_ = conn.Close()
		}
	})
	return f
}

func mustEncode(o objects.Object, version string) map[string]any {
	m, err := objects.Encode(o, version, nil)
	if err != nil {
		panic(err)
	}
	return m
}

func (f *fakeConductor) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.gets, len(f.statuses)-1)
	f.gets++
	return f.statuses[i]
}

func (f *fakeConductor) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return f.runEnv(t, noEnv, args...)
}

func (f *fakeConductor) runEnv(t *testing.T, getenv func(string) string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{"--config-file", conf, "--transport-url", testBroker, "--exchange", f.exchange,
		"--topic", f.topic, "--timeout", "10s"}, args...)
	code = execute(ctx, all, getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func (f *fakeConductor) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// statusLines returns the status word of each line a wait printed
// ("<RFC 3339 time>  +<elapsed>  STATUS[  reason]"), checking the time and
// the elapsed time.
func statusLines(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		parts := strings.SplitN(line, "  ", 4)
		if len(parts) < 3 {
			t.Fatalf("line %q has no time, elapsed time and status", line)
		}
		if _, err := time.Parse(time.RFC3339, parts[0]); err != nil {
			t.Fatalf("line %q does not start with an RFC 3339 time: %v", line, err)
		}
		if _, err := time.ParseDuration(strings.TrimPrefix(parts[1], "+")); err != nil || !strings.HasPrefix(parts[1], "+") {
			t.Fatalf("line %q has no elapsed time (+<duration>) second: %v", line, err)
		}
		got = append(got, parts[2])
	}
	return got
}

// TestDeleteWaitFollowsTheClusterUntilItIsGone: cluster delete --wait calls
// cluster_delete, prints each status change once, waits past
// DELETE_COMPLETE (the row can outlive that status for a moment) and ends
// with exit 0 when the cluster is not found.
func TestDeleteWaitFollowsTheClusterUntilItIsGone(t *testing.T) {
	// The first answer is the lookup of the name before the call.
	f := startFakeConductor(t, "", "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_IN_PROGRESS",
		"DELETE_COMPLETE", "DELETE_COMPLETE", "")
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got := f.changes(); strings.Join(got, " ") != "cluster_delete" {
		t.Fatalf("changes sent: %v, want one cluster_delete", got)
	}
	if got := f.kwargs["cluster_delete"]["uuid"]; got != watchedUUID {
		t.Fatalf("cluster_delete for %v", got)
	}
	got := statusLines(t, out)
	want := []string{"DELETE_IN_PROGRESS", "DELETE_COMPLETE", "DELETED"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("wait printed %q, want statuses %v", out, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets != 6 {
		t.Fatalf("%d lookups, want 6 (one before the call, five while waiting)", f.gets)
	}
}

// TestDeleteWaitFailsOnAFailedStatus: DELETE_FAILED ends the wait with
// exit 1 and the status reason on stderr.
func TestDeleteWaitFailsOnAFailedStatus(t *testing.T) {
	reason := "Stack DELETE failed: resource busy"
	f := startFakeConductor(t, reason, "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_FAILED")
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "DELETE_FAILED") || !strings.Contains(errOut, reason) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr %q should be one line naming DELETE_FAILED and its reason", errOut)
	}
	if got := statusLines(t, out); strings.Join(got, " ") != "DELETE_IN_PROGRESS DELETE_FAILED" {
		t.Fatalf("wait printed %q", out)
	}
	if !strings.Contains(out, "DELETE_FAILED  "+reason) {
		t.Fatalf("the DELETE_FAILED line should carry its reason: %q", out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets != 3 {
		t.Fatalf("%d lookups after DELETE_FAILED, want 3: the wait should stop there", f.gets)
	}
}

// TestDeleteWaitOnAFailedClusterIsNotFooledByItsOldStatus: waiting for a
// delete, a status of another operation (the cluster still
// CREATE_FAILED: the delete is not under way) ends the wait with exit 1
// saying so, not with the old failure as the delete's.
func TestDeleteWaitOnAFailedClusterIsNotFooledByItsOldStatus(t *testing.T) {
	f := startFakeConductor(t, "no quota", "CREATE_FAILED")
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != exitFailed || !strings.Contains(errOut, "CREATE_FAILED") || !strings.Contains(errOut, "not under way") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCreateWaitEndsAtCreateComplete: cluster create --wait calls
// cluster_create with the cluster magnum-api would build, then follows it
// to CREATE_COMPLETE (exit 0).
func TestCreateWaitEndsAtCreateComplete(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_IN_PROGRESS", "CREATE_COMPLETE")
	code, out, errOut := f.run(t, "cluster", "create", "c2", "--cluster-template", "dev", "--node-count", "3",
		"--labels", "a=1,b=2", "--wait")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := statusLines(t, out); strings.Join(got, " ") != "CREATE_IN_PROGRESS CREATE_COMPLETE" {
		t.Fatalf("wait printed %q", out)
	}
	kw := f.kwargs["cluster_create"]
	if kw == nil || kw["node_count"] != float64(3) || kw["master_count"] != float64(1) || kw["create_timeout"] != float64(60) {
		t.Fatalf("cluster_create arguments %v", kw)
	}
	cl, err := objects.DecodeCluster(mustJSON(kw["cluster"]))
	if err != nil {
		t.Fatal(err)
	}
	if objects.Deref(cl.Name) != "c2" || objects.Deref(cl.ClusterTemplateID) != "7c3a3b9e-1d7e-4bd0-9b0a-3f1c2d4e5f60" ||
		!cl.FloatingIPEnabled || cl.Labels["a"] != "1" || cl.Labels["b"] != "2" {
		t.Fatalf("the cluster sent: name %q template %q floating %v labels %v", objects.Deref(cl.Name),
			objects.Deref(cl.ClusterTemplateID), cl.FloatingIPEnabled, cl.Labels)
	}
}

// TestRefusedChangeIsPrintedAndExitsOne: a change the conductor refuses
// (here cluster_update on a cluster being created) prints the conductor's
// exception, class and message, on one line and exits 1.
func TestRefusedChangeIsPrintedAndExitsOne(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_IN_PROGRESS")
	f.refuse["cluster_update"] = exception.NotSupported(`Updating a cluster when status is "CREATE_IN_PROGRESS"`)
	code, out, errOut := f.run(t, "cluster", "update", "c1", "--node-count", "3", "--wait")
	if code != exitFailed || out != "" || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, "magnum.common.exception.NotSupported") || !strings.Contains(errOut, "CREATE_IN_PROGRESS") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := f.changes(); strings.Join(got, " ") != "cluster_update" {
		t.Fatalf("changes sent: %v", got)
	}
}

// TestUpdateToTheSameCountSaysNothingChanged: cluster_update answering
// None (nothing changed) is said, with exit 0 and no wait; the health
// fields go as the cluster has them, as magnum-api sends them.
func TestUpdateToTheSameCountSaysNothingChanged(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_COMPLETE")
	f.updateAnswersNone = true
	code, out, errOut := f.run(t, "cluster", "update", "c1", "--node-count", "2", "--wait")
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	kw := f.kwargs["cluster_update"]
	reason, _ := kw["health_status_reason"].(map[string]any)
	if kw["health_status"] != "HEALTHY" || reason["api"] != "ok" || kw["node_count"] != float64(2) {
		t.Fatalf("cluster_update arguments %v", kw)
	}
}

// TestWaitTimeoutExitsThree: --wait-timeout passing while the operation
// goes on exits 3, saying the operation goes on.
func TestWaitTimeoutExitsThree(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_COMPLETE", "DELETE_IN_PROGRESS")
	start := time.Now()
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", "--wait-timeout", "2s", watchedUUID)
	if code != exitTimeout || !strings.Contains(errOut, "still DELETE_IN_PROGRESS after 2s") || !strings.Contains(errOut, "goes on") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the wait took %s with --wait-timeout 2s", d)
	}
}

// TestBadInputSendsNothing: what magnum-api refuses before it casts is
// refused here before anything is sent: one line, exit 2; an unknown
// template is the conductor's ClusterTemplateNotFound (exit 1), a name
// taken is refused (exit 2), and neither sends a change.
func TestBadInputSendsNothing(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_COMPLETE")
	tests := []struct {
		name   string
		args   []string
		code   int
		want   string
		lookup bool // the refusal needs the conductor's lookups
	}{
		{"negative node count", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--node-count", "-1", "--wait"}, 2, "--node-count must be 0 or more, not -1", false},
		{"no master", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--master-count", "0"}, 2, "--master-count must be 1 or more", false},
		{"bad name", []string{"cluster", "create", "1st", "--cluster-template", "dev"}, 2, "is not valid", false},
		{"no name", []string{"cluster", "create", "--cluster-template", "dev"}, 2, "a cluster name is required", false},
		{"no template", []string{"cluster", "create", "c2"}, 2, "--cluster-template is required", false},
		{"malformed labels", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--labels", "novalue"}, 2, `"novalue" is not key=value`, false},
		{"both floating flags", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--floating-ip-enabled", "--floating-ip-disabled"}, 2, "mutually exclusive", false},
		{"unknown flag", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--nodes", "3"}, 2, "unknown flag: --nodes", false},
		{"negative update", []string{"cluster", "update", "c1", "--node-count", "-1"}, 2, "--node-count must be 0 or more, not -1", false},
		{"negative resize", []string{"cluster", "resize", "c1", "-1"}, 2, "-1 is not a valid count", false},
		{"negative resize after --", []string{"cluster", "resize", "c1", "--", "-1"}, 2, "--node-count must be 0 or more, not -1", false},
		{"resize not a number", []string{"cluster", "resize", "c1", "many"}, 2, `"many" is not a node count`, false},
		{"nodegroup bounds", []string{"nodegroup", "create", "c1", "ng1", "--node-count", "1", "--min-nodes", "3"}, 2, "min_node_count (3) should be less or equal to node_count (1)", false},
		{"too many args", []string{"cluster", "show", "a", "b"}, 2, "takes 1 argument(s), got 2", false},
		{"unknown template", []string{"cluster", "create", "c2", "--cluster-template", "nope"}, 1, "ClusterTemplateNotFound", true},
		{"name taken", []string{"cluster", "create", "c1", "--cluster-template", "dev"}, 2, "a cluster named c1 already exists", true},
		{"master count without a load balancer", []string{"cluster", "create", "c2", "--cluster-template", "dev", "--master-count", "3"}, 2, "master_count must be 1 when master_lb_enabled is False", true},
		{"resize beyond max_node_count", []string{"cluster", "resize", "c1", "5"}, 2, "at most 4, not 5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			before := f.requests
			f.mu.Unlock()
			code, out, errOut := f.run(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want one line with %q)", code, tt.code, out, errOut, tt.want)
			}
			f.mu.Lock()
			sent := f.requests - before
			f.mu.Unlock()
			if (sent > 0) != tt.lookup {
				t.Fatalf("%d requests reached the conductor", sent)
			}
		})
	}
	if got := f.changes(); len(got) != 0 {
		t.Fatalf("changes sent for bad input: %v", got)
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestKeystoneRequestContextIsMagnumAPIs: with Keystone auth, the request
// context on the wire is the one magnum-api's ContextHook builds: the token
// Keystone issued, the auth URL, keystonemiddleware's token info with the
// service catalogue, the user and project ids and names, the user's
// domain, the roles; a member is no admin and sees its own project, and
// the cluster is created for the token's project and user. Neither the
// password nor the token is printed.
func TestKeystoneRequestContextIsMagnumAPIs(t *testing.T) {
	ks := testKeystone(t)
	f := startFakeConductor(t, "", "CREATE_COMPLETE")
	code, out, errOut := f.runEnv(t, envOf(demoEnv(ks)), "cluster", "create", "c2", "--cluster-template", "dev")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	rc := f.contexts["cluster_create"]
	if rc == nil {
		t.Fatal("no cluster_create")
	}
	if who, ok := ks.TokenUser(rc.AuthToken); !ok || who != "u-demo" {
		t.Fatalf("auth_token %q is not a token Keystone issued to the user", rc.AuthToken)
	}
	if rc.AuthURL != ks.AuthURL()+"/v3" || rc.UserID != "u-demo" || rc.UserName != "demo" || rc.ProjectID != "p-demo" ||
		rc.ProjectName != "demo" || rc.DomainID != "default" || rc.DomainName != "Default" ||
		strings.Join(rc.Roles, ",") != "member,reader" || rc.IsAdmin || rc.AllTenants || !strings.HasPrefix(rc.RequestID, "req-") {
		t.Fatalf("request context %+v", rc)
	}
	var info struct {
		Token struct {
			Catalog []struct {
				Type      string `json:"type"`
				Endpoints []struct {
					URL string `json:"url"`
				} `json:"endpoints"`
			} `json:"catalog"`
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		} `json:"token"`
	}
	if err := json.Unmarshal(rc.AuthTokenInfo, &info); err != nil || len(info.Token.Catalog) != 1 ||
		info.Token.Catalog[0].Type != "container-infra" || info.Token.Catalog[0].Endpoints[0].URL != "http://magnum.test:9511/v1" ||
		info.Token.User.ID != "u-demo" {
		t.Fatalf("auth_token_info %s: %v", rc.AuthTokenInfo, err)
	}
	cl, err := objects.DecodeCluster(mustJSON(f.kwargs["cluster_create"]["cluster"]))
	if err != nil || objects.Deref(cl.ProjectID) != "p-demo" || objects.Deref(cl.UserID) != "u-demo" {
		t.Fatalf("cluster project %q user %q: %v", objects.Deref(cl.ProjectID), objects.Deref(cl.UserID), err)
	}
	for _, secret := range []string{"pa55word", rc.AuthToken} {
		if strings.Contains(out+errOut, secret) {
			t.Fatalf("a secret was printed: %q %q", out, errOut)
		}
	}

	// An admin: is_admin, all tenants for what it looks at and changes,
	// not for the create (magnum-api does not set all_tenants there).
	ks.AddUser(keystonetest.User{ID: "u-admin", Name: "admin", DomainID: "default", DomainName: "Default", Password: "adm1n",
		ProjectID: "p-admin", ProjectName: "admin", ProjectDomainID: "default", ProjectDomainName: "Default", Roles: []string{"admin"}})
	admin := with(demoEnv(ks), "OS_USERNAME", "admin", "OS_PASSWORD", "adm1n", "OS_PROJECT_NAME", "admin")
	if code, out, errOut := f.runEnv(t, envOf(admin), "cluster", "create", "c3", "--cluster-template", "dev"); code != 0 {
		t.Fatalf("admin create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if rc := f.contexts["cluster_create"]; !rc.IsAdmin || rc.AllTenants || rc.ProjectID != "p-admin" {
		t.Fatalf("admin's create context %+v", rc)
	}
	if code, out, errOut := f.runEnv(t, envOf(admin), "credential", "rotate", "c1"); code != 0 {
		t.Fatalf("credential rotate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if rc := f.contexts["credential_rotate"]; !rc.IsAdmin || !rc.AllTenants || rc.UserID != "u-admin" {
		t.Fatalf("admin's credential_rotate context %+v", rc)
	}

	// A wrong password: one line, exit 1, nothing sent.
	before := len(f.changes())
	code, out, errOut = f.runEnv(t, envOf(with(demoEnv(ks), "OS_PASSWORD", "wr0ng")), "cluster", "delete", "c1")
	if code != exitFailed || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "Keystone refused") ||
		strings.Contains(errOut, "wr0ng") || len(f.changes()) != before {
		t.Fatalf("wrong password: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestWaitRidesThroughFailedLookups: a lookup that fails while waiting
// (the conductor's database away a moment) is said once on stderr and
// retried; the wait ends as the operation does.
func TestWaitRidesThroughFailedLookups(t *testing.T) {
	f := startFakeConductor(t, "", "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "")
	f.lookupErrors = []error{exception.DBConnectionError("db: connection refused", nil), exception.DBConnectionError("db: connection refused", nil)}
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != 0 || strings.Count(errOut, "retrying") != 1 || !strings.Contains(errOut, "DBConnectionError") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := statusLines(t, out); strings.Join(got, " ") != "DELETE_IN_PROGRESS DELETED" {
		t.Fatalf("wait printed %q", out)
	}
}
