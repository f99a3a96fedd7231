package osloopts

import (
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/oslo"
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

func TestPoolCompressionAndFailoverOptionsReachTheTransport(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[oslo_messaging_rabbit]\n" +
		"kombu_reconnect_splay = 0.5\nenable_cancel_on_failover = true\nkombu_compression = gzip\n" +
		"rpc_conn_pool_size = 7\nconn_pool_min_size = 3\nconn_pool_ttl = 60\nssl_enforce_fips_mode = true\n")}})
	if err != nil {
		t.Fatal(err)
	}
	r := From(cfg).Rabbit
	if r.KombuReconnectSplay != 500*time.Millisecond || !r.CancelOnFailover || r.Compression != "gzip" ||
		r.PoolSize != 7 || r.PoolMinSize != 3 || r.PoolTTL != time.Minute {
		t.Fatalf("rabbit options %+v", r)
	}
	def, err := config.LoadSources(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := From(def).Rabbit; r.KombuReconnectSplay != 0 || r.CancelOnFailover || r.Compression != "" ||
		r.PoolSize != 30 || r.PoolMinSize != 2 || r.PoolTTL != 1200*time.Second {
		t.Fatalf("defaults %+v", r)
	}
}

func TestLoginMethodAndDirectMandatoryReachTheTransport(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[oslo_messaging_rabbit]\n" +
		"rabbit_login_method = EXTERNAL\ndirect_mandatory_flag = false\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if r := From(cfg).Rabbit; r.LoginMethod != "EXTERNAL" || !r.NoDirectMandatory {
		t.Fatalf("rabbit options %+v", r)
	}
	def, err := config.LoadSources(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := From(def).Rabbit; r.LoginMethod != "AMQPLAIN" || r.NoDirectMandatory {
		t.Fatalf("defaults %+v", r)
	}
}

// TestConductorOnlyRabbitOptionsReachTheTransport: reconnect_interval_max
// and max_message_size (this conductor's own) reach the transport, with
// their defaults when unset.
func TestConductorOnlyRabbitOptionsReachTheTransport(t *testing.T) {
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[oslo_messaging_rabbit]\n" +
		"reconnect_interval_max = 0.25\nmax_message_size = 65536\nrabbit_retry_interval = 3\n")}})
	if err != nil {
		t.Fatal(err)
	}
	r := From(cfg).Rabbit
	if r.ReconnectIntervalMax != 250*time.Millisecond || r.MaxMessageSize != 65536 || r.RetryInterval != 3*time.Second {
		t.Fatalf("rabbit options %+v", r)
	}
	def, err := config.LoadSources(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := From(def).Rabbit; r.ReconnectIntervalMax != time.Second || r.MaxMessageSize != oslo.DefaultMaxMessageSize {
		t.Fatalf("defaults %+v", r)
	}
	if _, err := config.LoadSources([]config.Source{{Name: "t.conf",
		Data: []byte("[oslo_messaging_rabbit]\nmax_message_size = 100\n")}}); err == nil {
		t.Fatal("max_message_size = 100 accepted")
	}
}
