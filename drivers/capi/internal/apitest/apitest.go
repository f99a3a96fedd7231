// Package apitest runs a real Kubernetes API server in-process for the capi
// driver's integration tests: embedded etcd plus the apiextensions API
// server, loaded with the Cluster API CRDs (from the Go module cache) and
// the CAPO CRDs (from drivers/capi/testdata). It serves custom resources
// only: no Namespaces or Secrets, and no controllers or webhooks.
//
// Start one Server per test binary (TestMain) and give each test its own
// namespace.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	servertesting "k8s.io/apiextensions-apiserver/pkg/cmd/server/testing"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// CAPIModule is the module whose zip holds the Cluster API CRD YAML.
const CAPIModule = "sigs.k8s.io/cluster-api"

// capiCRDs are the CRD files the driver needs, relative to the module root.
var capiCRDs = []string{
	"core/config/crd/bases/cluster.x-k8s.io_clusters.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_clusterclasses.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machinesets.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machines.yaml",
	"controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml",
	"controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates.yaml",
	"bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
}

// Server is a running API server.
type Server struct {
	Config *rest.Config
	stop   []func()
}

// Logger receives the server's progress lines.
type Logger func(format string, args ...any)

type tlog struct{ logf Logger }

func (l tlog) Errorf(f string, a ...any) { l.logf("ERROR "+f, a...) }
func (l tlog) Fatalf(f string, a ...any) { l.logf("FATAL "+f, a...) }
func (l tlog) Logf(f string, a ...any)   { l.logf(f, a...) }

// CAPIModuleDir downloads (if needed) the Cluster API module at version
// and returns its directory in the module cache. Only the Go module proxy
// is used; nothing is compiled and go.mod is not touched.
func CAPIModuleDir(ctx context.Context, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "capi-mod")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", CAPIModule+"@"+version)
	cmd.Dir = tmp // outside any module: go.mod and go.sum stay as they are
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("apitest: go mod download %s@%s: %w: %s%s", CAPIModule, version, err, stderr.String(), out.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return "", fmt.Errorf("apitest: go mod download output: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("apitest: go mod download %s@%s: %s", CAPIModule, version, info.Error)
	}
	return info.Dir, nil
}

// CAPIVersion is the version of sigs.k8s.io/cluster-api/api the main
// module requires (the CRDs must match the types).
func CAPIVersion(ctx context.Context, moduleDir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", CAPIModule+"/api")
	cmd.Dir = moduleDir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("apitest: go list -m %s/api: %w", CAPIModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs etcd and the API server and installs the CRD files (paths to
// YAML files, each holding one or more CRDs).
func Start(ctx context.Context, logf Logger, crdFiles []string) (*Server, error) {
	s := &Server{}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	dir, err := os.MkdirTemp("", "apitest-etcd")
	if err != nil {
		return nil, err
	}
	s.stop = append(s.stop, func() { os.RemoveAll(dir) })
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cport)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pport)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("apitest: start etcd: %w", err)
	}
	s.stop = append(s.stop, etcd.Close)
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return nil, errors.New("apitest: etcd did not become ready in 60 s")
	}

	kc, err := os.CreateTemp("", "apitest-kubeconfig")
	if err != nil {
		return nil, err
	}
	// Delegated authn/authz need a parseable kubeconfig; nothing calls it.
	_, _ = kc.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: 'http://127.1.2.3:12345'}\n  name: x\n" +
		"contexts:\n- context: {cluster: x, user: x}\n  name: x\ncurrent-context: x\nusers:\n- name: x\n  user: {username: x, password: x}\n")
	kc.Close()
	s.stop = append(s.stop, func() { os.Remove(kc.Name()) })
	ts, err := servertesting.StartTestServer(tlog{logf}, nil, []string{
		"--etcd-prefix", "/apitest",
		"--etcd-servers", cu.String(),
		"--authentication-skip-lookup",
		"--authentication-kubeconfig", kc.Name(),
		"--authorization-kubeconfig", kc.Name(),
		"--kubeconfig", kc.Name(),
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("apitest: start API server: %w", err)
	}
	// Stop the API server before etcd.
	s.stop = append(s.stop, ts.TearDownFn)
	s.Config = rest.CopyConfig(ts.ClientConfig)
	s.Config.QPS, s.Config.Burst = -1, -1
	if err := s.installCRDs(ctx, crdFiles); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// Stop tears everything down, newest first.
func (s *Server) Stop() {
	for i := len(s.stop) - 1; i >= 0; i-- {
		s.stop[i]()
	}
	s.stop = nil
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*apiextensionsv1.CustomResourceDefinition
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("apitest: %s: %w", path, err)
		}
		if crd.Name != "" {
			out = append(out, crd)
		}
	}
}

func (s *Server) installCRDs(ctx context.Context, files []string) error {
	cs, err := apiextclient.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		got, err := readCRDs(f)
		if err != nil {
			return err
		}
		crds = append(crds, got...)
	}
	for _, crd := range crds {
		// No conversion webhook runs here: serve the storage version only
		// (apiserver-testing.md gotcha 4).
		var keep []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				keep = append(keep, v)
			}
		}
		crd.Spec.Versions = keep
		crd.Spec.Conversion = nil
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apitest: create CRD %s: %w", crd.Name, err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, crd := range crds {
		for {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			established := false
			if err == nil {
				for _, c := range got.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						established = true
					}
				}
			}
			discovered := false
			if established {
				gv := crd.Spec.Group + "/" + crd.Spec.Versions[0].Name
				if rl, err := dc.ServerResourcesForGroupVersion(gv); err == nil {
					for _, r := range rl.APIResources {
						if r.Name == crd.Spec.Names.Plural {
							discovered = true
						}
					}
				}
			}
			if discovered {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("apitest: CRD %s not established and discoverable within 60 s", crd.Name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// CRDFiles lists the CRD files for the capi driver: the Cluster API ones
// from capiDir (see CAPIModuleDir) and every YAML under testdataDirs.
func CRDFiles(capiDir string, testdataDirs ...string) ([]string, error) {
	var out []string
	for _, f := range capiCRDs {
		p := filepath.Join(capiDir, f)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("apitest: CAPI CRD missing: %w", err)
		}
		out = append(out, p)
	}
	for _, d := range testdataDirs {
		m, err := filepath.Glob(filepath.Join(d, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("apitest: no CRDs under %s", d)
		}
		out = append(out, m...)
	}
	return out, nil
}
