// Command prebuild builds the binaries the capi tests run (the test
// kube-apiserver, the garbage collector, the Cluster API managers, the CAPO
// manager) into apitest's cache, so that `make test` pays for a cold build
// once, before the tests and outside their timeouts. It prints what it built and how
// long each took; with everything up to date it returns at once.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	begin := time.Now()
	dir, err := apitest.Build(ctx, logf)
	if err == nil {
		logf("prebuild: test kube-apiserver and kube-controller-manager in %s", dir)
		dir, err = apitest.BuildManagers(ctx, logf)
	}
	if err == nil {
		logf("prebuild: Cluster API managers in %s", dir)
		dir, err = apitest.BuildCAPO(ctx, logf)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
	logf("prebuild: CAPO manager in %s (all up to date after %s)", dir, time.Since(begin).Round(time.Millisecond))
}
