package main

import (
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
