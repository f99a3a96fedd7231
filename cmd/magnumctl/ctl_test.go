package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

func TestServiceStateFollowsMagnumAPI(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(-d); return &v }
	tests := []struct {
		name string
		row  objects.MagnumService
		want string
	}{
		{"recent heartbeat", objects.MagnumService{LastSeenUp: at(10 * time.Second)}, "up"},
		{"exactly service_down_time", objects.MagnumService{LastSeenUp: at(180 * time.Second)}, "up"},
		{"stale heartbeat", objects.MagnumService{LastSeenUp: at(181 * time.Second)}, "down"},
		{"forced down", objects.MagnumService{LastSeenUp: at(time.Second), ForcedDown: true}, "down"},
		{"no heartbeat, recent update", objects.MagnumService{UpdatedAt: at(time.Minute)}, "up"},
		{"only created, long ago", objects.MagnumService{CreatedAt: at(time.Hour)}, "down"},
		{"clock skew ahead", objects.MagnumService{LastSeenUp: at(-time.Minute)}, "up"},
		{"disabled does not matter", objects.MagnumService{LastSeenUp: at(time.Second), Disabled: true}, "up"},
		{"nothing at all", objects.MagnumService{}, "down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serviceState(&tt.row, now, 180*time.Second); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// noEnv is an environment without any variable: no Keystone settings
// reach a test from the developer's shell.
func noEnv(string) string { return "" }

func TestParseLabels(t *testing.T) {
	got, err := parseLabels(" a=1, b = two ,c=")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a"] != "1" || got["b"] != "two" || got["c"] != "" {
		t.Fatalf("got %v", got)
	}
	if _, err := parseLabels("novalue"); err == nil || !strings.Contains(err.Error(), "novalue") {
		t.Fatalf("a label without = should be refused, got %v", err)
	}
	if m, err := parseLabels(""); err != nil || len(m) != 0 {
		t.Fatalf("empty labels: %v %v", m, err)
	}
}

func TestExplainNamesTheFailureAndItsMeaning(t *testing.T) {
	tests := []struct {
		err  error
		want []string
	}{
		{exception.ClusterNotFound("x"), []string{"magnum.common.exception.ClusterNotFound", "Cluster x could not be found.", "nothing with that name"}},
		{exception.NotSupported(`Updating a cluster when status is "CREATE_IN_PROGRESS"`), []string{"NotSupported", "current status"}},
		{exception.ClassClusterAlreadyExists.New(map[string]any{"uuid": "u"}), []string{"ClusterAlreadyExists", "conflicts"}},
		{&oslo.TimeoutError{Method: "ping_conductor", After: time.Second}, []string{"is magnum-conductor running"}},
		{exception.NotImplemented("This feature is not yet implemented."), []string{"builtins.NotImplementedError", "does not implement"}},
		{exception.DBConnectionError("db: x: connection refused", nil), []string{"oslo_db.exception.DBConnectionError", "cannot reach its database"}},
		{fmt.Errorf("plain"), []string{"plain"}},
	}
	for _, tt := range tests {
		got := explain(tt.err)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("explain(%v) = %q, missing %q", tt.err, got, w)
			}
		}
	}
}

// TestNoFlagShadowsAGlobalOne: a subcommand's own flag with the name of a
// global flag hides it (cobra parses the local one), so that
// `magnumctl cluster create --timeout 90s` would be read as minutes, or
// refused, instead of bounding the wait for the conductor.
func TestNoFlagShadowsAGlobalOne(t *testing.T) {
	real := rootCommand(&globals{})
	global := map[string]bool{}
	real.PersistentFlags().VisitAll(func(f *pflag.Flag) { global[f.Name] = true })
	if !global["timeout"] {
		t.Fatal("the global flags were not found")
	}
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			checked++
			if global[f.Name] {
				t.Errorf("%q has its own --%s, which hides the global one", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(real)
	if checked == 0 {
		t.Fatal("no subcommand flag was checked")
	}
}

func TestUUIDIsVersion4(t *testing.T) {
	u := newUUID()
	if !looksLikeUUID(u) || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) {
		t.Fatalf("not a v4 uuid: %s", u)
	}
	if u == newUUID() {
		t.Fatal("two uuids are equal")
	}
}

// TestUnreachableBrokerFailsAtOnce: with no broker listening, a command
// fails with the dial's reason instead of waiting for its --timeout (a
// minute by default) as calls and casts do; a cast as much as a call.
func TestUnreachableBrokerFailsAtOnce(t *testing.T) {
	for _, args := range [][]string{{"conductor", "ping"}, {"cluster", "delete", "c0ffee00-0000-4000-8000-000000000000"}} {
		done := make(chan struct{})
		var stdout, stderr bytes.Buffer
		code := 0
		go func() {
			defer close(done)
			code = execute(context.Background(), append([]string{"--config-file", os.DevNull,
				"--transport-url", "rabbit://guest:secret@127.0.0.1:1/", "--timeout", "10m"}, args...), noEnv, &stdout, &stderr)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%v: still waiting after a minute with --timeout 10m", args)
		}
		if code == 0 || !strings.Contains(stderr.String(), "connection refused") || !strings.Contains(stderr.String(), "127.0.0.1:1") ||
			strings.Contains(stderr.String(), "secret") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// TestDefaultConfigFileIsOsloConfigs: without --config-file, magnumctl reads
// the magnum.conf oslo.config would find (here ~/.magnum/magnum.conf), so
// its transport_url is the one dialled.
func TestDefaultConfigFileIsOsloConfigs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".magnum"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".magnum", "magnum.conf"),
		[]byte("[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:1/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"--timeout", "2s", "conductor", "ping"}, noEnv, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q: the default magnum.conf's transport_url was not used", code, stderr.String())
	}
}

// TestRabbitOptionsOfTheConfigAreUsed: magnumctl reaches the broker with
// the conductor's [oslo_messaging_rabbit] options: with ssl = true it
// speaks TLS, which the plain AMQP port refuses.
func TestRabbitOptionsOfTheConfigAreUsed(t *testing.T) {
	testkit.NeedsService(t, "RabbitMQ") // a plain AMQP listener for the TLS handshake to fail on
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:5672/\n"+
		"[oslo_messaging_rabbit]\nssl = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"--config-file", conf, "--timeout", "3s", "conductor", "ping"}, noEnv, &stdout, &stderr)
	if code == 0 || !strings.Contains(strings.ToLower(stderr.String()), "tls") {
		t.Fatalf("exit %d, stderr %q: [oslo_messaging_rabbit] ssl was not used", code, stderr.String())
	}
}

// TestHelpSaysAClusterAPIClusterNeedsKeystone: --help explains Keystone
// auth, that without it a Cluster API cluster cannot be made, and the exit
// codes.
func TestHelpSaysAClusterAPIClusterNeedsKeystone(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"--help"}, noEnv, &stdout, &stderr)
	for _, want := range []string{"a Cluster API cluster needs Keystone auth", "--os-cloud", "OS_AUTH_URL", "clouds.yaml",
		"Exit codes", "--os-application-credential-id"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestParseLabelsAsTheOpenstackClient: --labels as magnumclient's
// format_labels reads it: key=value, or several separated by ',' or ';'
// in one value; a key given twice has both values joined with ','.
func TestParseLabelsAsTheOpenstackClient(t *testing.T) {
	tests := []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{[]string{"a=1,b=2;c=3"}, map[string]string{"a": "1", "b": "2", "c": "3"}, ""},
		{[]string{"a=x,y", "b=2"}, map[string]string{"a": "x,y", "b": "2"}, ""},
		{[]string{"a=1", "a=2"}, map[string]string{"a": "1,2"}, ""},
		{[]string{"a=1,a=2"}, map[string]string{"a": "1,2"}, ""},
		{[]string{"url=http://h/?q=1"}, map[string]string{"url": "http://h/?q=1"}, ""},
		{[]string{"a=1,novalue"}, map[string]string{"a": "1,novalue"}, ""}, // one '=': one label, as format_labels reads it
		{[]string{"k=", ""}, map[string]string{"k": ""}, ""},
		{[]string{"a=1,b=2,novalue"}, nil, `"novalue" is not key=value`},
		{[]string{"=v"}, nil, `"=v" is not key=value`},
	}
	for _, tt := range tests {
		got, err := parseLabels(tt.in...)
		if tt.err != "" {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: got %v, want a usage error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("%q: got %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
	if got := joinTags([]string{"a,b", "c", "a, d,"}); got != "a,b,c,d" {
		t.Errorf("tags: %q", got)
	}
}

func TestClusterNamesAsMagnumAPITakesThem(t *testing.T) {
	for name, ok := range map[string]bool{"demo": true, "k8s-1.prod_a": true, "a": true, "1st": false, "-x": false,
		"has space": false, "": false, strings.Repeat("a", 242): true, strings.Repeat("a", 243): false, "ünï": false} {
		if err := checkClusterName(name); (err == nil) != ok {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// templateOf parses args as template create's flags.
func templateOf(t *testing.T, args ...string) (*objects.ClusterTemplate, error) {
	t.Helper()
	var tf templateFlags
	c := &cobra.Command{Use: "create"}
	tf.register(c)
	if err := c.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return tf.template(c, c.Flags().Args())
}

// TestTemplateFlagsAreTheOpenstackClients: template create's flags fill
// the fields openstack coe cluster template create fills, with its
// defaults; what magnum-api refuses is refused.
func TestTemplateFlagsAreTheOpenstackClients(t *testing.T) {
	ct, err := templateOf(t, "dev", "--image", "img")
	if err != nil {
		t.Fatal(err)
	}
	if objects.Deref(ct.Name) != "dev" || ct.Coe != "kubernetes" || !ct.FloatingIPEnabled || ct.MasterLBEnabled ||
		objects.Deref(ct.FlavorID) != "m1.medium" || objects.Deref(ct.DNSNameserver) != "8.8.8.8" ||
		objects.Deref(ct.DockerStorageDriver) != "overlay2" || objects.Deref(ct.ServerType) != "vm" || ct.Public || ct.Hidden ||
		ct.DockerVolumeSize != nil || ct.Tags != nil || !looksLikeUUID(objects.Deref(ct.UUID)) {
		t.Fatalf("defaults: %+v", ct)
	}
	ct, err = templateOf(t, "--name", "full", "--coe", "kubernetes", "--image", "ubuntu", "--external-network", "public",
		"--keypair", "kp", "--fixed-network", "n", "--fixed-subnet", "s", "--network-driver", "calico", "--volume-driver", "cinder",
		"--driver", "k8s_capi_helm_v1", "--dns-nameserver", "1.1.1.1", "--flavor", "f", "--master-flavor", "mf",
		"--docker-volume-size", "10", "--labels", "a=1,b=2", "--labels", "c=3", "--server-type", "bm", "--os-distro", "ubuntu",
		"--public", "--hidden", "--tags", "x,y", "--tags", "z", "--master-lb-enabled", "--floating-ip-disabled", "--tls-disabled",
		"--registry-enabled", "--insecure-registry", "reg:5000", "--http-proxy", "hp", "--https-proxy", "hsp", "--no-proxy", "np",
		"--docker-storage-driver", "devicemapper")
	if err != nil {
		t.Fatal(err)
	}
	got := fieldsOf(ct)
	want := map[string]any{"name": "full", "image_id": "ubuntu", "external_network_id": "public", "keypair_id": "kp",
		"fixed_network": "n", "fixed_subnet": "s", "network_driver": "calico", "volume_driver": "cinder", "driver": "k8s_capi_helm_v1",
		"dns_nameserver": "1.1.1.1", "flavor_id": "f", "master_flavor_id": "mf", "docker_volume_size": float64(10),
		"server_type": "bm", "cluster_distro": "ubuntu", "public": true, "hidden": true, "tags": "x,y,z", "master_lb_enabled": true,
		"floating_ip_enabled": false, "tls_disabled": true, "registry_enabled": true, "insecure_registry": "reg:5000",
		"http_proxy": "hp", "https_proxy": "hsp", "no_proxy": "np", "docker_storage_driver": "devicemapper",
		"labels": map[string]any{"a": "1", "b": "2", "c": "3"}}
	for k, v := range want {
		g, _ := json.Marshal(got[k])
		w, _ := json.Marshal(v)
		if string(g) != string(w) {
			t.Errorf("%s = %s, want %s", k, g, w)
		}
	}
	if ct, err := templateOf(t, "old", "--image", "i", "--os", "simulated"); err != nil || objects.Deref(ct.ClusterDistro) != "simulated" {
		t.Fatalf("--os: %v %v", ct, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "i"}, "a cluster template name is required"},
		{[]string{"a", "--name", "b", "--image", "i"}, "named twice"},
		{[]string{"a"}, "--image is required"},
		{[]string{"a", "--image", "i", "--coe", "nomad"}, `--coe "nomad" is not one of`},
		{[]string{"a", "--image", "i", "--server-type", "container"}, `--server-type "container" is not vm or bm`},
		{[]string{"a", "--image", "i", "--hidden", "--visible"}, "mutually exclusive"},
		{[]string{"a", "--image", "i", "--floating-ip-enabled", "--floating-ip-disabled"}, "mutually exclusive"},
		{[]string{"a", "--image", "i", "--docker-volume-size", "0"}, "--docker-volume-size must be 1 or more"},
		{[]string{"a", "--image", "i", "--labels", "x"}, `"x" is not key=value`},
	} {
		_, err := templateOf(t, tt.args...)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want a usage error with %q", tt.args, err, tt.want)
		}
	}
}

// TestKubeconfigIsMagnumclients: cluster config writes, byte for byte,
// the file python-magnumclient's config_cluster writes, with and without
// TLS.
func TestKubeconfigIsMagnumclients(t *testing.T) {
	cl := &objects.Cluster{Name: objects.Str("demo"), APIAddress: objects.Str("https://10.0.0.5:6443")}
	want := "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://10.0.0.5:6443\n" +
		"  name: demo\ncontexts:\n- context:\n    cluster: demo\n    user: admin\n  name: default\ncurrent-context: default\n" +
		"kind: Config\npreferences: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: Q0VSVA==\n" +
		"    client-key-data: S0VZ\n"
	if got := kubeconfig(cl, map[string]string{"ca": "CA", "cert": "CERT", "key": "KEY"}); got != want {
		t.Errorf("with TLS:\n%s\nwant:\n%s", got, want)
	}
	want = "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.5:6443\n  name: demo\ncontexts:\n- context:\n" +
		"    cluster: demo\n    user: demo\n  name: demo\ncurrent-context: demo\nkind: Config\npreferences: {}\nusers:\n- name: demo\n"
	if got := kubeconfig(cl, nil); got != want {
		t.Errorf("without TLS:\n%s\nwant:\n%s", got, want)
	}
}
