package osloopts

import (
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/config"
)

func TestWorkersScaleTheRPCPool(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf",
		Data: []byte("[DEFAULT]\nexecutor_thread_pool_size = 10\n[conductor]\nworkers = 3\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := From(cfg).ExecutorThreadPoolSize; got != 30 {
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
		if got := From(cfg).Notifications.Retry; got != want {
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
	r := From(cfg).Rabbit
	if !r.TransientQuorumQueue || !r.StreamFanout || !r.UseQueueManager || r.QueueManagerHost != "node1.example.com" ||
		r.QueueManagerProcess != "magnum-conductor" {
		t.Fatalf("rabbit options %+v", r)
	}
}

func TestKombuOptionsReachTheTransport(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[oslo_messaging_rabbit]\n" +
		"kombu_reconnect_delay = 2.5\nkombu_failover_strategy = shuffle\n")}})
	if err != nil {
		t.Fatal(err)
	}
	r := From(cfg).Rabbit
	if r.KombuReconnectDelay != 2500*time.Millisecond || !r.FailoverShuffle {
		t.Fatalf("rabbit options %+v", r)
	}
	def, err := config.LoadSources(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := From(def).Rabbit; r.KombuReconnectDelay != time.Second || r.FailoverShuffle {
		t.Fatalf("defaults %+v", r)
	}
	if _, err := config.LoadSources([]config.Source{{Name: "t.conf",
		Data: []byte("[oslo_messaging_rabbit]\nkombu_failover_strategy = random\n")}}); err == nil {
		t.Fatal("kombu_failover_strategy = random accepted")
	}
}
