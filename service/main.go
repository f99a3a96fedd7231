// Package service is magnum-conductor as a library: Main runs the whole
// conductor (configuration, logging, database, broker, RPC handlers,
// periodic jobs, metrics) with the cluster drivers its caller registers.
// The magnum-conductor command is Main with the bundled drivers; a binary
// with a driver of its own is a few lines too (see docs/writing-a-driver.md
// and examples/outoftree):
//
//	func main() {
//		os.Exit(service.Main(os.Args[1:], service.Options{}, mydriver.Factory))
//	}
//
// Such a binary is a magnum-conductor: it reads the same magnum.conf,
// serves the same topic with the same wire protocol, registers as the
// magnum-conductor binary in the magnum_service table, and shares its
// database and its clusters with the other conductors.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/internal/oslolog"
)

// binaryName names the process as the Python service's does: in log file
// names (<log_dir>/magnum-conductor.log), syslog and journal entries, and
// oslo.config's search for magnum-conductor.conf.
const binaryName = "magnum-conductor"

// Options configure Main.
type Options struct {
	// Stderr receives start-up errors and, without a log file, the log
	// (default os.Stderr).
	Stderr io.Writer
}

// Main runs the conductor with the drivers the factories build, until
// SIGTERM or SIGINT, and returns the process's exit code: 0 after a clean
// stop, 1 when it could not start (the reason on Stderr and in the log).
// args are the command-line arguments without the program name
// (os.Args[1:]): --config-file, --config-dir, --log-file and the other
// oslo options, --version.
func Main(args []string, opts Options, factories ...DriverFactory) int {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	return execute(args, opts.Stderr, factories)
}

func execute(args []string, stderr io.Writer, factories []DriverFactory) int {
	st := startup{drivers: factories}
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
			return serve(ctx, st, stderr)
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
			_, _ = fmt.Fprintf(stderr, "magnum-conductor: %v\n", se.err) // nowhere else to say it
			return 1
		}
		_, _ = fmt.Fprintf(stderr, "magnum-conductor: %v\n", err) // nowhere else to say it
		return 1
	}
	return 0
}

// startup is what the command line sets, and the drivers' factories.
type startup struct {
	files, dirs []string
	logFormat   string
	logFlags    oslolog.Flags
	drivers     []DriverFactory
}

// linkedVersion is set by the packaging (packaging/gobuild) at link time,
// -ldflags "-X github.com/openstack/magnum-conductor/service.linkedVersion=v1.2.3 (<commit>)",
// for builds in which Go cannot stamp the version from the VCS itself (a
// git worktree, -buildvcs=false). Empty otherwise.
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
