// Command kubeapiserver runs a real, full kube-apiserver (core API, CRDs,
// aggregation; no controllers) on embedded etcd, for integration tests of
// magnum-conductor that need Namespaces and Secrets as well as custom
// resources. It lives in its own module so that k8s.io/kubernetes and the
// replace lines it needs stay out of magnum-conductor's go.mod; tests build
// it and run it as a process (drivers/capi/internal/apitest).
//
// It writes a kubeconfig for the server's privileged loopback identity
// (system:masters) to -kubeconfig, prints "ready <host>" on stdout, and runs
// until SIGTERM or SIGINT, or until its stdin closes (so a test that dies
// never leaves it running). Everything listens on 127.0.0.1, on free ports;
// etcd's data lives in a temporary directory, removed on exit.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

func main() {
	// Its own flag set: the libraries register theirs (klog's -v) globally.
	fs := flag.NewFlagSet("kubeapiserver", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "where to write the kubeconfig (required)")
	verbose := fs.Bool("verbose", false, "log the server's progress and klog output to stderr")
	_ = fs.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "kubeapiserver: -kubeconfig is required")
		os.Exit(2)
	}
	if !*verbose {
		// klog writes thousands of lines; nobody reads them. Errors would
		// still reach stderr (stderrthreshold), so raise that too.
		kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(kfs)
		_ = kfs.Set("logtostderr", "false")
		_ = kfs.Set("alsologtostderr", "false")
		_ = kfs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	tb := &tb{verbose: *verbose}
	err := run(tb, *kubeconfig)
	tb.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeapiserver:", err)
		os.Exit(1)
	}
}

func run(tb *tb, kubeconfig string) error {
	// Watch for the stop conditions from the start: a parent that dies
	// while the server starts must not leave it running. Its stdout pipe is
	// gone then too; writing "ready" must not kill this process before it
	// has cleaned up (SIGPIPE ignored: the write just fails).
	signal.Ignore(syscall.SIGPIPE)
	stop := make(chan string, 2)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { stop <- (<-sig).String() }()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- "stdin closed"
	}()

	dir, err := os.MkdirTemp("", "kubeapiserver-etcd")
	if err != nil {
		return err
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	etcdURL, err := startEtcd(tb, dir)
	if err != nil {
		return err
	}

	// The same storage config the Kubernetes integration tests use.
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	opts.DisableInvariantChecks = true // a metrics scrape at teardown: not wanted here
	srv, err := kubeapiservertesting.StartTestServer(tb, opts, nil, storage)
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	tb.Cleanup(srv.TearDownFn) // runs before etcd stops (cleanups run last first)

	if err := writeKubeconfig(kubeconfig, srv.ClientConfig); err != nil {
		return err
	}
	fmt.Printf("ready %s\n", srv.ClientConfig.Host)
	// Run until told to stop, or until the parent goes away.
	tb.Logf("stopping: %s", <-stop)
	return nil
}

// startEtcd starts a single-member etcd on free 127.0.0.1 ports with fsync
// off and returns its client URL.
func startEtcd(tb *tb, dir string) (string, error) {
	var urls [2]url.URL
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		urls[i] = url.URL{Scheme: "http", Host: l.Addr().String()}
		l.Close()
	}
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "data")
	cfg.UnsafeNoFsync = true
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = urls[:1], urls[:1]
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = urls[1:], urls[1:]
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if !tb.verbose {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", fmt.Errorf("start etcd: %w", err)
	}
	tb.Cleanup(etcd.Close)
	select {
	case <-etcd.Server.ReadyNotify():
		return urls[0].String(), nil
	case err := <-etcd.Err():
		return "", fmt.Errorf("etcd: %w", err)
	case <-time.After(60 * time.Second):
		return "", fmt.Errorf("etcd not ready within 60 s")
	}
}

// writeKubeconfig writes cfg (bearer token, loopback CA and server name) to
// path atomically: a reader sees no file or the whole file.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubeapiserver"] = &clientcmdapi.Cluster{Server: cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData, TLSServerName: cfg.TLSClientConfig.ServerName}
	kc.AuthInfos["loopback"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubeapiserver"] = &clientcmdapi.Context{Cluster: "kubeapiserver", AuthInfo: "loopback"}
	kc.CurrentContext = "kubeapiserver"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tb is the testing.TB that StartTestServer wants. The embedded interface
// is nil: the methods StartTestServer (and ktesting, which it uses) call
// are the ones below; any other would panic, which is a bug to fix here.
type tb struct {
	testing.TB
	verbose  bool
	cleanups []func()
	failed   bool
}

func (t *tb) Helper()      {}
func (t *tb) Name() string { return "kubeapiserver" }
func (t *tb) Failed() bool { return t.failed }

func (t *tb) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// cleanup runs the registered functions, last registered first.
func (t *tb) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

func (t *tb) Logf(format string, args ...any) {
	if t.verbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
func (t *tb) Log(args ...any) {
	if t.verbose {
		fmt.Fprintln(os.Stderr, args...)
	}
}

// Errors are always shown: they go to the test's output only if it fails.
func (t *tb) Errorf(format string, args ...any) {
	t.failed = true
	fmt.Fprintf(os.Stderr, "kubeapiserver: "+format+"\n", args...)
}
func (t *tb) Error(args ...any) {
	t.failed = true
	fmt.Fprintln(os.Stderr, append([]any{"kubeapiserver:"}, args...)...)
}

func (t *tb) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.cleanup()
	os.Exit(1)
}
func (t *tb) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }
