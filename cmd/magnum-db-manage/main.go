// Command magnum-db-manage upgrades Magnum's database schema and reports its
// revision, as Magnum's own magnum-db-manage does, with the same revision
// ids in alembic_version so that the Python and Go tools can take turns.
//
//	magnum-db-manage --config-file /etc/magnum/magnum.conf upgrade [REVISION]
//	magnum-db-manage --config-file /etc/magnum/magnum.conf version
//	magnum-db-manage --config-file /etc/magnum/magnum.conf stamp REVISION
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/internal/oslolog"
	"github.com/openstack/magnum-conductor/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}

type flags struct {
	configFiles []string
	configDirs  []string
	log         oslolog.Flags
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	f := &flags{}
	root := &cobra.Command{
		Use:           "magnum-db-manage",
		Short:         "Manage Magnum's database schema",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringArrayVar(&f.configFiles, "config-file", nil,
		"Path to a config file to use. Multiple config files can be specified, with values in later files taking precedence.")
	root.PersistentFlags().StringArrayVar(&f.configDirs, "config-dir", nil,
		"Path to a config directory to pull *.conf files from, in alphabetical order, after the config files.")
	f.log.Register(root.PersistentFlags())

	upgrade := &cobra.Command{
		Use:   "upgrade [REVISION]",
		Short: "Upgrade the database to REVISION (default: head)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			return run(cmd, f, func(ctx context.Context, m *migrations.Migrator) error {
				return m.Upgrade(ctx, target)
			})
		},
	}
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the current database revision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, f, func(ctx context.Context, m *migrations.Migrator) error {
				rev, err := m.Current(ctx)
				if err != nil {
					return err
				}
				if rev == "" {
					rev = "None"
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "Current DB revision is %s\n", rev)
				return err
			})
		},
	}
	stamp := &cobra.Command{
		Use:   "stamp REVISION",
		Short: "Record REVISION as the database's revision without running migrations",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, f, func(ctx context.Context, m *migrations.Migrator) error {
				return m.Stamp(ctx, args[0])
			})
		},
	}
	root.AddCommand(upgrade, version, stamp)
	return root
}

func run(cmd *cobra.Command, f *flags, do func(context.Context, *migrations.Migrator) error) error {
	ctx := cmd.Context()
	// oslo.config's defaults: each of --config-file and --config-dir
	// falls back to its own search when not given.
	files, dirs := f.configFiles, f.configDirs
	if !cmd.Flags().Changed("config-file") {
		files = config.DefaultFiles("magnum", "magnum-db-manage")
	}
	if !cmd.Flags().Changed("config-dir") {
		dirs = config.DefaultDirs("magnum", "magnum-db-manage")
	}
	cfg, err := config.Load(files, dirs)
	if err != nil {
		return fail(cmd, "configuration", err)
	}
	f.log.Apply(&cfg.Default)
	lo := oslolog.FromConfig(cfg.Default, "magnum-db-manage")
	lo.Stderr = cmd.ErrOrStderr()
	logging, err := oslolog.Open(lo)
	if err != nil {
		return fail(cmd, "logging", err)
	}
	defer func() { _ = logging.Close() }()
	log := logging.Logger
	for _, w := range logging.Warnings {
		log.Warn(w)
	}
	dbc := cfg.Database
	store, err := db.Open(ctx, db.Options{
		Connection: dbc.Connection, ConnectionParameters: dbc.ConnectionParameters, MaxPoolSize: 1, MaxOverflow: 0, MaxRetries: dbc.MaxRetries,
		ConnectionRecycleTime: dbc.ConnectionRecycleTime, RetryInterval: dbc.RetryInterval,
		MySQLEngine: dbc.MySQLEngine, MySQLSQLMode: &dbc.MySQLSQLMode, SkipSchemaCheck: true,
	}, log)
	if err != nil {
		return fail(cmd, "database", err)
	}
	defer func() { _ = store.Close() }()
	m, err := migrations.New(store.SQLDB(), store.Dialect(), dbc.MySQLEngine, log)
	if err != nil {
		return fail(cmd, "migrations", err)
	}
	if err := do(ctx, m); err != nil {
		return fail(cmd, "migrations", err)
	}
	return nil
}

func fail(cmd *cobra.Command, what string, err error) error {
	_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "magnum-db-manage: %s: %v\n", what, err)
	return err
}
