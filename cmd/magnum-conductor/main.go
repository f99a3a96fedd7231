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
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	var files, dirs []string
	var logFormat string
	cmd := &cobra.Command{
		Use:   "magnum-conductor",
		Short: "Magnum's conductor: cluster lifecycle over oslo.messaging RPC",
		Long: "magnum-conductor consumes the [conductor]/topic RPC topic on the transport_url of magnum.conf,\n" +
			"runs sync_cluster_status, the health polling and the magnum_service heartbeat, and shares its\n" +
			"database with the Python magnum-api.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, files, dirs, logFormat, os.Stderr)
		},
	}
	cmd.Flags().StringArrayVar(&files, "config-file", nil,
		"path to a configuration file; repeatable, later files win (oslo.config's --config-file)")
	cmd.Flags().StringArrayVar(&dirs, "config-dir", nil,
		"directory whose *.conf files are read in lexical order after the files (oslo.config's --config-dir)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log line format: text or json")
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

// startError is an error before the conductor started serving.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }
