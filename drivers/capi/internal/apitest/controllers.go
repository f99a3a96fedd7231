package apitest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// managersModule builds the Cluster API managers, relative to the root of
// the magnum-conductor module. Its own module: Cluster API pins k8s.io/*
// and controller-runtime versions other than the product's.
const managersModule = "test/capimanagers"

// CAPITestModule is the module whose zip holds the Docker test provider's
// CRDs and webhook manifest (the in-memory provider's kinds).
const CAPITestModule = "sigs.k8s.io/cluster-api/test"

// inMemoryCRDs is the directory of the Docker test provider's CRDs (the
// in-memory provider's kinds among them) in CAPITestModule.
const inMemoryCRDs = "infrastructure/docker/config/crd/bases"

// FeatureGates are the Cluster API feature gates every manager runs with.
const FeatureGates = "ClusterTopology=true"

// A manager is one Cluster API controller manager the tests run.
type manager struct {
	name     string // binary, log file and webhook configuration prefix
	pkg      string // main package in managersModule
	module   string // CAPIModule, CAPITestModule or CAPOModule: where its manifests are
	crds     string // directory of its CRDs in that module
	webhooks string // its webhook manifest in that module
	gates    string // its --feature-gates, if any
	// contract is the Cluster API contract its CRDs implement (v1beta2
	// when empty).
	contract string
	// controllers whose workers must have started (see workersStarted)
	// before it counts as ready, besides its /readyz
	controllers []string
}

var managers = []manager{
	{name: "capi-kubeadm-bootstrap", pkg: "sigs.k8s.io/cluster-api/bootstrap/kubeadm", module: CAPIModule,
		crds: "bootstrap/kubeadm/config/crd/bases", webhooks: "bootstrap/kubeadm/config/webhook/manifests.yaml", gates: FeatureGates},
	{name: "capi-kubeadm-control-plane", pkg: "sigs.k8s.io/cluster-api/controlplane/kubeadm", module: CAPIModule,
		crds: "controlplane/kubeadm/config/crd/bases", webhooks: "controlplane/kubeadm/config/webhook/manifests.yaml", gates: FeatureGates},
	{name: "capi-inmemory", pkg: "./inmemory", module: CAPITestModule,
		crds: inMemoryCRDs, webhooks: "infrastructure/docker/config/webhook/manifests.yaml", gates: FeatureGates},
	// Last: the probes that tell when the API server calls the webhooks
	// use the core webhooks (see waitWebhooks).
	{name: "capi-core", pkg: "sigs.k8s.io/cluster-api/core", module: CAPIModule,
		crds: "core/config/crd/bases", webhooks: "core/config/webhook/manifests.yaml", gates: FeatureGates},
}

func managerTargets() []target {
	out := make([]target, 0, len(managers))
	for _, m := range managers {
		out = append(out, target{name: m.name, pkg: m.pkg})
	}
	return out
}

// BuildManagers compiles the Cluster API managers of test/capimanagers and
// returns the directory that holds them; see buildModule for the cache.
func BuildManagers(ctx context.Context, logf Logger) (string, error) {
	return buildModule(ctx, logf, managersModule, "capimanagers", managerTargets())
}

// Controllers are the real Cluster API controllers and webhooks (core with
// ClusterTopology, kubeadm bootstrap, kubeadm control plane, the in-memory
// infrastructure provider; CAPO with WithCAPO) and a garbage collector and
// namespace controller (kube-controller-manager), running against a
// Server.
type Controllers struct {
	dir      string // certificates and logs
	spawn    *spawner
	procs    []*proc
	dyn      dynamic.Interface
	webhooks []webhookConfig // registered, removed by stop
	ports    *os.File        // the lock on the in-memory provider's port block
}

// A ControllersOption adds to what StartControllers runs.
type ControllersOption func(*controllersConfig)

type controllersConfig struct {
	capo     bool
	capoArgs []string
}

// WithCAPO runs the real CAPO manager (CAPOVersion, built from
// test/capomanager by BuildCAPO) too, with its CRDs (CAPOCRDFiles, with
// CAPO's v1beta1 contract label), the ORC Image CRD it watches, and its
// validating webhooks; args are added to its command line (for instance
// --ca-certs=<file> for a Keystone with TLS, or -v=4). It reads each
// OpenStackCluster's cloud credentials from the Secret its identityRef
// names, and needs none of its own.
func WithCAPO(args ...string) ControllersOption {
	return func(c *controllersConfig) {
		c.capo = true
		c.capoArgs = append(c.capoArgs, args...)
	}
}

type webhookConfig struct {
	gvr  schema.GroupVersionResource
	name string
}

var (
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// StartWithControllers is StartWithCRDs followed by StartControllers: a
// test binary whose tests need the real controllers calls it once (from
// TestMain, or lazily from the first test that needs them) and stops the
// server with Stop, which stops the controllers too.
func StartWithControllers(ctx context.Context, verbose bool, opts ...ControllersOption) (*Server, error) {
	s, err := StartWithCRDs(ctx, verbose)
	if err != nil {
		return nil, err
	}
	if _, err := s.StartControllers(ctx, opts...); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// StartControllers builds (see BuildManagers; the first build takes
// minutes) and starts the Cluster API managers and the garbage collector
// against s, and the CAPO manager if asked (WithCAPO): every CRD they need
// is installed (with contract labels, storage versions only), each manager
// serves its admission webhooks on 127.0.0.1 with a self-signed
// certificate, and the webhooks are registered once every manager is
// ready. It returns once the API server calls the webhooks. Server.Stop
// stops them. Only one set per Server.
func (s *Server) StartControllers(ctx context.Context, opts ...ControllersOption) (*Controllers, error) {
	if s.controllers != nil {
		return nil, errors.New("apitest: controllers already started on this server")
	}
	var cfg controllersConfig
	for _, o := range opts {
		o(&cfg)
	}
	logf := s.logf
	begin := time.Now()
	version, err := moduleVersion(ctx, managersModule, CAPIModule)
	if err != nil {
		return nil, err
	}
	if s.capiVersion != "" && s.capiVersion != version {
		return nil, fmt.Errorf("apitest: %s builds Cluster API %s but the server's CRDs are from %s: keep them on one version", managersModule, version, s.capiVersion)
	}
	modDirs := map[string]string{}
	for _, mod := range []string{CAPIModule, CAPITestModule} {
		if modDirs[mod], err = ModuleDir(ctx, mod, version); err != nil {
			return nil, err
		}
	}
	binDir, err := BuildManagers(ctx, logf)
	if err != nil {
		return nil, err
	}
	run := managers
	binDirs := map[string]string{}
	for _, m := range managers {
		binDirs[m.name] = binDir
	}
	var extraCRDs []string
	if cfg.capo {
		if err := checkCAPOVersion(ctx); err != nil {
			return nil, err
		}
		if modDirs[CAPOModule], err = ModuleDir(ctx, CAPOModule, CAPOVersion); err != nil {
			return nil, err
		}
		if extraCRDs, err = orcCRDFiles(ctx); err != nil {
			return nil, err
		}
		if binDirs[binCAPO], err = BuildCAPO(ctx, logf); err != nil {
			return nil, err
		}
		// Before the core manager, which stays last (see managers).
		run = slices.Insert(slices.Clone(managers), len(managers)-1, capoManager)
	}
	kcmDir, err := Build(ctx, logf, binControllerManager)
	if err != nil {
		return nil, err
	}
	logf("apitest: controller binaries built (or found) in %s", time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	sets := []CRDSet{{Contract: NoContract, Files: extraCRDs}}
	nfiles := len(extraCRDs)
	for _, m := range run {
		files, err := filepath.Glob(filepath.Join(modDirs[m.module], m.crds, "*.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("apitest: no CRDs of %s under %s (%v)", m.name, m.crds, err) //nolint:errorlint // err may be nil (no files): text for the reader
		}
		contract := m.contract
		if contract == "" {
			contract = "v1beta2"
		}
		sets = append(sets, CRDSet{Contract: contract, Files: files})
		nfiles += len(files)
	}
	for _, set := range sets {
		if err := s.installCRDs(ctx, set); err != nil {
			return nil, err
		}
	}
	logf("apitest: %d controller CRD files installed in %s", nfiles, time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	c := &Controllers{spawn: newSpawner()}
	ok := false
	defer func() {
		if !ok {
			c.stop()
		}
	}()
	if c.dir, err = os.MkdirTemp("", "apitest-controllers-"); err != nil {
		return nil, err
	}
	if c.dyn, err = dynamic.NewForConfig(s.Config); err != nil {
		return nil, err
	}
	certDir := filepath.Join(c.dir, "webhook-certs")
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return nil, err
	}

	// The garbage collector: Cluster API's owner references cascade, and
	// a deleted namespace is emptied, as on a real management cluster.
	minPort, lock, err := lockPortBlock()
	if err != nil {
		return nil, err
	}
	c.ports = lock
	kcmPort := ownPort(minPort, 0)
	kcm, err := c.spawn.startProc(binControllerManager, filepath.Join(kcmDir, binControllerManager),
		filepath.Join(c.dir, binControllerManager+".log"), []string{
			"--kubeconfig=" + s.kubeconfig, "--controllers=garbagecollector,namespace", "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(kcmPort),
			"--cert-dir=" + filepath.Join(c.dir, "kcm-certs"),
		}, nil)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, kcm)
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // its own self-signed loopback certificate
	checks := map[*proc]func(context.Context) error{kcm: httpOK(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort))}

	webhookPorts := map[string]int{}
	plain := &http.Client{Timeout: 2 * time.Second}
	for mi, m := range run {
		ports := make([]int, 3) // webhook, health, diagnostics (or the in-memory provider's debug server)
		for i := range ports {
			ports[i] = ownPort(minPort, 1+3*mi+i)
		}
		webhookPorts[m.name] = ports[0]
		args := []string{
			"--webhook-port=" + strconv.Itoa(ports[0]), "--webhook-cert-dir=" + certDir,
			"--health-addr=" + fmt.Sprintf("127.0.0.1:%d", ports[1]),
		}
		if m.gates != "" {
			args = append(args, "--feature-gates="+m.gates)
		}
		if m.pkg == "./inmemory" {
			args = append(args, "--debug-port="+strconv.Itoa(ports[2]),
				"--workload-min-port="+strconv.Itoa(minPort), "--workload-max-port="+strconv.Itoa(minPort+portBlock-ownPorts-1))
		} else {
			args = append(args, "--leader-elect=false",
				"--diagnostics-address="+fmt.Sprintf("127.0.0.1:%d", ports[2]), "--insecure-diagnostics")
		}
		if m.name == binCAPO {
			args = append(args, cfg.capoArgs...)
		}
		p, err := c.spawn.startProc(m.name, filepath.Join(binDirs[m.name], m.name), filepath.Join(c.dir, m.name+".log"), args,
			[]string{"KUBECONFIG=" + s.kubeconfig, "POD_IP=127.0.0.1"})
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		checks[p] = httpOK(plain, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]))
		if len(m.controllers) > 0 {
			checks[p] = allOK(checks[p], workersStarted(p, m.controllers))
		}
	}
	readyCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, p := range c.procs {
		if err := p.waitReady(readyCtx, checks[p]); err != nil {
			return nil, err
		}
	}
	logf("apitest: controller managers ready in %s", time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	for _, m := range run {
		if err := c.registerWebhooks(ctx, m, filepath.Join(modDirs[m.module], m.webhooks), webhookPorts[m.name], caPEM); err != nil {
			return nil, err
		}
	}
	if err := c.waitWebhooks(readyCtx); err != nil {
		return nil, err
	}
	logf("apitest: %d webhook configurations registered and called in %s", len(c.webhooks), time.Since(begin).Round(time.Millisecond))
	ok = true
	s.controllers = c
	return c, nil
}

// registerWebhooks creates the webhook configurations of a manager's
// manifest, rewritten from a Service to url: https://127.0.0.1:<port>/<path>
// with the serving certificate's CA.
func (c *Controllers) registerWebhooks(ctx context.Context, m manager, manifest string, port int, caPEM []byte) error {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return fmt.Errorf("apitest: webhook manifest of %s: %w", m.name, err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		return fmt.Errorf("apitest: %s: %w", manifest, err)
	}
	ca := base64.StdEncoding.EncodeToString(caPEM)
	for _, obj := range objs {
		var gvr schema.GroupVersionResource
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			gvr = mutatingGVR
		case "ValidatingWebhookConfiguration":
			gvr = validatingGVR
		default:
			return fmt.Errorf("apitest: %s: unexpected %s", manifest, obj.GetKind())
		}
		obj.SetName(m.name + "-" + obj.GetName()) // upstream's names are the same in every provider
		hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil || len(hooks) == 0 {
			return fmt.Errorf("apitest: %s: %s has no webhooks (%v)", manifest, obj.GetName(), err) //nolint:errorlint // err may be nil (no webhooks): text for the reader
		}
		for i, h := range hooks {
			hook, _ := h.(map[string]any)
			path, found, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			if !found {
				return fmt.Errorf("apitest: %s: webhook %v has no service path", manifest, hook["name"])
			}
			hook["clientConfig"] = map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d%s", port, path), "caBundle": ca}
			hooks[i] = hook
		}
		if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
			return err
		}
		if _, err := c.dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("apitest: register %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		c.webhooks = append(c.webhooks, webhookConfig{gvr: gvr, name: obj.GetName()})
	}
	return nil
}

// waitWebhooks returns once the API server calls the core manager's
// mutating and validating webhooks (registered last: the API server's
// watch of each kind of configuration delivers them in order), probed with
// dry-run creates of a Machine.
func (c *Controllers) waitWebhooks(ctx context.Context) error {
	machines := c.dyn.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}).Namespace("default")
	probe := func(version string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
			"metadata": map[string]any{"name": "apitest-webhook-probe"},
			"spec": map[string]any{
				"clusterName": "apitest-probe", "version": version,
				"bootstrap":         map[string]any{"dataSecretName": "apitest-probe"},
				"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "apitest-probe"},
			},
		}}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	for {
		// Defaulting: the webhook labels a Machine with its Cluster.
		got, err := machines.Create(ctx, probe("v1.33.0"), dryRun)
		mutated := err == nil && got.GetLabels()["cluster.x-k8s.io/cluster-name"] == "apitest-probe"
		// Validation: only the webhook checks the version's syntax.
		_, err2 := machines.Create(ctx, probe("not-a-version"), dryRun)
		validated := err2 != nil && strings.Contains(err2.Error(), "must be a valid semantic version")
		if mutated && validated {
			return nil
		}
		last = fmt.Errorf("defaulted: %v (%v), validated: %v (%v)", mutated, err, validated, err2) //nolint:errorlint // either may be nil: text for the reader
		select {
		case <-ctx.Done():
			return fmt.Errorf("apitest: the API server does not call the webhooks: %w (%v)", ctx.Err(), last) //nolint:errorlint // only the context's error is the cause callers test; the last error is there for the reader
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop removes the webhook configurations (so that the server, if it keeps
// running, admits without them) and stops every process.
func (c *Controllers) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, w := range c.webhooks {
		if err := c.dyn.Resource(w.gvr).Delete(ctx, w.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			break // the server is gone or going: nothing to unregister from
		}
	}
	c.webhooks = nil
	// Managers first, the garbage collector (the first started) last.
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
	c.procs = nil
	c.spawn.close()
	if c.ports != nil {
		_ = c.ports.Close() // releases the port block (its flock); closing a lock file loses nothing
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir) // best effort: scratch files of stopped controllers
	}
}

// Log is the whole log of the controller named name (a binary's name:
// "capi-core", "capo-manager", ...).
func (c *Controllers) Log(name string) (string, error) {
	for _, p := range c.procs {
		if p.name == name {
			b, err := os.ReadFile(p.log)
			return string(b), err
		}
	}
	return "", fmt.Errorf("apitest: no controller %q", name)
}

// Logs is the end of every controller's log (for a failed test's output).
func (c *Controllers) Logs(perProcess int) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "=== %s (%s)\n%s\n", p.name, p.log, p.tail(perProcess))
	}
	return b.String()
}

func httpOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
		}
		return nil
	}
}

// allOK passes when every check passes, tried in order.
func allOK(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// workersStarted passes once p's log shows the workers of each of
// controllers started, which controller-runtime does only once the
// controller's caches have synced. A manager's /readyz tells only that its
// webhook server runs: one watching a kind that has no CRD is ready for
// the two minutes it waits for that cache, then exits.
func workersStarted(p *proc, controllers []string) func(context.Context) error {
	return func(context.Context) error {
		b, err := os.ReadFile(p.log)
		if err != nil {
			return err
		}
		for _, c := range controllers {
			if !bytes.Contains(b, []byte(`"Starting workers" controller="`+c+`"`)) {
				return fmt.Errorf("%s: the workers of controller %s have not started", p.name, c)
			}
		}
		return nil
	}
}

// ownPort is the i-th port of the managers' own listeners (webhooks,
// health, diagnostics; the garbage collector's): the top ownPorts of the
// run's locked block. A port picked free by a listen on :0 and closed
// again lies in the kernel's ephemeral range, where an outgoing connection
// of another test can take it before the manager binds it ("address
// already in use", seen in CI with two test binaries starting controllers
// at once); the locked block is below that range and no other run's.
func ownPort(minPort, i int) int {
	if i >= ownPorts {
		panic(fmt.Sprintf("apitest: own port %d of %d", i, ownPorts))
	}
	return minPort + portBlock - ownPorts + i
}

// The in-memory provider gives each workload cluster the next port of its
// range, without checking that it is free. Each running provider on the
// machine (another test binary, another checkout's tests) gets its own
// block of portBlock ports under the kernel's ephemeral range, held by a
// lock file while it runs.
const (
	portBlock     = 200
	portRangeLow  = 20000
	portRangeHigh = 32000 // below net.ipv4.ip_local_port_range's 32768
	// ownPorts of each block are the managers' own (ownPort: the
	// garbage collector's, and three for each of five managers with
	// CAPO); the in-memory provider's workload clusters get the rest.
	ownPorts = 16
)

func lockPortBlock() (int, *os.File, error) {
	dir := filepath.Join(os.TempDir(), "magnum-conductor-inmemory-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	n := (portRangeHigh - portRangeLow) / portBlock
	for _, i := range rand.Perm(n) {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(i)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return 0, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close() // another process holds this block: try the next
			continue
		}
		return portRangeLow + i*portBlock, f, nil
	}
	return 0, nil, fmt.Errorf("apitest: all %d in-memory provider port blocks under %s are taken", n, dir)
}

// decodeObjects parses a multi-document YAML or JSON stream.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// Controllers returns the controllers StartControllers started on s (nil
// if none).
func (s *Server) Controllers() *Controllers { return s.controllers }
