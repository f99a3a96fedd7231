// Command inmemory is Cluster API's in-memory infrastructure provider for
// magnum-conductor's tests: the DevCluster/DevMachine controllers and the
// webhooks of the Docker test provider (sigs.k8s.io/cluster-api/test/
// infrastructure/docker), whose backend.inMemory simulates VMs, nodes, etcd
// and a workload API server in process.
//
// Upstream's main of that provider listens on fixed ports (a debug server
// on :19000, workload API servers from :20000 up), so two of them cannot run
// on one machine, and it also runs the Docker controllers (which log that no
// Docker daemon answers). This main wires the same upstream controllers and
// webhooks, without the Docker controllers, and takes those ports as flags:
// every test binary runs its own provider beside the others'.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/test/infrastructure/container"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	"sigs.k8s.io/cluster-api/test/infrastructure/docker/controllers"
	infrawebhooks "sigs.k8s.io/cluster-api/test/infrastructure/docker/webhooks"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryserver "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server"
)

const controllerName = "magnum-conductor-test-inmemory-provider"

type options struct {
	webhookPort       int
	webhookCertDir    string
	healthAddr        string
	host              string // where the simulated workload API servers are reached
	minPort, maxPort  int32  // their ports
	debugPort         int32
	concurrency       int
	clusterCacheQPS   float32
	clusterCacheBurst int
}

func main() {
	var o options
	fs := pflag.NewFlagSet("inmemory", pflag.ExitOnError)
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "port of the webhook server")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "directory with tls.crt and tls.key for the webhook server (required)")
	fs.StringVar(&o.healthAddr, "health-addr", "127.0.0.1:9440", "address of /healthz and /readyz")
	fs.StringVar(&o.host, "workload-host", "127.0.0.1", "address the simulated workload API servers are reached at")
	fs.Int32Var(&o.minPort, "workload-min-port", inmemoryserver.DefaultMinPort, "first port for the simulated workload API servers")
	fs.Int32Var(&o.maxPort, "workload-max-port", inmemoryserver.DefaultMaxPort, "last port for the simulated workload API servers")
	fs.Int32Var(&o.debugPort, "debug-port", inmemoryserver.DefaultDebugPort, "port of the in-memory provider's debug server")
	fs.IntVar(&o.concurrency, "concurrency", 10, "workers per controller")
	fs.Float32Var(&o.clusterCacheQPS, "clustercache-client-qps", 20, "QPS of the clients to the workload clusters")
	fs.IntVar(&o.clusterCacheBurst, "clustercache-client-burst", 30, "burst of the clients to the workload clusters")
	feature.MutableGates.AddFlag(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])
	if o.webhookCertDir == "" {
		fmt.Fprintln(os.Stderr, "inmemory: --webhook-cert-dir is required")
		os.Exit(2)
	}
	ctrl.SetLogger(klog.Background())
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "inmemory provider stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		infrav1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	// The objects of the simulated clouds and workload clusters.
	cloudScheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{cloudv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme,
		rbacv1.AddToScheme, storagev1.AddToScheme, apiextensionsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(cloudScheme); err != nil {
			return err
		}
	}

	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = 100, 200
	restConfig.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)

	// As upstream: only Secrets of a Cluster are cached.
	req, err := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	syncPeriod := 10 * time.Minute
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		HealthProbeBindAddress: o.healthAddr,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		Cache: ctrlcache.Options{
			SyncPeriod: &syncPeriod,
			ByObject:   map[client.Object]ctrlcache.ByObject{&corev1.Secret{}: {Label: labels.NewSelector().Add(*req)}},
		},
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor:   []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}},
			Unstructured: true,
		}},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: o.webhookPort, CertDir: o.webhookCertDir}),
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}

	secretClient, err := client.New(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	if err != nil {
		return err
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Client: clustercache.ClientOptions{
			QPS: o.clusterCacheQPS, Burst: o.clusterCacheBurst,
			UserAgent: remote.DefaultClusterAPIUserAgent(controllerName),
			Cache:     clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}},
		},
	}, controller.Options{MaxConcurrentReconciles: o.concurrency})
	if err != nil {
		return fmt.Errorf("cluster cache: %w", err)
	}

	cloud := inmemoryruntime.NewManager(cloudScheme)
	if err := cloud.Start(ctx); err != nil {
		return fmt.Errorf("in-memory manager: %w", err)
	}
	mux, err := inmemoryserver.NewWorkloadClustersMux(cloud, o.host, inmemoryserver.CustomPorts{
		MinPort: o.minPort, MaxPort: o.maxPort, DebugPort: o.debugPort})
	if err != nil {
		return fmt.Errorf("workload clusters mux: %w", err)
	}
	// The Dev controllers take a container runtime for their Docker
	// backend; creating the client connects to nothing.
	runtimeClient, err := container.NewDockerClient()
	if err != nil {
		return err
	}
	opts := controller.Options{MaxConcurrentReconciles: o.concurrency}
	for name, r := range map[string]interface {
		SetupWithManager(context.Context, ctrl.Manager, controller.Options) error
	}{
		"DevCluster": &controllers.DevClusterReconciler{Client: mgr.GetClient(), ContainerRuntime: runtimeClient,
			InMemoryManager: cloud, APIServerMux: mux},
		"DevMachine": &controllers.DevMachineReconciler{Client: mgr.GetClient(), ContainerRuntime: runtimeClient,
			ClusterCache: clusterCache, InMemoryManager: cloud, APIServerMux: mux},
		"DevMachineTemplate": &controllers.DevMachineTemplateReconciler{Client: mgr.GetClient(), ContainerRuntime: runtimeClient},
	} {
		if err := r.SetupWithManager(ctx, mgr, opts); err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
	}
	// Every webhook of upstream's manifest, so that none of them points at
	// a path nobody serves.
	for name, w := range map[string]interface{ SetupWebhookWithManager(ctrl.Manager) error }{
		"DevCluster": &infrawebhooks.DevCluster{}, "DevClusterTemplate": &infrawebhooks.DevClusterTemplate{},
		"DevMachine": &infrawebhooks.DevMachine{}, "DevMachineTemplate": &infrawebhooks.DevMachineTemplate{},
		"DockerCluster": &infrawebhooks.DockerCluster{}, "DockerClusterTemplate": &infrawebhooks.DockerClusterTemplate{},
		"DockerMachine": &infrawebhooks.DockerMachine{}, "DockerMachineTemplate": &infrawebhooks.DockerMachineTemplate{},
	} {
		if err := w.SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("webhook %s: %w", name, err)
		}
	}
	klog.InfoS("starting the in-memory provider", "workload_ports", fmt.Sprintf("%d-%d", o.minPort, o.maxPort))
	return mgr.Start(ctx)
}
