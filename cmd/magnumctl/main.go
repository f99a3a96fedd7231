// Command magnumctl is the operator CLI of magnum-conductor. It speaks the
// same RPC as magnum-api (the conductor topic and the object-indirection
// methods), so it works against this conductor and the Python one alike.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/config"
)

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// globals holds the flags every command shares.
type globals struct {
	configFiles  []string
	configDirs   []string
	transportURL string
	topic        string
	exchange     string
	output       string
	timeout      time.Duration
	projectID    string
	userID       string
	out          io.Writer
}

func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := rootCommand(&globals{out: stdout}) //nolint:contextcheck // the commands get ctx through root.ExecuteContext below
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		_, _ = fmt.Fprintln(stderr, "magnumctl: "+explain(err)) // nowhere else to say it
		var ue *usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// rootCommand is magnumctl with its global flags and every command.
func rootCommand(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "magnumctl",
		Short:         "Operate magnum-conductor over its RPC topic",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.output != "table" && g.output != "json" {
				return fmt.Errorf("--output must be table or json, not %q", g.output)
			}
			// oslo.config's search, so that on a conductor host the
			// conductor's own /etc/magnum/magnum.conf is used.
			if !cmd.Flags().Changed("config-file") {
				g.configFiles = config.DefaultFiles("magnum", "magnumctl")
			}
			if !cmd.Flags().Changed("config-dir") {
				g.configDirs = config.DefaultDirs("magnum", "magnumctl")
			}
			return nil
		},
	}
	f := root.PersistentFlags()
	f.StringArrayVar(&g.configFiles, "config-file", nil, "magnum.conf to read transport_url, control_exchange and [conductor]/topic from (repeatable; default: the first magnum.conf in ~/.magnum, ~, /etc/magnum, /etc)")
	f.StringArrayVar(&g.configDirs, "config-dir", nil, "directory of *.conf files read after --config-file (repeatable)")
	f.StringVar(&g.transportURL, "transport-url", "", "oslo.messaging transport URL (overrides the config file)")
	f.StringVar(&g.topic, "topic", "", "conductor topic (overrides [conductor]/topic)")
	f.StringVar(&g.exchange, "exchange", "", "control exchange (overrides [DEFAULT]/control_exchange)")
	f.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	f.DurationVar(&g.timeout, "timeout", 60*time.Second, "how long to wait for the conductor's answer")
	f.StringVar(&g.projectID, "project-id", "", "project the request is made for (default: admin, all tenants)")
	f.StringVar(&g.userID, "user-id", "", "user the request is made for")

	root.AddCommand(serviceCmd(g), conductorCmd(g), templateCmd(g), clusterCmd(g), nodegroupCmd(g), caCmd(g))
	return root
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
