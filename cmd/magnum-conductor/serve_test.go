package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/config"
)

func TestWorkersScaleTheRPCPool(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf",
		Data: []byte("[DEFAULT]\nexecutor_thread_pool_size = 10\n[conductor]\nworkers = 3\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := transportOptions(cfg).ExecutorThreadPoolSize; got != 30 {
		t.Fatalf("RPC pool = %d, want workers x executor_thread_pool_size = 30", got)
	}
}

func TestNotificationRetryReachesTheNotifier(t *testing.T) {
	for ini, want := range map[string]int{"": -1, "retry = 0\n": 0, "retry = 3\n": 3} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf",
			Data: []byte("[oslo_messaging_notifications]\n" + ini)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := transportOptions(cfg).Notifications.Retry; got != want {
			t.Errorf("%q: notifier retry = %d, want %d", ini, got, want)
		}
	}
}

func TestTransientQueueOptionsReachTheTransport(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[oslo_messaging_rabbit]\n" +
		"rabbit_transient_quorum_queue = true\nrabbit_stream_fanout = true\nuse_queue_manager = true\n" +
		"hostname = node1.example.com\nprocessname = magnum-conductor\n")}})
	if err != nil {
		t.Fatal(err)
	}
	r := transportOptions(cfg).Rabbit
	if !r.TransientQuorumQueue || !r.StreamFanout || !r.UseQueueManager || r.QueueManagerHost != "node1.example.com" ||
		r.QueueManagerProcess != "magnum-conductor" {
		t.Fatalf("rabbit options %+v", r)
	}
}

func TestDebugOptionSetsTheLogLevel(t *testing.T) {
	for _, tc := range []struct {
		ini   string
		debug bool
	}{{"[DEFAULT]\n", false}, {"[DEFAULT]\ndebug = true\n", true}} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(tc.ini +
			"transport_url = rabbit://guest:pa55word@127.0.0.1:5672/\n")}})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		logging, err := openLogging(cfg, "text", &out)
		if err != nil {
			t.Fatal(err)
		}
		log := logging.Logger
		log.Debug("configuration", "config", cfg)
		got := strings.Contains(out.String(), "level=DEBUG msg=configuration")
		if got != tc.debug {
			t.Errorf("%q: debug line written = %v, want %v:\n%s", tc.ini, got, tc.debug, out.String())
		}
		if strings.Contains(out.String(), "pa55word") {
			t.Errorf("the transport_url password was logged:\n%s", out.String())
		}
	}
}
