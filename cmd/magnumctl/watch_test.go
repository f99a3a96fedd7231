package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/openstack/magnum-conductor/internal/testkit"
)

const testBroker = "rabbit://guest:guest@127.0.0.1:5672/"

// fakeConductor answers Cluster.get/get_by_uuid with a scripted sequence
// of statuses (the last one repeats; "" means the row is gone) and
// records the cluster_delete casts, on the real broker.
type fakeConductor struct {
	exchange, topic string

	mu       sync.Mutex
	statuses []string
	reason   string
	gets     int
	deleted  chan string
	created  string // the uuid of the cluster a cluster_create cast named
}

const watchedUUID = "5d12f6fd-a196-4bf8-ae4b-8f72ec2f2aa9"

func startFakeConductor(t *testing.T, reason string, statuses ...string) *fakeConductor {
	t.Helper()
	testkit.NeedsService(t, "RabbitMQ")
	var b [6]byte
	_, _ = rand.Read(b[:])
	f := &fakeConductor{exchange: "ctl_" + hex.EncodeToString(b[:]), topic: "ctl_" + hex.EncodeToString(b[:]),
		statuses: statuses, reason: reason, deleted: make(chan string, 1)}
	d := oslo.NewDispatcher()
	if err := d.Handle("object_class_action", oslo.Method(func(ctx context.Context, a struct {
		ObjName   string         `json:"objname"`
		ObjMethod string         `json:"objmethod"`
		ObjVer    string         `json:"objver"`
		Args      []any          `json:"args"`
		Kwargs    map[string]any `json:"kwargs"`
	}) (any, error) {
		if a.ObjName == objects.NameClusterTemplate && a.ObjMethod == "get" {
			return objects.Encode(&objects.ClusterTemplate{ID: 3, UUID: objects.Str("tmpl-uuid"), Name: objects.Str("dev")}, a.ObjVer, nil)
		}
		f.mu.Lock()
		created := f.created
		f.mu.Unlock()
		if a.ObjName != objects.NameCluster || (a.ObjMethod != "get" && a.ObjMethod != "get_by_uuid") || len(a.Args) != 1 {
			return nil, exception.Builtin("ValueError", "unexpected call "+a.ObjMethod)
		}
		if a.Args[0] != watchedUUID && (created == "" || a.Args[0] != created) {
			// As the conductor before the cast's handler wrote the row.
			return nil, exception.ClusterNotFound(a.Args[0])
		}
		status := f.next()
		if status == "" {
			return nil, exception.ClusterNotFound(watchedUUID)
		}
		cl := &objects.Cluster{ID: 7, UUID: objects.Str(watchedUUID), Name: objects.Str("c1"), Status: status}
		if strings.HasSuffix(status, "_FAILED") {
			cl.StatusReason = objects.Str(f.reason)
		}
		return objects.Encode(cl, a.ObjVer, nil)
	})); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("cluster_create", oslo.Method(func(ctx context.Context, a struct {
		Cluster       map[string]any `json:"cluster"`
		MasterCount   int            `json:"master_count"`
		NodeCount     int            `json:"node_count"`
		CreateTimeout *int           `json:"create_timeout"`
	}) (any, error) {
		data, _ := a.Cluster["magnum_object.data"].(map[string]any)
		uuid, _ := data["uuid"].(string)
		f.mu.Lock()
		f.created = uuid
		f.mu.Unlock()
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("cluster_delete", oslo.Method(func(ctx context.Context, a struct {
		UUID string `json:"uuid"`
	}) (any, error) {
		f.deleted <- a.UUID
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
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

func (f *fakeConductor) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.gets, len(f.statuses)-1)
	f.gets++
	return f.statuses[i]
}

func (f *fakeConductor) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
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
	code = execute(ctx, all, &out, &errOut)
	return code, out.String(), errOut.String()
}

// statusLines returns the status word of each line watch printed
// ("<RFC 3339 time>  STATUS[  reason]").
func statusLines(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ts, rest, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("line %q has no time and status", line)
		}
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Fatalf("line %q does not start with an RFC 3339 time: %v", line, err)
		}
		word, _, _ := strings.Cut(rest, "  ")
		got = append(got, word)
	}
	return got
}

// TestDeleteWaitFollowsTheClusterUntilItIsGone: cluster delete --wait casts
// cluster_delete, prints each status change once, waits past
// DELETE_COMPLETE (the row can outlive that status for a moment) and ends
// when the cluster is not found.
func TestDeleteWaitFollowsTheClusterUntilItIsGone(t *testing.T) {
	// The first answer is the lookup of the name before the cast.
	f := startFakeConductor(t, "", "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_IN_PROGRESS",
		"DELETE_COMPLETE", "DELETE_COMPLETE", "")
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	select {
	case got := <-f.deleted:
		if got != watchedUUID {
			t.Fatalf("cluster_delete for %q", got)
		}
	default:
		t.Fatal("cluster_delete was never cast")
	}
	got := statusLines(t, out)
	want := []string{"DELETE_IN_PROGRESS", "DELETE_COMPLETE", "DELETED"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("watch printed %q, want statuses %v", out, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets != 6 {
		t.Fatalf("%d lookups, want 6 (one before the cast, five while watching)", f.gets)
	}
}

// TestDeleteWaitFailsOnAFailedStatus: a *_FAILED status ends the watch
// with exit 1 and the status reason on stderr.
func TestDeleteWaitFailsOnAFailedStatus(t *testing.T) {
	reason := "Stack DELETE failed: resource busy"
	f := startFakeConductor(t, reason, "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_FAILED")
	code, out, errOut := f.run(t, "cluster", "delete", "--wait", watchedUUID)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "DELETE_FAILED") || !strings.Contains(errOut, reason) {
		t.Fatalf("stderr %q should name DELETE_FAILED and its reason", errOut)
	}
	if got := statusLines(t, out); strings.Join(got, " ") != "DELETE_IN_PROGRESS DELETE_FAILED" {
		t.Fatalf("watch printed %q", out)
	}
	if !strings.Contains(out, "DELETE_FAILED  "+reason) {
		t.Fatalf("the DELETE_FAILED line should carry its reason: %q", out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets != 3 {
		t.Fatalf("%d lookups after DELETE_FAILED, want 3: the watch should stop there", f.gets)
	}
}

// TestCreateWaitIsNotFooledByTheRowNotYetWritten: cluster create --wait
// casts cluster_create, whose handler writes the row; a lookup that reaches
// the conductor first finds nothing. That is "not yet", not "deleted": the
// watch goes on to CREATE_COMPLETE (TestQuickStart once printed DELETED
// 3 s after the create, this race).
func TestCreateWaitIsNotFooledByTheRowNotYetWritten(t *testing.T) {
	f := startFakeConductor(t, "", "", "", "CREATE_IN_PROGRESS", "CREATE_COMPLETE")
	code, out, errOut := f.run(t, "cluster", "create", "--name", "c1", "--template", "dev", "--wait")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	got := statusLines(t, out)
	want := []string{"CREATE_IN_PROGRESS", "CREATE_COMPLETE"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("watch printed %q, want statuses %v", out, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == "" {
		t.Fatal("cluster_create was never cast")
	}
}
