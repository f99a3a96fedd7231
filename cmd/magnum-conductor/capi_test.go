package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness"
)

func loadTestConfig(t *testing.T, ini string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(p, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// unreachableKubeconfig points at a port nothing listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters:
- name: mgmt
  cluster: {server: "http://127.0.0.1:1"}
contexts:
- name: mgmt
  context: {cluster: mgmt, user: u}
current-context: mgmt
users:
- name: u
  user: {token: kube-token-5ecret}
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type nopCerts struct{}

func (nopCerts) CAKeyPair(context.Context, *objects.Cluster, string) ([]byte, []byte, error) {
	return nil, nil, errors.New("unused")
}

func noEnv(string) string { return "" }

func TestCAPIDriverNotConfiguredIsNil(t *testing.T) {
	var logs bytes.Buffer
	d, err := buildCAPIDriver(loadTestConfig(t, "[DEFAULT]\n"), noEnv, nopCerts{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || d != nil {
		t.Fatalf("got %v, %v; want nil, nil", d, err)
	}
	if !strings.Contains(logs.String(), "not configured") {
		t.Fatalf("no log line saying why:\n%s", logs.String())
	}
}

func TestCAPIDriverUnreachableManagementClusterIsRegisteredButRefuses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+unreachableKubeconfig(t)+"\nstart_timeout = 5\n")
	logs := &harness.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	start := time.Now()
	d, err := buildCAPIDriver(cfg, noEnv, nopCerts{}, log)
	if err != nil || d == nil {
		t.Fatalf("got %v, %v; want the driver registered without an error", d, err)
	}
	// The conductor starts it and serves after a bounded wait.
	drivers.StartRunners(ctx, []drivers.Driver{d}, 3*time.Second, log)
	if time.Since(start) > 10*time.Second {
		t.Fatalf("start not bounded: %v", time.Since(start))
	}
	if err := d.(drivers.Runner).Ready(); !errors.Is(err, drivers.ErrNotReady) {
		t.Fatalf("ready without a management cluster: %v", err)
	}
	// Every operation refuses with drivers.ErrNotReady instead of acting on
	// an empty cache (which would read as "every CAPI Cluster is gone").
	c := &objects.Cluster{UUID: objects.Str("5d12f6fd-a196-4bf0-ae4c-1f639a523a52"), Status: objects.CreateInProgress}
	if _, err := d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: c}}); !errors.Is(err, drivers.ErrNotReady) {
		t.Fatalf("Observe = %v", err)
	}
	_, err = d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: drivers.ClusterRequest{Cluster: c}, Timeout: time.Hour})
	if !errors.Is(err, drivers.ErrNotReady) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("CreateCluster = %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "retrying") || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("no clear error line:\n%s", out)
	}
	if strings.Contains(out, "kube-token-5ecret") {
		t.Fatal("kubeconfig token logged")
	}
}

func TestCAPIDriverStartsOnceTheManagementClusterAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var up atomic.Bool
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+fakeManagementCluster(t, &up)+"\nstart_timeout = 5\n")
	logs := &harness.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	d, err := buildCAPIDriver(cfg, noEnv, nopCerts{}, log)
	if err != nil || d == nil {
		t.Fatalf("got %v, %v", d, err)
	}
	drivers.StartRunners(ctx, []drivers.Driver{d}, 2*time.Second, log)
	r := d.(drivers.Runner)
	if r.Ready() == nil || !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("ready %v while the management cluster answers 503; logs:\n%s", r.Ready(), logs.String())
	}
	up.Store(true)
	// the first pause is 5 s
	if testkit.Poll(30*time.Second, func() bool { return r.Ready() == nil }) != nil {
		t.Fatalf("not started after the management cluster came up; logs:\n%s", logs.String())
	}
	c := &objects.Cluster{UUID: objects.Str("5d12f6fd-a196-4bf0-ae4c-1f639a523a52"), Status: objects.CreateInProgress}
	if _, err := d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: c}}); errors.Is(err, drivers.ErrNotReady) {
		t.Fatalf("still refused after start: %v", err)
	}
}

func TestCAPIDriverConfigurationErrorsStopTheConductor(t *testing.T) {
	for name, ini := range map[string]string{
		"missing kubeconfig":    "[capi_driver]\nkubeconfig = /nonexistent/kubeconfig\n",
		"missing cloud CA file": "[capi_driver]\nkubeconfig = KC\ncloud_ca_file = /nonexistent/ca.pem\n",
		"bad namespace prefix":  "[capi_driver]\nkubeconfig = KC\nnamespace_prefix = Not_A_Label-\n",
		"unknown class version": "[capi_driver]\nkubeconfig = KC\ncluster_class_version = v999\n",
		"unknown label default": "[capi_driver]\nkubeconfig = KC\nflavor_label_defaults = no_such_label:1\n",
		"bad label default":     "[capi_driver]\nkubeconfig = KC\nflavor_label_defaults = boot_volume_size:big\n",
		"bad cinder default":    "[capi_driver]\nkubeconfig = KC\n[cinder]\ndefault_boot_volume_type = a b\n",
		"bad management CIDR":   "[capi_driver]\nkubeconfig = KC\nmanagement_cidrs = 10.0.0.0/33\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadTestConfig(t, strings.ReplaceAll(ini, "KC", unreachableKubeconfig(t)))
			d, err := buildCAPIDriver(cfg, noEnv, nopCerts{}, slog.New(slog.DiscardHandler))
			if err == nil || d != nil || !strings.Contains(err.Error(), "capi_driver") {
				t.Fatalf("got %v, %v; want an error naming [capi_driver]", d, err)
			}
		})
	}
}

func TestCAPIConfiguredInCluster(t *testing.T) {
	cfg := loadTestConfig(t, "[DEFAULT]\n")
	if capiConfigured(cfg, noEnv) {
		t.Fatal("configured without kubeconfig or KUBERNETES_SERVICE_HOST")
	}
	if !capiConfigured(cfg, func(k string) string {
		if k == "KUBERNETES_SERVICE_HOST" {
			return "10.0.0.1"
		}
		return ""
	}) {
		t.Fatal("not configured inside Kubernetes")
	}
}

func TestCAPIOptionsMapping(t *testing.T) {
	cfg := loadTestConfig(t, `[capi_driver]
namespace_prefix = tenant-
kubeconfig_context = mgmt
create_timeout = 30
delete_timeout = 45
resync_period = 120
start_timeout = 90
management_probe_interval = 7
management_probe_timeout = 3
cloud_region = RegionTwo
cloud_interface = internal
class_dir = /etc/magnum/capi-classes
[keystone_authtoken]
www_authenticate_uri = https://keystone.example/v3
[keystone_auth]
auth_url = http://keystone.internal:5000
username = magnum
password = pw
project_name = service
`)
	o := capiOptions(cfg.CAPIDriver, "PEM")
	if o.NamespacePrefix != "tenant" || o.Context != "mgmt" || o.CreateTimeout != 30*time.Minute || o.DeleteTimeout != 45*time.Minute ||
		o.ResyncPeriod != 2*time.Minute || o.CloudRegion != "RegionTwo" || o.CloudInterface != "internal" || o.CloudCACert != "PEM" ||
		o.ProbeInterval != 7*time.Second || o.ProbeTimeout != 3*time.Second || o.CacheSyncTimeout != 90*time.Second ||
		o.ClassDir != "/etc/magnum/capi-classes" {
		t.Fatalf("%+v", o)
	}
	o.ClassDir = "" // not on this machine
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// Both Cluster API anchors' entry points by default, so that their
	// templates keep selecting a driver after a switch; an empty option
	// names none.
	wantAliases := []string{"k8s_cluster_api_ubuntu", "k8s_cluster_api_ubuntu_focal", "k8s_cluster_api_debian",
		"k8s_cluster_api_flatcar", "k8s_cluster_api_rockylinux", "k8s_capi_helm_v1"}
	if !slices.Equal(o.Aliases, wantAliases) {
		t.Errorf("default aliases %q, want %q", o.Aliases, wantAliases)
	}
	if o := capiOptions(loadTestConfig(t, "[capi_driver]\ndriver_aliases =\n").CAPIDriver, ""); len(o.Aliases) != 0 {
		t.Errorf("driver_aliases = (empty): %q, want none", o.Aliases)
	}
	k := keystoneOptions(cfg)
	if k.AuthURL != "https://keystone.example/v3" || k.Service.AuthURL != "http://keystone.internal:5000" ||
		k.Service.Username != "magnum" || k.Timeout != 30*time.Second {
		t.Fatalf("%+v", k)
	}
	cfg.KeystoneAuthtoken.WWWAuthenticateURI = ""
	if k := keystoneOptions(cfg); k.AuthURL != "http://keystone.internal:5000" {
		t.Fatalf("fallback to [keystone_auth]/auth_url: %q", k.AuthURL)
	}
}

// fakeManagementCluster answers every list with an empty list and holds
// watches open: enough for the driver's start (v1beta2 check, cache sync).
// While up is false it answers 503 to everything.
func fakeManagementCluster(t *testing.T, up *atomic.Bool) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "management cluster starting", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				// Watch-list: the (empty) initial state ends with this bookmark.
				parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/apis/"), "/")
				_, _ = io.WriteString(w, `{"type":"BOOKMARK","object":{"apiVersion":"`+parts[0]+"/"+parts[1]+
					`","kind":"Bookmark","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster: {server: \"" + srv.URL + "\"}\n" +
		"contexts:\n- name: m\n  context: {cluster: m, user: u}\ncurrent-context: m\nusers:\n- name: u\n  user: {token: t}\n"
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCAPIDriverReachableManagementClusterIsRegistered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var up atomic.Bool
	up.Store(true)
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+fakeManagementCluster(t, &up)+"\nstart_timeout = 20\n")
	logs := &harness.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	d, err := buildCAPIDriver(cfg, noEnv, nopCerts{}, log)
	if err != nil || d == nil {
		t.Fatalf("got %v, %v; want the driver\n%s", d, err, logs.String())
	}
	// A management cluster that answers at once is ready before the
	// conductor serves.
	drivers.StartRunners(ctx, []drivers.Driver{d}, 20*time.Second, log)
	if d.Name() != "k8s_capi_v1" || d.(drivers.Runner).Ready() != nil {
		t.Fatalf("driver %s ready %v, logs:\n%s", d.Name(), d.(drivers.Runner).Ready(), logs.String())
	}
}

// TestCAPIOptionsTheDriverDoesNotApplyAreWarnedAbout: options a magnum.conf
// may carry that this driver version does not apply are named in a
// warning at start, rather than silently ignored.
func TestCAPIOptionsTheDriverDoesNotApplyAreWarnedAbout(t *testing.T) {
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+unreachableKubeconfig(t)+"\nstart_timeout = 1\n"+
		"cluster_class_name = other\n")
	logs := &harness.SyncBuffer{}
	if _, err := buildCAPIDriver(cfg, noEnv, nopCerts{}, slog.New(slog.NewTextHandler(logs, nil))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster_class_name is ignored"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning %q in:\n%s", want, logs.String())
		}
	}
}

// [cinder]'s volume defaults and flavor_label_defaults become the driver's
// label defaults, the site's over Cinder's; the management options map.
func TestCAPISiteDefaultsMapping(t *testing.T) {
	cfg := loadTestConfig(t, `[capi_driver]
flavor_label_defaults = boot_volume_type:gold,http_proxy:http://proxy:3128
management_cidrs = 203.0.113.0/28,198.51.100.7/32
management_network_routed = true
min_flavor_vcpus = 4
[capi_helm]
minimum_flavor_ram = 4096
[cinder]
default_boot_volume_type = silver
default_boot_volume_size = 20
default_etcd_volume_type = fast
`)
	got := labelDefaults(cfg.Cinder, cfg.CAPIDriver.FlavorLabelDefaults)
	want := map[string]string{"boot_volume_type": "gold", "boot_volume_size": "20", "etcd_volume_type": "fast",
		"http_proxy": "http://proxy:3128"}
	if !maps.Equal(got, want) {
		t.Errorf("label defaults %v, want %v", got, want)
	}
	o := capiOptions(cfg.CAPIDriver, "")
	if !slices.Equal(o.ManagementCIDRs, []string{"203.0.113.0/28", "198.51.100.7/32"}) || !o.ManagementNetworkRouted ||
		o.MinFlavorRAMMiB != 4096 || o.MinFlavorVCPUs != 4 {
		t.Errorf("%+v", o)
	}
	o.LabelDefaults = got
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}
