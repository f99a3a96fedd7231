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
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
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

// defaultConfigFiles is oslo.config's search when no --config-file is
// given: the first magnum.conf found in ~/.magnum, ~, /etc/magnum, /etc.
func defaultConfigFiles() (files, dirs []string) {
	home, _ := os.UserHomeDir()
	for _, dir := range []string{filepath.Join(home, ".magnum"), home, "/etc/magnum", "/etc"} {
		p := filepath.Join(dir, "magnum.conf")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			files = append(files, p)
			break
		}
	}
	for _, dir := range []string{filepath.Join(home, ".magnum", "magnum.conf.d"), "/etc/magnum/magnum.conf.d"} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			dirs = append(dirs, dir)
		}
	}
	return files, dirs
}

func run(cmd *cobra.Command, f *flags, do func(context.Context, *migrations.Migrator) error) error {
	ctx := cmd.Context()
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	files, dirs := f.configFiles, f.configDirs
	if len(files) == 0 && len(dirs) == 0 {
		files, dirs = defaultConfigFiles()
	}
	cfg, err := config.Load(files, dirs)
	if err != nil {
		return fail(cmd, "configuration", err)
	}
	dbc := cfg.Database
	store, err := db.Open(ctx, db.Options{
		Connection: dbc.Connection, MaxPoolSize: 1, MaxOverflow: 0, MaxRetries: dbc.MaxRetries,
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
