// Package apitest runs a real Kubernetes API server for the capi driver's
// integration tests: the full kube-apiserver (core API: Namespaces,
// Secrets; CRDs; no controllers, no webhooks) on embedded etcd, built from
// the separate module test/kubeapiserver and run as a process, loaded with
// the CRDs of Cluster API, of its in-memory test provider and of Cluster API
// Provider OpenStack (CAPOVersion), all from the Go module cache.
//
// The server is a separate module and process because k8s.io/kubernetes
// needs a replace line per staging module; those stay out of
// magnum-conductor's go.mod. The binary is built once into a stable path
// under os.TempDir(), so later runs find it up to date and neither
// recompile nor relink.
//
// Start one Server per test binary (TestMain) and give each test its own
// namespace.
package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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
	"core/config/crd/bases/addons.cluster.x-k8s.io_clusterresourcesets.yaml",
	"core/config/crd/bases/addons.cluster.x-k8s.io_clusterresourcesetbindings.yaml",
	"controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml",
	"controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates.yaml",
	"bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
}

// Server is a running API server.
type Server struct {
	Config *rest.Config

	logf        Logger
	kubeconfig  string       // the server's kubeconfig (system:masters)
	capiVersion string       // of the Cluster API CRDs installed by StartWithCRDs
	controllers *Controllers // started by StartControllers, stopped by Stop
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	exited      chan struct{} // closed once cmd has been waited for
	dir         string        // kubeconfig and the server's TMPDIR
	stderr      *os.File
}

// Logger receives progress lines (build and start times).
type Logger func(format string, args ...any)

// CAPIModuleDir downloads (if needed) the Cluster API module at version
// and returns its directory in the module cache.
func CAPIModuleDir(ctx context.Context, version string) (string, error) {
	return ModuleDir(ctx, CAPIModule, version)
}

// ModuleDir downloads (if needed) module at version and returns its
// directory in the module cache. Only the Go module proxy is used; nothing
// is compiled and no go.mod is touched.
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "capi-mod")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = tmp // outside any module: go.mod and go.sum stay as they are
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("apitest: go mod download %s@%s: %w: %s%s", module, version, err, stderr.String(), out.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return "", fmt.Errorf("apitest: go mod download output: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("apitest: go mod download %s@%s: %s", module, version, info.Error)
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

// StartWithCRDs is what a test binary's TestMain runs: it finds the
// Cluster API version the main module requires, and starts the server
// with, from the module cache, the Cluster API CRDs the driver uses and
// every CRD of the in-memory test provider (DevCluster, DevMachine and
// their templates: the in-memory variants of the class bundles) at that
// version, which implement Cluster API's v1beta2 contract, and Cluster API
// Provider OpenStack's (CAPOCRDFiles), which implement its v1beta1
// contract. Progress is logged to stderr when verbose.
func StartWithCRDs(ctx context.Context, verbose bool) (*Server, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	version, err := CAPIVersion(ctx, wd)
	if err != nil {
		return nil, err
	}
	dir, err := CAPIModuleDir(ctx, version)
	if err != nil {
		return nil, err
	}
	testDir, err := ModuleDir(ctx, CAPITestModule, version)
	if err != nil {
		return nil, err
	}
	files, err := CRDFiles(dir, filepath.Join(testDir, inMemoryCRDs))
	if err != nil {
		return nil, err
	}
	capo, err := CAPOCRDFiles(ctx)
	if err != nil {
		return nil, err
	}
	logf := func(string, ...any) {}
	if verbose {
		logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	s, err := Start(ctx, logf, CRDSet{Contract: "v1beta2", Files: files}, CRDSet{Contract: CAPOContract, Files: capo})
	if err != nil {
		return nil, err
	}
	s.capiVersion = version
	return s, nil
}

// serverModule is the test server's module, relative to the root of the
// magnum-conductor module. It also builds the garbage collector
// (kube-controller-manager) that StartControllers runs.
const serverModule = "test/kubeapiserver"

// Names of the binaries built from serverModule.
const (
	binAPIServer         = "kubeapiserver"
	binControllerManager = "kube-controller-manager"
)

// serverTargets are the binaries of serverModule, linked with the
// Kubernetes version the module requires.
func serverTargets(ctx context.Context) ([]target, error) {
	version, err := moduleVersion(ctx, serverModule, "k8s.io/kubernetes")
	if err != nil {
		return nil, err
	}
	ldflags, err := versionLDFlags(version)
	if err != nil {
		return nil, err
	}
	return []target{
		{name: binAPIServer, pkg: ".", ldflags: ldflags},
		{name: binControllerManager, pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", ldflags: ldflags},
	}, nil
}

// Build compiles the binaries of test/kubeapiserver named in need (all when
// none is named) and returns the directory that holds them; see
// buildModule for the cache.
func Build(ctx context.Context, logf Logger, need ...string) (string, error) {
	targets, err := serverTargets(ctx)
	if err != nil {
		return "", err
	}
	return buildModule(ctx, logf, serverModule, "kubeapiserver", targets, need...)
}

// NoContract is the Contract of CRDs that are no Cluster API provider's
// (ORC's): they get no contract label.
const NoContract = "-"

// CRDSet is CRD files (paths to YAML files, each holding one or more CRDs)
// of providers that implement one version of Cluster API's provider
// contract (v1beta2: Cluster API's own and its test provider's; v1beta1:
// CAPO v0.14's).
type CRDSet struct {
	Contract string
	Files    []string
}

// Start builds and starts the API server, waits for its kubeconfig and
// installs the CRDs. Stop it with Stop. The server's own output (klog is
// silenced; it holds errors only) is kept for Output.
func Start(ctx context.Context, logf Logger, crds ...CRDSet) (*Server, error) {
	begin := time.Now()
	dir, err := Build(ctx, logf, binAPIServer)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, binAPIServer)
	logf("apitest: test server built (or found up to date) in %s", time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	s := &Server{exited: make(chan struct{}), logf: logf}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "apitest-"); err != nil {
		return nil, err
	}
	if s.stderr, err = os.Create(filepath.Join(s.dir, "server.log")); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(s.dir, "kubeconfig")
	s.kubeconfig = kubeconfig
	tmp := filepath.Join(s.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "-kubeconfig", kubeconfig)
	// Its etcd data and certificates go under s.dir, removed by Stop even
	// if the process has to be killed.
	s.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// Its own process group: Stop signals the server and nothing else.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// The server exits when its stdin closes: if this process dies, the
	// kernel closes the pipe and the server does not outlive it.
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("apitest: start %s: %w", bin, err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ready ") {
				ready <- line
			}
		}
	}()
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
	case <-s.exited:
		return nil, fmt.Errorf("apitest: test server exited: %s\n%s", s.cmd.ProcessState, s.Output())
	case <-ctx.Done():
		return nil, fmt.Errorf("apitest: test server not ready: %w\n%s", ctx.Err(), s.Output())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("apitest: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, -1 // no client-side throttling
	s.Config = cfg
	logf("apitest: kube-apiserver ready at %s in %s", cfg.Host, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	files := 0
	for _, set := range crds {
		if err := s.installCRDs(ctx, set); err != nil {
			return nil, err
		}
		files += len(set.Files)
	}
	logf("apitest: %d CRD files installed in %s", files, time.Since(begin).Round(time.Millisecond))
	ok = true
	return s, nil
}

// Output is what the server wrote to stderr so far (errors only, unless
// something went wrong at start).
func (s *Server) Output() string {
	if s.stderr == nil {
		return ""
	}
	b, _ := os.ReadFile(s.stderr.Name())
	return string(b)
}

// Stop stops the controllers (if started), asks the server to stop (stdin
// closed, SIGTERM), kills its process group if it has not exited within
// 10 s, and removes its files.
func (s *Server) Stop() {
	if s.controllers != nil {
		s.controllers.stop()
		s.controllers = nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.stdin.Close()
		pgid := s.cmd.Process.Pid // Setpgid: the group id is the pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
		// Anything left in the group (nothing, normally) is killed.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
		s.cmd = nil
	}
	if s.stderr != nil {
		_ = s.stderr.Close() // the server is gone: nothing more to log
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir) // best effort: scratch files of a stopped server
		s.dir = ""
	}
}

// ContractLabel is the label by which Cluster API finds the versions of a
// provider's CRD that implement a version of its contract (v1beta2,
// v1beta1): cluster.x-k8s.io/<contract>: <versions>. Providers' own
// kustomizations add it (CAPO's: cluster.x-k8s.io/v1beta1: v1beta1), as
// clusterctl does from their metadata.
func ContractLabel(contract string) string { return "cluster.x-k8s.io/" + contract }

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

// installCRDs creates the CRDs of set, each labelled with the contract its
// provider implements.
func (s *Server) installCRDs(ctx context.Context, set CRDSet) error {
	if set.Contract == "" {
		return errors.New("apitest: CRDs without the contract version their provider implements (NoContract: none)")
	}
	cs, err := apiextclient.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range set.Files {
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
		// As clusterctl installs them: the served (storage) version
		// implements the contract.
		names := make([]string, 0, len(keep))
		for _, v := range keep {
			names = append(names, v.Name)
		}
		if set.Contract != NoContract {
			labels := crd.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[ContractLabel(set.Contract)] = strings.Join(names, "_")
			crd.SetLabels(labels)
		}
		_, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Installed before (StartControllers installs what Start did):
			// the same versions, or two sets of CRDs of one kind collide.
			got, gerr := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("apitest: CRD %s: %w", crd.Name, gerr)
			}
			var have []string
			for _, v := range got.Spec.Versions {
				have = append(have, v.Name)
			}
			if !slices.Equal(have, names) {
				return fmt.Errorf("apitest: CRD %s is installed with versions %v, not %v: two sets of CRDs of one kind on one server", crd.Name, have, names)
			}
			err = nil
		}
		if err != nil {
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
// from capiDir (see CAPIModuleDir) and every YAML under dirs.
func CRDFiles(capiDir string, dirs ...string) ([]string, error) {
	var out []string
	for _, f := range capiCRDs {
		p := filepath.Join(capiDir, f)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("apitest: CAPI CRD missing: %w", err)
		}
		out = append(out, p)
	}
	for _, d := range dirs {
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
