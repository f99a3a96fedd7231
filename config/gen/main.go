// Command gen writes etc/magnum/magnum.conf.sample to standard output from
// the option definitions in package config: `go run ./config/gen >
// etc/magnum/magnum.conf.sample` (make sample).
package main

import (
	"fmt"
	"os"

	"github.com/openstack/magnum-conductor/config"
)

func main() {
	if err := config.WriteSample(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
