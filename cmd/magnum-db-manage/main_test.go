package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/migrations"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func writeConf(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUpgradeAndVersion(t *testing.T) {
	_, mysqlURL := dbtest.MySQL(t)
	for name, url := range map[string]string{"mysql": mysqlURL, "sqlite": dbtest.SQLite(t)} {
		t.Run(name, func(t *testing.T) {
			conf := writeConf(t, t.TempDir(), "magnum.conf", "[database]\nconnection = "+url+"\n")
			out, _, err := runCLI(t, "--config-file", conf, "version")
			if err != nil || out != "Current DB revision is None\n" {
				t.Fatalf("version on empty DB: %q, %v", out, err)
			}
			if _, stderr, err := runCLI(t, "--config-file", conf, "upgrade", migrations.Base); err != nil {
				t.Fatalf("upgrade %s: %v\n%s", migrations.Base, err, stderr)
			}
			out, _, _ = runCLI(t, "--config-file", conf, "version")
			if out != "Current DB revision is "+migrations.Base+"\n" {
				t.Fatalf("version = %q", out)
			}
			if _, stderr, err := runCLI(t, "--config-file", conf, "upgrade"); err != nil {
				t.Fatalf("upgrade: %v\n%s", err, stderr)
			}
			out, _, _ = runCLI(t, "--config-file", conf, "version")
			if out != "Current DB revision is "+migrations.Head+"\n" {
				t.Fatalf("version = %q", out)
			}
			// A second upgrade is a no-op.
			if _, stderr, err := runCLI(t, "--config-file", conf, "upgrade", "head"); err != nil {
				t.Fatalf("second upgrade: %v\n%s", err, stderr)
			}
			// stamp rewrites the revision only.
			if _, stderr, err := runCLI(t, "--config-file", conf, "stamp", migrations.RevDropTrust); err != nil {
				t.Fatalf("stamp: %v\n%s", err, stderr)
			}
			out, _, _ = runCLI(t, "--config-file", conf, "version")
			if out != "Current DB revision is "+migrations.RevDropTrust+"\n" {
				t.Fatalf("version after stamp = %q", out)
			}
			if _, _, err := runCLI(t, "--config-file", conf, "stamp", "nope"); !errors.Is(err, migrations.ErrUnknownRevision) {
				t.Fatalf("stamp unknown: %v", err)
			}
			if _, stderr, err := runCLI(t, "--config-file", conf, "stamp", "head"); err != nil {
				t.Fatalf("stamp head: %v\n%s", err, stderr)
			}
			// An unknown target is refused.
			_, stderr, err := runCLI(t, "--config-file", conf, "upgrade", "deadbeef0000")
			if !errors.Is(err, migrations.ErrUnknownRevision) || !strings.Contains(stderr, "deadbeef0000") {
				t.Fatalf("unknown target: %v\n%s", err, stderr)
			}
		})
	}
}

func TestLaterConfigFilesAndDirsWin(t *testing.T) {
	dir := t.TempDir()
	good := dbtest.SQLite(t)
	first := writeConf(t, dir, "a.conf", "[database]\nconnection = sqlite:////nonexistent/dir/x.db\n")
	second := writeConf(t, dir, "b.conf", "[database]\nconnection = "+good+"\n")
	if _, stderr, err := runCLI(t, "--config-file", first, "--config-file", second, "upgrade"); err != nil {
		t.Fatalf("later --config-file should win: %v\n%s", err, stderr)
	}
	confDir := filepath.Join(dir, "magnum.conf.d")
	if err := os.Mkdir(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeConf(t, confDir, "10-db.conf", "[database]\nconnection = "+good+"\n")
	out, stderr, err := runCLI(t, "--config-file", first, "--config-dir", confDir, "version")
	if err != nil || out != "Current DB revision is "+migrations.Head+"\n" {
		t.Fatalf("--config-dir should override --config-file: %q %v\n%s", out, err, stderr)
	}
}

func TestBadConfigurationIsReported(t *testing.T) {
	_, stderr, err := runCLI(t, "--config-file", filepath.Join(t.TempDir(), "missing.conf"), "version")
	if err == nil || !strings.Contains(stderr, "configuration") {
		t.Fatalf("missing config file: %v\n%s", err, stderr)
	}
	conf := writeConf(t, t.TempDir(), "magnum.conf", "[database]\nconnection = postgresql://u:secret@h/db\n")
	_, stderr, err = runCLI(t, "--config-file", conf, "version")
	if err == nil || strings.Contains(stderr, "secret") {
		t.Fatalf("unsupported backend: %v\n%s", err, stderr)
	}
}
