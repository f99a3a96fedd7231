// Command magnum-conductor serves Magnum's conductor RPC topic, runs the
// periodic cluster jobs and the service heartbeat. It is a drop-in
// replacement for the Python magnum-conductor: same magnum.conf, same
// RabbitMQ topic and wire protocol, same database.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/oslolog"
)

// binaryName names the process as the Python service's does: in log file
// names (<log_dir>/magnum-conductor.log), syslog and journal entries, and
// oslo.config's search for magnum-conductor.conf.
const binaryName = "magnum-conductor"

func main() {
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	var st startup
	cmd := &cobra.Command{
		Use:   "magnum-conductor",
		Short: "Magnum's conductor: cluster lifecycle over oslo.messaging RPC",
		Long: "magnum-conductor consumes the [conductor]/topic RPC topic on the transport_url of magnum.conf,\n" +
			"runs sync_cluster_status, the health polling and the magnum_service heartbeat, and shares its\n" +
			"database with the Python magnum-api.",
		Version:       version(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("config-file") {
				st.files = config.DefaultFiles("magnum", binaryName)
			}
			if !cmd.Flags().Changed("config-dir") {
				st.dirs = config.DefaultDirs("magnum", binaryName)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, st, os.Stderr)
		},
	}
	cmd.Flags().StringArrayVar(&st.files, "config-file", nil,
		"path to a configuration file; repeatable, later files win (oslo.config's --config-file; "+
			"without it, the first magnum.conf and magnum-conductor.conf in ~/.magnum, ~, /etc/magnum, /etc)")
	cmd.Flags().StringArrayVar(&st.dirs, "config-dir", nil,
		"directory whose *.conf files are read in lexical order after the files (oslo.config's --config-dir; "+
			"without it, magnum.conf.d and magnum-conductor.conf.d searched likewise)")
	cmd.Flags().StringVar(&st.logFormat, "log-format", "",
		"log line layout: oslo (the default: oslo.log's, as the Python service writes), text (slog key=value) or json")
	st.logFlags.Register(cmd.Flags())
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		var se *startError
		if errors.As(err, &se) {
			fmt.Fprintf(os.Stderr, "magnum-conductor: %v\n", se.err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "magnum-conductor: %v\n", err)
		return 1
	}
	return 0
}

// startup is what the command line sets.
type startup struct {
	files, dirs []string
	logFormat   string
	logFlags    oslolog.Flags
}

// linkedVersion is set by the packaging (packaging/gobuild) at link time,
// -ldflags "-X main.linkedVersion=v1.2.3 (<commit>)", for builds in which Go
// cannot stamp the version from the VCS itself (a git worktree,
// -buildvcs=false). Empty otherwise.
var linkedVersion string

// version is the module version and VCS revision the binary was built
// from (--version).
func version() string {
	if linkedVersion != "" {
		return linkedVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " (" + s.Value + ")"
		}
	}
	return v
}

// startError is an error before the conductor started serving.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }
