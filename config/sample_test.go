package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSampleIsCurrent fails when etc/magnum/magnum.conf.sample no longer
// matches the option definitions: run `make sample`.
func TestSampleIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSample(&buf); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("..", "etc", "magnum", "magnum.conf.sample"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("etc/magnum/magnum.conf.sample is stale: run `make sample` (go run ./config/gen > etc/magnum/magnum.conf.sample)")
	}
}

func TestSampleFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSample(&buf); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"[DEFAULT]\n",
		"#transport_url = rabbit://\n",
		"\n[database]\n",
		"# Deprecated group/name - [DEFAULT]/sql_connection\n",
		"#connection = sqlite:///$state_path/magnum.sqlite\n",
		"# Minimum value: 1\n#rabbit_transient_queues_ttl = 1800\n",
		"# Possible values:\n# hash - <No description provided>\n# none - <No description provided>\n#coordination = hash\n",
		"(multi valued)\n# Deprecated group/name - [DEFAULT]/notification_driver\n#driver =\n",
		"#workers = <None>\n",
		"#host = <current hostname>\n",
		"#periodic_enable = true\n",
		"\n[simulated_driver]\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("sample lacks %q", want)
		}
	}
	for i, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "# ") && !strings.HasPrefix(line, "# Deprecated group/name") && len(line) > sampleWidth && strings.Contains(strings.TrimPrefix(line, "# "), " ") {
			t.Errorf("line %d longer than %d columns: %q", i+1, sampleWidth, line)
		}
	}
	// Every option written commented out loads back as its default.
	var uncommented strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") && strings.Contains(line, " = ") && !strings.HasPrefix(line, "# ") &&
			!strings.Contains(line, "<None>") && !strings.Contains(line, "<current hostname>") {
			line = line[1:]
		}
		uncommented.WriteString(line + "\n")
	}
	fromSample, err := LoadSources([]Source{{Name: "sample", Data: []byte(uncommented.String())}})
	if err != nil {
		t.Fatalf("sample with every default uncommented does not load: %v", err)
	}
	defaults, err := LoadSources(nil)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, *fromSample, *defaults)
}

// TestDevConf checks the configuration `make run` uses.
func TestDevConf(t *testing.T) {
	cfg, err := Load([]string{filepath.Join("..", "etc", "magnum", "magnum-dev.conf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, cfg.Database.Connection, "sqlite:///var/magnum.sqlite")
	eq(t, cfg.Default.TransportURL, "rabbit://guest:guest@127.0.0.1:5672/")
	eq(t, cfg.Certificates.CertManagerType, "x509keypair")
	eq(t, cfg.Notifications.Driver, []string{"messagingv2"})
	eq(t, cfg.SimulatedDriver.Enabled, true)
	eq(t, cfg.Conductor.MetricsListen, "127.0.0.1:9465")
}

func TestLogValueRedactsSecrets(t *testing.T) {
	cfg := mustLoad(t, "[DEFAULT]\ntransport_url = rabbit://u:pw-rabbit@h:5672/\n"+
		"[database]\nconnection = mysql+pymysql://m:pw-db@h/magnum\n"+
		"[keystone_auth]\npassword = pw-keystone\n[trust]\ntrustee_domain_admin_password = pw-trustee\n"+
		"[conductor]\ntopic = visible-topic\n")
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("configuration", "config", cfg)
	out := buf.String()
	for _, secret := range []string{"pw-rabbit", "pw-db", "pw-keystone", "pw-trustee"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line leaks %q: %s", secret, out)
		}
	}
	for _, want := range []string{"config.conductor.topic=visible-topic", "config.DEFAULT.transport_url=****", "config.database.connection=****", "config.keystone_auth.password=****"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %q: %s", want, out)
		}
	}
	// An unset secret is shown as empty, so operators see it is missing.
	buf.Reset()
	slog.New(slog.NewJSONHandler(&buf, nil)).LogAttrs(context.Background(), slog.LevelInfo, "c", slog.Any("config", mustLoad(t)))
	if !strings.Contains(buf.String(), `"password":""`) {
		t.Errorf("unset password not shown empty: %s", buf.String())
	}
}
