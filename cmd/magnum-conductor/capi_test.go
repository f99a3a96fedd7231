package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
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

type nopStore struct{}

func (nopStore) GetClusterTemplateByUUID(context.Context, string) (*objects.ClusterTemplate, error) {
	return nil, errors.New("unused")
}
func (nopStore) ListNodeGroups(context.Context, string, db.ListOpts, db.NodeGroupFilters) ([]*objects.NodeGroup, error) {
	return nil, errors.New("unused")
}
func (nopStore) SaveNodeGroup(context.Context, *objects.NodeGroup) error { return errors.New("unused") }

func noEnv(string) string { return "" }

func TestCAPIDriverNotConfiguredIsNil(t *testing.T) {
	var logs bytes.Buffer
	d, err := buildCAPIDriver(context.Background(), loadTestConfig(t, "[DEFAULT]\n"), noEnv, nopCerts{}, nopStore{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || d != nil {
		t.Fatalf("got %v, %v; want nil, nil", d, err)
	}
	if !strings.Contains(logs.String(), "not configured") {
		t.Fatalf("no log line saying why:\n%s", logs.String())
	}
}

func TestCAPIDriverUnreachableManagementClusterIsSkipped(t *testing.T) {
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+unreachableKubeconfig(t)+"\nstart_timeout = 5\n")
	var logs bytes.Buffer
	start := time.Now()
	d, err := buildCAPIDriver(context.Background(), cfg, noEnv, nopCerts{}, nopStore{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || d != nil {
		t.Fatalf("got %v, %v; want the driver skipped without an error", d, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("start not bounded: %v", time.Since(start))
	}
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "NOT registered") || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("no clear error line:\n%s", out)
	}
	if strings.Contains(out, "kube-token-5ecret") {
		t.Fatal("kubeconfig token logged")
	}
}

func TestCAPIDriverConfigurationErrorsStopTheConductor(t *testing.T) {
	for name, ini := range map[string]string{
		"missing kubeconfig":    "[capi_driver]\nkubeconfig = /nonexistent/kubeconfig\n",
		"missing cloud CA file": "[capi_driver]\nkubeconfig = KC\ncloud_ca_file = /nonexistent/ca.pem\n",
		"bad namespace prefix":  "[capi_driver]\nkubeconfig = KC\nnamespace_prefix = Not_A_Label-\n",
		"unknown class version": "[capi_driver]\nkubeconfig = KC\ncluster_class_version = v999\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadTestConfig(t, strings.ReplaceAll(ini, "KC", unreachableKubeconfig(t)))
			d, err := buildCAPIDriver(context.Background(), cfg, noEnv, nopCerts{}, nopStore{}, slog.New(slog.DiscardHandler))
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
cloud_region = RegionTwo
cloud_interface = internal
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
		o.ResyncPeriod != 2*time.Minute || o.CloudRegion != "RegionTwo" || o.CloudInterface != "internal" || o.CloudCACert != "PEM" {
		t.Fatalf("%+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
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

type blockingStarter struct{ stopped chan struct{} }

func (b blockingStarter) Start(ctx context.Context) error {
	<-ctx.Done()
	close(b.stopped)
	return ctx.Err()
}

func TestStartCAPIDriverGivesUpAndStopsTheInformers(t *testing.T) {
	b := blockingStarter{stopped: make(chan struct{})}
	err := startCAPIDriver(context.Background(), b, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("got %v", err)
	}
	select {
	case <-b.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the start context was not cancelled")
	}
}

// fakeManagementCluster answers every list with an empty list and holds
// watches open: enough for the driver's start (v1beta2 check, cache sync).
func fakeManagementCluster(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	cfg := loadTestConfig(t, "[capi_driver]\nkubeconfig = "+fakeManagementCluster(t)+"\nstart_timeout = 20\n")
	var logs bytes.Buffer
	d, err := buildCAPIDriver(ctx, cfg, noEnv, nopCerts{}, nopStore{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || d == nil {
		t.Fatalf("got %v, %v; want the driver\n%s", d, err, logs.String())
	}
	if d.Name() != "k8s_capi_v1" || !strings.Contains(logs.String(), "Cluster API driver started") {
		t.Fatalf("driver %s, logs:\n%s", d.Name(), logs.String())
	}
}
