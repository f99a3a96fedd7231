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
	"regexp"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/config"
)

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Exit codes (docs/magnumctl.md).
const (
	exitOK      = 0
	exitFailed  = 1 // refused by the conductor, or the operation ended *_FAILED
	exitUsage   = 2 // bad command line or input: nothing was sent
	exitTimeout = 3 // no answer in time, or --wait ended before the operation did
)

// globals holds the flags every command shares, and what they resolve to.
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
	auth         authFlags

	out, errOut io.Writer
	getenv      func(string) string
	// creds are the Keystone credentials (nil: no Keystone auth), ident
	// the token obtained with them (once per run).
	creds *credentials
	ident *identity
}

func execute(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	g := &globals{out: stdout, errOut: stderr, getenv: getenv}
	root := rootCommand(g) //nolint:contextcheck // the commands get ctx through root.ExecuteContext below
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	_, _ = fmt.Fprintln(stderr, "magnumctl: "+explain(err)) // nowhere else to say it
	return exitCode(err)
}

// exitCode is the exit status err means.
func exitCode(err error) int {
	var ue *usageError
	var te *oslo.TimeoutError
	var we *waitTimeout
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &te), errors.As(err, &we):
		return exitTimeout
	}
	return exitFailed
}

const rootLong = `magnumctl operates magnum-conductor over its RPC topic, as magnum-api does.

Keystone authentication is configured as for the openstack client: --os-cloud
(OS_CLOUD) names a cloud of clouds.yaml (./clouds.yaml,
~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml), or the OS_*
variables of an openrc file (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD,
OS_PROJECT_NAME, ...) or the equivalent --os-* flags; OS_AUTH_TYPE=token with
OS_TOKEN, and application credentials, work too. The token, the user, the
project, the roles and the service catalogue then travel in the request context
exactly as magnum-api sends them.

Without any Keystone settings, requests are made as the admin context with no
token (--project-id makes them a project member's): enough for the simulated
driver, but a Cluster API cluster needs Keystone auth, since its driver creates
the cluster's application credential with the user's token.

Exit codes: 0 done; 1 refused by the conductor, or the operation ended
*_FAILED; 2 bad command line or input (nothing sent); 3 no answer in time, or
--wait-timeout passed while the operation goes on. See docs/magnumctl.md.`

// rootCommand is magnumctl with its global flags and every command.
func rootCommand(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "magnumctl",
		Short:         "Operate magnum-conductor over its RPC topic",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.output != "table" && g.output != "json" {
				return &usageError{fmt.Sprintf("--output must be table or json, not %q", g.output)}
			}
			if g.timeout <= 0 {
				return &usageError{fmt.Sprintf("--timeout must be positive, not %s", g.timeout)}
			}
			// oslo.config's search, so that on a conductor host the
			// conductor's own /etc/magnum/magnum.conf is used.
			if !cmd.Flags().Changed("config-file") {
				g.configFiles = config.DefaultFiles("magnum", "magnumctl")
			}
			if !cmd.Flags().Changed("config-dir") {
				g.configDirs = config.DefaultDirs("magnum", "magnumctl")
			}
			g.auth.resolve(cmd.Flags(), g.getenv)
			creds, err := g.auth.plan(g.getenv)
			if err != nil {
				return err
			}
			if creds != nil && (g.projectID != "" || g.userID != "") {
				return &usageError{"--project-id and --user-id make requests without Keystone; with Keystone auth the " +
					"token's project and user are used (--os-project-name, --os-project-id)"}
			}
			g.creds = creds
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		// "resize c1 -1": a negative number reads as a flag to pflag.
		if m := negativeNumber.FindStringSubmatch(err.Error()); m != nil {
			return usagef("%s is not a valid count: counts are 0 or more", m[1])
		}
		return &usageError{err.Error()}
	})
	f := root.PersistentFlags()
	f.StringArrayVar(&g.configFiles, "config-file", nil, "magnum.conf to read transport_url, control_exchange and [conductor]/topic from (repeatable; default: the first magnum.conf in ~/.magnum, ~, /etc/magnum, /etc)")
	f.StringArrayVar(&g.configDirs, "config-dir", nil, "directory of *.conf files read after --config-file (repeatable)")
	f.StringVar(&g.transportURL, "transport-url", "", "oslo.messaging transport URL (overrides the config file)")
	f.StringVar(&g.topic, "topic", "", "conductor topic (overrides [conductor]/topic)")
	f.StringVar(&g.exchange, "exchange", "", "control exchange (overrides [DEFAULT]/control_exchange)")
	f.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	f.DurationVar(&g.timeout, "timeout", 60*time.Second, "how long the conductor may stay silent: the time to answer a lookup, and to take up a change (it then reports progress every half of it until it answers)")
	f.StringVar(&g.projectID, "project-id", "", "without Keystone auth: the project the request is made for (default: admin, all tenants)")
	f.StringVar(&g.userID, "user-id", "", "without Keystone auth: the user the request is made for")
	g.auth.register(f)

	root.AddCommand(serviceCmd(g), conductorCmd(g), templateCmd(g), clusterCmd(g), nodegroupCmd(g), caCmd(g), credentialCmd(g))
	return root
}

// negativeNumber is pflag's error for a negative number argument.
var negativeNumber = regexp.MustCompile(`unknown shorthand flag: '[0-9]' in (-[0-9]+)$`)

// usageError is a mistake in the command line or its input, found before
// anything was sent.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef is a usageError with a formatted message.
func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// args checks the number of positional arguments, as a usage error.
func args(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		switch {
		case len(a) < min || (max >= 0 && len(a) > max):
			want := fmt.Sprint(min)
			switch {
			case max < 0:
				want = fmt.Sprintf("at least %d", min)
			case max != min:
				want = fmt.Sprintf("%d to %d", min, max)
			}
			return usagef("%s takes %s argument(s), got %d (see %s --help)", cmd.CommandPath(), want, len(a), cmd.CommandPath())
		}
		return nil
	}
}

// exclusive refuses two flags given together.
func exclusive(fs *pflag.FlagSet, a, b string) error {
	if fs.Changed(a) && fs.Changed(b) {
		return usagef("--%s and --%s are mutually exclusive", a, b)
	}
	return nil
}
