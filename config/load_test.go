package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeFiles writes name → content under a temporary directory and returns
// the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadStrings(t *testing.T, contents ...string) (*Config, error) {
	t.Helper()
	var srcs []Source
	for i, c := range contents {
		srcs = append(srcs, Source{Name: "file" + string(rune('1'+i)) + ".conf", Data: []byte(c)})
	}
	return LoadSources(srcs)
}

func mustLoad(t *testing.T, contents ...string) *Config {
	t.Helper()
	cfg, err := loadStrings(t, contents...)
	if err != nil {
		t.Fatalf("LoadSources: %v", err)
	}
	return cfg
}

func TestDefaultsMatchMagnum(t *testing.T) {
	cfg := mustLoad(t)
	host, _ := os.Hostname()
	checks := []struct {
		name      string
		got, want any
	}{
		{"transport_url", cfg.Default.TransportURL, "rabbit://"},
		{"control_exchange is magnum, as magnum sets it", cfg.Default.ControlExchange, "magnum"},
		{"rpc_response_timeout", cfg.Default.RPCResponseTimeout, 60 * time.Second},
		{"executor_thread_pool_size", cfg.Default.ExecutorThreadPoolSize, 64},
		{"host defaults to the hostname", cfg.Default.Host, host},
		{"periodic_enable", cfg.Default.PeriodicEnable, true},
		{"periodic_interval_max", cfg.Default.PeriodicIntervalMax, 60 * time.Second},
		{"service_down_time", cfg.Default.ServiceDownTime, 180 * time.Second},
		{"state_path interpolates $pybasedir", cfg.Default.StatePath, "/usr/lib/python3/dist-packages/magnum"},
		{"bindir", cfg.Default.Bindir, "/usr/lib/python3/dist-packages/magnum/bin"},
		{"conductor topic", cfg.Conductor.Topic, "magnum-conductor"},
		{"conductor workers unset", cfg.Conductor.Workers, 0},
		{"metrics off", cfg.Conductor.MetricsListen, ""},
		{"shutdown grace", cfg.Conductor.ShutdownGracePeriod, 30 * time.Second},
		{"release start-up pages", cfg.Conductor.ReleaseStartupPages, true},
		{"coordination", cfg.Periodic.Coordination, "hash"},
		{"db connection", cfg.Database.Connection, "sqlite:////usr/lib/python3/dist-packages/magnum/magnum.sqlite"},
		{"max_pool_size", cfg.Database.MaxPoolSize, 5},
		{"max_overflow", cfg.Database.MaxOverflow, 50},
		{"connection_recycle_time", cfg.Database.ConnectionRecycleTime, time.Hour},
		{"max_retries", cfg.Database.MaxRetries, 10},
		{"retry_interval", cfg.Database.RetryInterval, 10 * time.Second},
		{"mysql_engine", cfg.Database.MySQLEngine, "InnoDB"},
		{"rabbit ssl", cfg.Rabbit.SSL, false},
		{"heartbeat_timeout_threshold", cfg.Rabbit.HeartbeatTimeoutThreshold, 60 * time.Second},
		{"heartbeat_rate", cfg.Rabbit.HeartbeatRate, 2},
		{"rabbit_transient_queues_ttl", cfg.Rabbit.RabbitTransientQueuesTTL, 1800 * time.Second},
		{"kombu_missing_consumer_retry_timeout", cfg.Rabbit.KombuMissingConsumerRetryTimeout, 60 * time.Second},
		{"notification driver", cfg.Notifications.Driver, []string{}},
		{"notification topics", cfg.Notifications.Topics, []string{"notifications"}},
		{"notification retry", cfg.Notifications.Retry, -1},
		{"cert_manager_type", cfg.Certificates.CertManagerType, "barbican"},
		{"storage_path", cfg.Certificates.StoragePath, "/var/lib/magnum/certificates/"},
		{"allowed_key_usage", cfg.X509.AllowedKeyUsage, []string{"Digital Signature", "Key Encipherment", "Non Repudiation"}},
		{"term_of_validity", cfg.X509.TermOfValidity, 1825},
		{"key_pool_size", cfg.X509.KeyPoolSize, 4},
		{"refuse_system_masters_csr", cfg.X509.RefuseSystemMastersCSR, true},
		{"temp_cache_dir", cfg.Cluster.TempCacheDir, "/var/lib/magnum/certificate-cache"},
		{"cluster_heat create_timeout", cfg.ClusterHeat.CreateTimeout, time.Hour},
		{"health_polling_interval", cfg.Kubernetes.HealthPollingInterval, time.Minute},
		{"health_connect_timeout", cfg.Kubernetes.HealthConnectTimeout, 5 * time.Second},
		{"health_request_timeout", cfg.Kubernetes.HealthRequestTimeout, 10 * time.Second},
		{"health_poll_workers", cfg.Kubernetes.HealthPollWorkers, 128},
		{"health_keep_status_on_error", cfg.Kubernetes.HealthKeepStatusOnError, false},
		{"disabled_drivers", cfg.Drivers.DisabledDrivers, []string{}},
		{"verify_ca", cfg.Drivers.VerifyCA, true},
		{"capi namespace_prefix", cfg.CAPIDriver.NamespacePrefix, "magnum-"},
		{"capi create_timeout", cfg.CAPIDriver.CreateTimeout, time.Hour},
		{"capi flavor_label_defaults", cfg.CAPIDriver.FlavorLabelDefaults, map[string]string{}},
		{"simulated enabled", cfg.SimulatedDriver.Enabled, false},
		{"simulated delay", cfg.SimulatedDriver.OperationDelay, 5 * time.Second},
		{"keystone auth_type", cfg.KeystoneAuth.AuthType, "password"},
		{"barbican endpoint_type", cfg.BarbicanClient.EndpointType, "publicURL"},
		{"audit namespace", cfg.Audit.Namespace, "openstack"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestBooleanSpellings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"true", true}, {"True", true}, {"TRUE", true}, {"yes", true}, {"Yes", true}, {"on", true}, {"ON", true}, {"1", true},
		{"false", false}, {"False", false}, {"no", false}, {"NO", false}, {"off", false}, {"Off", false}, {"0", false},
		{`"true"`, true}, {"'no'", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			cfg := mustLoad(t, "[oslo_messaging_rabbit]\nssl = "+tc.in+"\n[DEFAULT]\nperiodic_enable = "+tc.in+"\n")
			if cfg.Rabbit.SSL != tc.want || cfg.Default.PeriodicEnable != tc.want {
				t.Errorf("got ssl=%v periodic_enable=%v, want %v", cfg.Rabbit.SSL, cfg.Default.PeriodicEnable, tc.want)
			}
		})
	}
}

func TestValues(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		check func(t *testing.T, c *Config)
	}{
		{"later file wins", []string{"[conductor]\ntopic = a\n", "[conductor]\ntopic = b\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "b") }},
		{"last assignment in a file wins", []string{"[conductor]\ntopic = a\ntopic = b\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "b") }},
		{"repeated sections merge", []string{"[conductor]\ntopic = a\n[DEFAULT]\n[conductor]\nworkers = 3\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "a"); eq(t, c.Conductor.Workers, 3) }},
		{"colon assignment", []string{"[conductor]\ntopic: t1\nworkers=2\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "t1"); eq(t, c.Conductor.Workers, 2) }},
		{"the first of = and : splits", []string{"[keystone_auth]\nauth_url = http://k:5000/v3\n[cluster]\ntemp_cache_dir: /a=b\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.KeystoneAuth.AuthURL, "http://k:5000/v3")
				eq(t, c.Cluster.TempCacheDir, "/a=b")
			}},
		{"surrounding quotes removed once", []string{"[conductor]\ntopic = \"a b\"\n[audit]\nnamespace = '\"x\"'\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "a b"); eq(t, c.Audit.Namespace, `"x"`) }},
		{"no inline comments", []string{"[conductor]\ntopic = a # not a comment\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "a # not a comment") }},
		{"comments and blank lines", []string{"# c\n; c\n\n[conductor]\n#topic = x\n;topic = y\ntopic = z\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "z") }},
		{"continuation lines join with newline", []string{"[kubernetes]\npost_install_manifest_url = a\n  b\n\tc\n\n[conductor]\ntopic = t\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Kubernetes.PostInstallManifestURL, "a\nb\nc")
				eq(t, c.Conductor.Topic, "t")
			}},
		{"continuation of a list", []string{"[drivers]\ndisabled_drivers = a,\n   b ,\n   c\n"},
			func(t *testing.T, c *Config) { eq(t, c.Drivers.DisabledDrivers, []string{"a", "b", "c"}) }},
		{"CRLF line endings", []string{"[conductor]\r\ntopic = crlf\r\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "crlf") }},
		{"unknown groups and options ignored", []string{"[nope]\nx = 1\n[conductor]\nnot_an_option = 1\ntopic = t\n[keystone_authtoken]\nmemcached_servers = a\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "t") }},
		{"group names are case-insensitive", []string{"[Conductor]\ntopic = t\n[DATABASE]\nmax_pool_size = 7\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "t"); eq(t, c.Database.MaxPoolSize, 7) }},
		{"[default] is not [DEFAULT]", []string{"[default]\ncontrol_exchange = x\n"},
			func(t *testing.T, c *Config) { eq(t, c.Default.ControlExchange, "magnum") }},
		{"option names are case-sensitive", []string{"[conductor]\nTOPIC = x\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.Topic, "magnum-conductor") }},
		{"deprecated name in DEFAULT", []string{"[DEFAULT]\nsql_connection = mysql+pymysql://m:p@db/magnum\n"},
			func(t *testing.T, c *Config) { eq(t, c.Database.Connection, "mysql+pymysql://m:p@db/magnum") }},
		{"deprecated group spelled in capitals", []string{"[DATABASE]\nsql_max_retries = 3\nreconnect_interval = 4\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Database.MaxRetries, 3)
				eq(t, c.Database.RetryInterval, 4*time.Second)
			}},
		{"deprecated name in the same group", []string{"[oslo_messaging_rabbit]\nrabbit_use_ssl = true\nkombu_ssl_ca_certs = /ca\nkombu_reconnect_timeout = 9\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Rabbit.SSL, true)
				eq(t, c.Rabbit.SSLCAFile, "/ca")
				eq(t, c.Rabbit.KombuMissingConsumerRetryTimeout, 9*time.Second)
			}},
		{"oslo.messaging's pool size in its deprecated DEFAULT group", []string{"[DEFAULT]\nrpc_conn_pool_size = 77\n"},
			func(t *testing.T, c *Config) { eq(t, c.Rabbit.RPCConnPoolSize, 77) }},
		{"current name beats deprecated name in one file", []string{"[database]\nconnection = sqlite:///new\n[DEFAULT]\nsql_connection = sqlite:///old\n"},
			func(t *testing.T, c *Config) { eq(t, c.Database.Connection, "sqlite:///new") }},
		{"newer file beats older even with a deprecated name", []string{"[database]\nconnection = sqlite:///a\n", "[DEFAULT]\nsql_connection = sqlite:///b\n"},
			func(t *testing.T, c *Config) { eq(t, c.Database.Connection, "sqlite:///b") }},
		{"keystone_authtoken session options feed keystone_auth", []string{"[keystone_authtoken]\ncafile = /ca.pem\ninsecure = yes\nauth_uri = http://ks:5000\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.KeystoneAuth.Cafile, "/ca.pem")
				eq(t, c.KeystoneAuth.Insecure, true)
				eq(t, c.KeystoneAuthtoken.WWWAuthenticateURI, "http://ks:5000")
			}},
		{"lists", []string{"[x509]\nallowed_extensions = a , b,c,,\nallowed_key_usage = Digital Signature, CRL Sign\n[trust]\nroles =\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.X509.AllowedExtensions, []string{"a", "b", "c"})
				eq(t, c.X509.AllowedKeyUsage, []string{"Digital Signature", "CRL Sign"})
				eq(t, c.Trust.Roles, []string{})
			}},
		{"list keeps empty middle items", []string{"[drivers]\ndisabled_drivers = a,,b\n"},
			func(t *testing.T, c *Config) { eq(t, c.Drivers.DisabledDrivers, []string{"a", "", "b"}) }},
		{"dict", []string{"[capi_driver]\nflavor_label_defaults = boot_volume_size:20, boot_volume_type : ssd,url:http://x:1\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.CAPIDriver.FlavorLabelDefaults, map[string]string{"boot_volume_size": "20", "boot_volume_type": "ssd", "url": "http://x:1"})
			}},
		{"dict part without colon joins the next part", []string{"[capi_driver]\nflavor_label_defaults = a,b:1\n"},
			func(t *testing.T, c *Config) { eq(t, c.CAPIDriver.FlavorLabelDefaults, map[string]string{"a,b": "1"}) }},
		{"multi-string repeats and accumulates over files", []string{
			"[oslo_messaging_notifications]\ndriver = messaging\ndriver = log\n",
			"[DEFAULT]\nnotification_driver = noop\n[oslo_messaging_notifications]\ndriver = messagingv2\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Notifications.Driver, []string{"messaging", "log", "noop", "messagingv2"})
			}},
		{"interpolation", []string{"[DEFAULT]\nstate_path = /var/lib/magnum\ntempdir = $state_path/tmp\n" +
			"[certificates]\nstorage_path = ${state_path}/certs\n" +
			"[cluster]\ntemp_cache_dir = ${certificates.storage_path}/cache\n" +
			"[conductor]\ntopic = $$5 and \\$6 and $ and ${ and $1\n" +
			"[audit]\nnamespace = ${conductor.workers}-$DEFAULT.periodic_enable-$oslo_messaging_rabbit.ssl\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Default.Tempdir, "/var/lib/magnum/tmp")
				eq(t, c.Certificates.StoragePath, "/var/lib/magnum/certs")
				eq(t, c.Cluster.TempCacheDir, "/var/lib/magnum/certs/cache")
				eq(t, c.Conductor.Topic, "$5 and $6 and $ and ${ and $1")
				eq(t, c.Audit.Namespace, "-True-False")
			}},
		{"interpolation sees the final value", []string{"[DEFAULT]\ntempdir = $state_path/t\nstate_path = /a\n", "[DEFAULT]\nstate_path = /b\n"},
			func(t *testing.T, c *Config) { eq(t, c.Default.Tempdir, "/b/t") }},
		{"interpolation of a list and a float", []string{"[audit]\nnamespace = ${x509.allowed_extensions} ${simulated_driver.operation_delay}\n[x509]\nallowed_extensions = a,b\n[simulated_driver]\noperation_delay = 2.5\n"},
			func(t *testing.T, c *Config) { eq(t, c.Audit.Namespace, "['a', 'b'] 2.5") }},
		{"interpolation of an option Magnum has but we do not model", []string{"[DEFAULT]\nmy_ip = 10.0.0.1\ntransport_url = rabbit://u:p@$my_ip:5672/\n"},
			func(t *testing.T, c *Config) { eq(t, c.Default.TransportURL, "rabbit://u:p@10.0.0.1:5672/") }},
		{"plain name falls back to DEFAULT", []string{"[DEFAULT]\nstate_path = /s\n[cluster]\ntemp_cache_dir = $state_path/c\n"},
			func(t *testing.T, c *Config) { eq(t, c.Cluster.TempCacheDir, "/s/c") }},
		{"durations in seconds, minutes and float seconds", []string{"[DEFAULT]\nrpc_response_timeout = 7\n[capi_driver]\ncreate_timeout = 2\n[simulated_driver]\noperation_delay = 0.25\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Default.RPCResponseTimeout, 7*time.Second)
				eq(t, c.CAPIDriver.CreateTimeout, 2*time.Minute)
				eq(t, c.SimulatedDriver.OperationDelay, 250*time.Millisecond)
			}},
		{"integers as Python reads them", []string{"[conductor]\nworkers = +4\n[database]\nmax_retries = -1\nmax_pool_size = 1_0\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Conductor.Workers, 4)
				eq(t, c.Database.MaxRetries, -1)
				eq(t, c.Database.MaxPoolSize, 10)
			}},
		{"an empty integer keeps the default", []string{"[database]\nmax_pool_size =\n"},
			func(t *testing.T, c *Config) { eq(t, c.Database.MaxPoolSize, 5) }},
		{"metrics_listen without a host binds loopback", []string{"[conductor]\nmetrics_listen = :9465\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.MetricsListen, "127.0.0.1:9465") }},
		{"metrics_listen as a bare port", []string{"[conductor]\nmetrics_listen = 9100\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.MetricsListen, "127.0.0.1:9100") }},
		{"metrics_listen with a host", []string{"[conductor]\nmetrics_listen = [::]:9465\n"},
			func(t *testing.T, c *Config) { eq(t, c.Conductor.MetricsListen, "[::]:9465") }},
		{"host set explicitly", []string{"[DEFAULT]\nhost = conductor-1.example.org\n"},
			func(t *testing.T, c *Config) { eq(t, c.Default.Host, "conductor-1.example.org") }},
		{"multi-host transport URL", []string{"[DEFAULT]\ntransport_url = rabbit://a:b@h1:5672,a:b@h2:5672/vhost?ssl=1\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Default.TransportURL, "rabbit://a:b@h1:5672,a:b@h2:5672/vhost?ssl=1")
			}},
		{"quorum queue options, typo spelling still read", []string{"[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\nrabbit_quroum_max_memory_length = 5\nrabbit_quorum_max_memory_bytes = 6\n"},
			func(t *testing.T, c *Config) {
				eq(t, c.Rabbit.RabbitQuorumQueue, true)
				eq(t, c.Rabbit.RabbitQuorumMaxMemoryLength, 5)
				eq(t, c.Rabbit.RabbitQuorumMaxMemoryBytes, 6)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustLoad(t, tc.files...))
		})
	}
}

func eq[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestLoadFilesThenDirsInLexicalOrder(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"main.conf":         "[conductor]\ntopic = main\nworkers = 1\n[oslo_messaging_notifications]\ndriver = a\n",
		"d/20-b.conf":       "[conductor]\ntopic = b\n[oslo_messaging_notifications]\ndriver = c\n",
		"d/10-a.conf":       "[conductor]\ntopic = a\nworkers = 2\n[oslo_messaging_notifications]\ndriver = b\n",
		"d/30-c.conf.bak":   "[conductor]\ntopic = ignored\n",
		"d/.99-hidden.conf": "[conductor]\ntopic = hidden\n",
		"d2/x.conf":         "[conductor]\nworkers = 5\n",
	})
	cfg, err := Load([]string{filepath.Join(dir, "main.conf")}, []string{filepath.Join(dir, "d"), filepath.Join(dir, "d2")})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, cfg.Conductor.Topic, "b")
	eq(t, cfg.Conductor.Workers, 5)
	eq(t, cfg.Notifications.Driver, []string{"a", "b", "c"})
}

func TestLoadErrors(t *testing.T) {
	secretPW := "hunter2-very-secret"
	tests := []struct {
		name string
		conf string
		want []string // substrings of the error, all required
	}{
		{"bad boolean", "[oslo_messaging_rabbit]\nssl = maybe\n", []string{"file1.conf:2", "[oslo_messaging_rabbit] ssl", `"maybe"`, "Unexpected boolean value"}},
		{"bad boolean via deprecated name", "[oslo_messaging_rabbit]\nrabbit_use_ssl = 2\n", []string{"[oslo_messaging_rabbit] rabbit_use_ssl", `"2"`}},
		{"bad integer", "[conductor]\nworkers = four\n", []string{"[conductor] workers", `"four"`, "invalid literal for int()"}},
		{"float is not an integer", "[database]\nmax_retries = 1.5\n", []string{"[database] max_retries", `"1.5"`}},
		{"below minimum", "[oslo_messaging_rabbit]\nrabbit_transient_queues_ttl = 0\n", []string{"rabbit_transient_queues_ttl", "greater than or equal to 1"}},
		{"above maximum", "[database]\nconnection_debug = 101\n", []string{"connection_debug", "less than or equal to 100"}},
		{"not a choice", "[periodic]\ncoordination = raft\n", []string{"[periodic] coordination", `"raft"`, "Valid values are [hash, none]"}},
		{"choices are case-sensitive", "[oslo_messaging_rabbit]\nrabbit_login_method = plain\n", []string{"rabbit_login_method", "'plain'"}},
		{"duration overflow", "[capi_driver]\ncreate_timeout = 9223372036854775807\n", []string{"[capi_driver] create_timeout", "too large for a duration"}},
		{"integer overflow", "[conductor]\nworkers = 99999999999999999999\n", []string{"[conductor] workers", "out of the 64-bit range"}},
		{"float duration is not a number", "[simulated_driver]\noperation_delay = nan\n", []string{"operation_delay", "not a usable duration"}},
		{"bad float", "[simulated_driver]\noperation_delay = soon\n", []string{"operation_delay", "could not convert string to float"}},
		{"negative float below minimum", "[simulated_driver]\noperation_delay = -1\n", []string{"operation_delay", "greater than or equal to 0"}},
		{"dict without colon", "[capi_driver]\nflavor_label_defaults = a\n", []string{"flavor_label_defaults", "NAME:VALUE"}},
		{"dict with empty key", "[capi_driver]\nflavor_label_defaults = :v\n", []string{"Key name should not be empty"}},
		{"dict with duplicate key", "[capi_driver]\nflavor_label_defaults = a:1,a:2\n", []string{"Duplicate key a"}},
		{"bad host address", "[DEFAULT]\nhost = not_valid!\n", []string{"[DEFAULT] host", "not a valid host address"}},
		{"empty host address", "[DEFAULT]\nhost =\n", []string{"[DEFAULT] host", "not a valid host address"}},
		{"numeric top-level domain", "[DEFAULT]\nhost = a.123\n", []string{"not a valid host address"}},
		{"bad keystone URL", "[keystone_auth]\nauth_url = keystone:5000\n", []string{"[keystone_auth] auth_url", "no scheme"}},
		{"bad port in URL", "[keystone_auth]\nauth_url = http://k:port/v3\n", []string{"auth_url", "port is not a number"}},
		{"dollar in a secret", "[keystone_auth]\npassword = abc$" + secretPW + "\n", []string{"[keystone_auth] password", `"****"`, "write $$ for a literal $"}},
		{"bad metrics_listen", "[conductor]\nmetrics_listen = localhost\n", []string{"metrics_listen", "host:port"}},
		{"unknown interpolation", "[conductor]\ntopic = $nonexistent\n", []string{"[conductor] topic", "cannot interpolate $nonexistent: no such option"}},
		{"unknown group interpolation", "[conductor]\ntopic = ${nogroup.topic}\n", []string{"cannot interpolate $nogroup.topic"}},
		{"interpolation loop", "[DEFAULT]\ntempdir = $state_path\nstate_path = $tempdir\n", []string{"[DEFAULT] tempdir", "[DEFAULT] state_path", "loop"}},
		{"interpolating an invalid option", "[conductor]\nworkers = x\n[audit]\nnamespace = $conductor.workers\n", []string{"[audit] namespace", "[conductor] workers is invalid", `[conductor] workers = "x"`}},
		{"secret transport_url is not shown", "[DEFAULT]\ntransport_url = rabbit://u:" + secretPW + "@h:notaport/\n", []string{"[DEFAULT] transport_url", `"****"`, "port is not a number"}},
		{"quorum and HA queues together", "[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\nrabbit_ha_queues = true\n", []string{"rabbit_quorum_queue and rabbit_ha_queues cannot both be true"}},
		{"parse: no = or :", "[DEFAULT]\njust words\n", []string{"file1.conf: line 2", "No ':' or '=' found in assignment"}},
		{"parse: empty key", "[DEFAULT]\n= v\n", []string{"Key cannot be empty"}},
		{"parse: continuation without key", "[DEFAULT]\n  indented\n", []string{"line 2", "Unexpected continuation line"}},
		{"parse: unterminated section", "[DEFAULT\n", []string{"Invalid section (must end with ])"}},
		{"parse: empty section name", "[]\n", []string{"Empty section name"}},
		{"parse: assignment before a section", "topic = x\n", []string{"Section must be started before assignment"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadStrings(t, tc.conf)
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("config returned with an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secretPW) {
				t.Errorf("error leaks the secret: %q", err)
			}
		})
	}
}

func TestLoadReportsEveryErrorAtOnce(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a.conf":     "[conductor]\nworkers = x\n[periodic]\ncoordination = raft\n",
		"b.conf":     "[DEFAULT\n",
		"d/c.conf":   "[x509]\nallow_ca = perhaps\n",
		"dir.conf/x": "",
	})
	_, err := Load(
		[]string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf"), filepath.Join(dir, "missing.conf"), filepath.Join(dir, "dir.conf")},
		[]string{filepath.Join(dir, "d"), filepath.Join(dir, "nodir")},
	)
	if err == nil {
		t.Fatal("no error")
	}
	var (
		values []*ValueError
		parses []*ParseError
		files  []*FileError
	)
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ve *ValueError
		var pe *ParseError
		var fe *FileError
		switch {
		case errors.As(e, &ve):
			values = append(values, ve)
		case errors.As(e, &pe):
			parses = append(parses, pe)
		case errors.As(e, &fe):
			files = append(files, fe)
		default:
			t.Errorf("unexpected error type %T: %v", e, e)
		}
	}
	walk(err)
	if len(values) != 3 {
		t.Errorf("value errors: got %d, want 3 (workers, coordination, allow_ca): %v", len(values), values)
	}
	for _, ve := range values {
		if ve.File == "" || ve.Group == "" || ve.Option == "" || ve.Value == "" {
			t.Errorf("value error lacks a field: %+v", ve)
		}
	}
	if len(parses) != 1 || !strings.HasSuffix(parses[0].File, "b.conf") || parses[0].Line != 1 {
		t.Errorf("parse errors: %+v", parses)
	}
	if len(files) != 3 {
		t.Fatalf("file errors: got %d, want 3 (missing.conf, dir.conf, nodir): %v", len(files), files)
	}
	if !errors.Is(files[0].Err, os.ErrNotExist) || !strings.HasSuffix(files[0].Path, "missing.conf") {
		t.Errorf("missing file: %v", files[0])
	}
	if !strings.HasSuffix(files[1].Path, "dir.conf") {
		t.Errorf("directory given as a file: %v", files[1])
	}
	if !files[2].Dir || !errors.Is(files[2], os.ErrNotExist) {
		t.Errorf("missing dir: %v", files[2])
	}
	msg := err.Error()
	for _, w := range []string{"missing.conf: not found", "config directory " + filepath.Join(dir, "nodir"), "b.conf: line 1"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

func TestUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files regardless of their mode")
	}
	dir := writeFiles(t, map[string]string{"secret.conf": "[DEFAULT]\n"})
	p := filepath.Join(dir, "secret.conf")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{p}, nil)
	var fe *FileError
	if !errors.As(err, &fe) || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("got %v", err)
	}
}

func TestWorkerCount(t *testing.T) {
	if got := (ConductorOpts{Workers: 3}).WorkerCount(); got != 3 {
		t.Errorf("got %d", got)
	}
	if got := (ConductorOpts{}).WorkerCount(); got < 1 {
		t.Errorf("unset workers: got %d, want the CPU count", got)
	}
}

func TestDefinitionsAreWellFormed(t *testing.T) {
	defs, err := definitions()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range defs {
		key := d.group + "." + d.name
		if seen[key] {
			t.Errorf("%s defined twice", key)
		}
		seen[key] = true
		if d.help == "" {
			t.Errorf("%s has no help", key)
		}
		if d.hasDefault && d.kind != kindMulti {
			if _, err := d.convert(d.def); err != nil && !strings.Contains(d.def, "$") {
				t.Errorf("%s: default %q does not parse: %v", key, d.def, err)
			}
		}
	}
}
