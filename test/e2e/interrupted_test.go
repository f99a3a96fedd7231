package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/test/harness"
)

// TestKilledDuringCreates (#28): the conductor is killed with SIGKILL while
// 20 creates run at once, and started again. Every cluster that reached
// the database ends CREATE_COMPLETE with its stack_id and certificates,
// or CREATE_FAILED with a reason; none stays CREATE_IN_PROGRESS and none
// is complete without its driver. The creates interrupted before their
// driver call are resumed by the restarted conductor once
// [conductor]/interrupted_operation_timeout has passed.
func TestKilledDuringCreates(t *testing.T) {
	const creates = 20
	_, url := dbtest.MySQL(t)
	dir := t.TempDir()
	cfg := &harness.Config{Database: url, SimDelay: 1,
		Extra: "[conductor]\ndriver_call_timeout = 2\ninterrupted_operation_timeout = 5\n"}
	conf := cfg.Write(t, dir)
	if out, err := exec.Command(bins.DBManage, "--config-file", conf, "upgrade").CombinedOutput(); err != nil {
		t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
	}
	proc := harness.Start(t, bins, conf)
	out, err := harness.CTL(bins, conf, "--output", "json", "template", "create", "--name", "sim", "--os", "simulated",
		"--image", "img", "--flavor", "m1.small", "--master-flavor", "m1.medium", "--driver", "simulated")
	if err != nil {
		t.Fatal(err)
	}
	templateID := jsonField(t, out, "uuid")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, err := db.Open(ctx, db.Options{Connection: url, MaxRetries: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	api := castClient(t, cfg)

	// 20 casts at once, as magnum-api sends them for POST /v1/clusters.
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() {
			c := &objects.Cluster{UUID: objects.Str(newUUID(t)), Name: objects.Str(fmt.Sprintf("killed-%02d", i)),
				ClusterTemplateID: objects.Str(templateID), ProjectID: objects.Str("p-e2e"), UserID: objects.Str("u-e2e"),
				Keypair: objects.Str("kp"), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
				CreateTimeout: objects.Int(60)}
			prim, err := objects.EncodeJSON(c, objects.NewestVersion(c.ObjName()), objects.Manifest(c))
			if err != nil {
				t.Error(err)
				return
			}
			timeout := 60
			if err := api.ClusterCreateAsync(ctx, prim, 1, 2, &timeout); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Killed once half the creates are in the database: they and the
	// others are being inserted, generating their certificates, or calling
	// the driver.
	for len(clusters(t, store)) < creates/2 {
		select {
		case <-ctx.Done():
			t.Fatal("no create reached the database")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Stop(10 * time.Second) // reaps it
	before := clusters(t, store)
	interrupted := 0
	for _, c := range before {
		if c.Status == objects.CreateInProgress && objects.Deref(c.StackID) == "" {
			interrupted++
		}
	}
	t.Logf("killed with %d of %d creates in the database, %d of them not handed to the driver", len(before), creates, interrupted)
	if interrupted == 0 {
		t.Fatal("the kill interrupted no create before its driver call: the test proves nothing")
	}

	restarted := harness.Start(t, bins, conf)
	var rows []*objects.Cluster
	for {
		rows = clusters(t, store)
		settled := 0
		for _, c := range rows {
			if c.Status != objects.CreateInProgress {
				settled++
			}
		}
		if settled == len(rows) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d clusters still CREATE_IN_PROGRESS after the restart:\n%s", len(rows)-settled, len(rows),
				describe(rows))
		case <-time.After(500 * time.Millisecond):
		}
	}
	complete, failed := 0, 0
	for _, c := range rows {
		switch {
		case c.Status == objects.CreateComplete && objects.Deref(c.StackID) != "" && objects.Deref(c.CACertRef) != "" &&
			objects.Deref(c.MagnumCertRef) != "":
			complete++
		case c.Status == objects.CreateFailed && objects.Deref(c.StatusReason) != "":
			failed++
		default:
			t.Errorf("cluster %s: %s stack_id %v ca_cert_ref %v reason %q", objects.Deref(c.Name), c.Status, c.StackID,
				c.CACertRef, objects.Deref(c.StatusReason))
		}
	}
	t.Logf("after the restart: %d complete, %d failed, of %d clusters in the database (%d casts sent)", complete, failed,
		len(rows), creates)
	if n := strings.Count(restarted.Log(), "resuming an operation interrupted before its driver call"); n < interrupted {
		t.Errorf("%d resumptions logged for %d interrupted creates", n, interrupted)
	}
}

func newUUID(*testing.T) string { return uuid.NewString() }

// jsonField is a string field of magnumctl's JSON output.
func jsonField(t *testing.T, out, field string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	s, _ := v[field].(string)
	if s == "" {
		t.Fatalf("no %s in:\n%s", field, out)
	}
	return s
}

// clusters lists every cluster row.
func clusters(t *testing.T, store *db.Store) []*objects.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := store.ListClusters(ctx, db.ListOpts{}, db.ClusterFilters{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func describe(cs []*objects.Cluster) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s %s stack_id=%v reason=%q\n", objects.Deref(c.Name), c.Status, objects.Deref(c.StackID),
			objects.Deref(c.StatusReason))
	}
	return b.String()
}

// castClient is an RPC client on the conductor's exchange and topic.
func castClient(t *testing.T, cfg *harness.Config) *conductorapi.API {
	t.Helper()
	opts := oslo.DefaultOptions()
	opts.TransportURL = harness.Broker
	opts.ControlExchange = cfg.Exchange
	opts.Host = "e2e-caster"
	c, err := oslo.NewClient(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return conductorapi.New(c, cfg.Topic)
}
