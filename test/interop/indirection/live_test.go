// Package indirection_test drives the Go indirection endpoints through
// RabbitMQ with magnum-api's own Python code (MagnumObjectIndirectionAPI,
// test/interop/python/magnum_api_client.py, scenario "objects") of each
// Python release (pyrelease.Releases: 15.0.1 on the host, 23.0.0 in the sid
// chroot) and checks every step's outcome. It needs RabbitMQ
// (127.0.0.1:5672 guest/guest), MariaDB (127.0.0.1:3306 root) and the
// releases (make services).
package indirection_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/conductor/indirection"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

const brokerURL = "rabbit://guest:guest@127.0.0.1:5672/"

func openStore(t *testing.T) *db.Store {
	t.Helper()
	return dbtest.MySQLStore(t, db.Options{}, nil)
}

type step struct {
	Step  string          `json:"step"`
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Error struct {
		Class   string `json:"class"`
		Message string `json:"message"`
	} `json:"error"`
}

func TestMagnumAPIObjectsScenarioAgainstGoIndirection(t *testing.T) {
	testkit.NeedsService(t, "RabbitMQ and MariaDB")
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) { testObjectsScenario(t, r) })
	}
}

func testObjectsScenario(t *testing.T, r pyrelease.Release) {
	r.Require(t)
	store := openStore(t)
	ctx := context.Background()
	if _, err := store.ReportServiceUp(ctx, "interop-host", "magnum-conductor"); err != nil {
		t.Fatal(err)
	}

	suffix := strings.ToLower(oslo.NewServerID())
	opts := oslo.DefaultOptions()
	opts.TransportURL = brokerURL
	opts.ControlExchange = "test_indir_" + suffix
	topic := "topic_indir_" + suffix

	conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	var serverQueue string
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			for _, q := range []string{topic, serverQueue} {
				if q != "" {
					_, _ = ch.QueueDelete(q, false, false, false)
				}
			}
			_ = ch.ExchangeDelete(opts.ControlExchange, false, false)
			_ = ch.ExchangeDelete(topic+"_fanout", false, false)
			_ = ch.Close()
		}
		_ = conn.Close()
	})

	log := slog.New(slog.DiscardHandler)
	d := oslo.NewDispatcher()
	if err := indirection.New(store, log).Register(d); err != nil {
		t.Fatal(err)
	}
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{GracePeriod: 5 * time.Second}, oslo.Target{Topic: topic}, d, log)
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	serverQueue = topic + "." + srv.Target().Server
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(c)
	})

	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\ntransport_url = "+brokerURL+"\ncontrol_exchange = "+
		opts.ControlExchange+"\nrpc_response_timeout = 20\n[conductor]\ntopic = "+topic+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(r.Scripts(t), "test/interop/python/magnum_api_client.py")
	runCtx, cancelRun := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelRun()
	cmd := r.Python(runCtx, script, "--config-file", conf, "objects", suffix)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("magnum_api_client.py: %v\n%s", err, stderr.String())
	}

	steps := map[string]step{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		steps[s.Step] = s
	}

	t.Logf("%d steps from magnum_api_client.py", len(steps))
	// What magnum-api sees from the Python conductor for each step:
	// success, or the class of the exception it raises.
	want := map[string]string{
		"clustertemplate.create": "", "clustertemplate.get_by_uuid": "", "clustertemplate.get_by_name": "",
		"clustertemplate.list": "", "clustertemplate.save": "",
		"clustertemplate.get_missing": "ClusterTemplateNotFound_Remote",
		"cluster.create":              "", "cluster.get_by_uuid": "", "cluster.get_by_name": "", "cluster.list": "",
		"cluster.get_count_all": "", "cluster.save": "", "cluster.refresh": "",
		"cluster.get_missing": "ClusterNotFound_Remote",
		"nodegroup.create":    "", "nodegroup.get": "", "nodegroup.list": "",
		"nodegroup.duplicate": "NodeGroupAlreadyExists_Remote",
		"nodegroup.save":      "", "nodegroup.save_listed": "", "nodegroup.destroy": "",
		"nodegroup.get_destroyed":            "NodeGroupNotFound_Remote",
		"clustertemplate.destroy_referenced": "ClusterTemplateReferenced_Remote",
		"cluster.destroy":                    "", "clustertemplate.destroy": "", "magnumservice.list": "",
	}
	for name, class := range want {
		s, ok := steps[name]
		switch {
		case !ok:
			t.Errorf("step %s missing from the output", name)
		case class == "" && !s.OK:
			t.Errorf("step %s failed: %s: %s", name, s.Error.Class, s.Error.Message)
		case class != "" && (s.OK || s.Error.Class != class):
			t.Errorf("step %s: got ok=%v %s %q, want %s", name, s.OK, s.Error.Class, s.Error.Message, class)
		}
	}

	// Values the API saw.
	var ct map[string]any
	_ = json.Unmarshal(steps["clustertemplate.save"].Value, &ct)
	if ct["name"] != "ct-renamed-"+suffix {
		t.Errorf("template after save: %v", ct)
	}
	var cl map[string]any
	_ = json.Unmarshal(steps["cluster.refresh"].Value, &cl)
	if cl["status"] != objects.UpdateComplete || cl["health_status"] != objects.Healthy {
		t.Errorf("cluster after save+refresh: %v", cl)
	}
	var listed map[string]any
	_ = json.Unmarshal(steps["nodegroup.save_listed"].Value, &listed)
	if listed["max_node_count"] != 7.0 || listed["node_count"] != 3.0 {
		t.Errorf("nodegroup saved from a list, read back: %v", listed)
	}
	var count int
	_ = json.Unmarshal(steps["cluster.get_count_all"].Value, &count)
	if count != 1 {
		t.Errorf("get_count_all = %s", steps["cluster.get_count_all"].Value)
	}
	var ms bool
	_ = json.Unmarshal(steps["magnumservice.list"].Value, &ms)
	if !ms {
		t.Errorf("magnumservice.list did not see the service row")
	}
}
