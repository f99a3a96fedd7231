package capi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// Deps are the driver's collaborators.
type Deps struct {
	Dynamic     dynamic.Interface
	Core        Core
	Certs       CertSource
	Credentials CredentialIssuer
	// Mapper resolves the kinds of the ClusterClass bundles to resources
	// through discovery (NewForConfig sets one). Nil: the released bundles'
	// kinds, and the conventional plural of any other.
	Mapper meta.RESTMapper
	// Sweeper deletes, at a cluster's delete, the load balancers and
	// volumes its cloud controller manager and CSI plugin created; nil
	// disables it (NewForConfig sets cloudsweep's).
	Sweeper CloudSweeper
	// ServerGroups creates the Nova server groups of a cluster's machines
	// (classes with server groups, magnum-v3 on); nil places machines in
	// none (NewForConfig sets cloudsweep's). The sweep at delete removes
	// them.
	ServerGroups ServerGroupEnsurer
	// Flavors reads the flavors of autoscaled nodegroups for their
	// capacity annotations (scale from zero); nil: none (NewForConfig sets
	// cloudsweep's).
	Flavors FlavorLookup
	// Images reads the properties of the cluster's Glance images, checked
	// at create, upgrade and nodegroup create (cloudchecks.go); nil: not
	// checked (NewForConfig sets cloudsweep's).
	Images ImageLookup
	// Now defaults to time.Now.
	Now func() time.Time
}

// Driver is the Cluster API driver: a drivers.Driver, and a
// drivers.Runner (its informers), MonitorProvider, CredentialRotator,
// CARotator and MasterResizeValidator. It holds no database handle: every
// operation receives the cluster, its template and its nodegroups, and
// returns what changed (capi-driver.md; the drivers package documentation).
type Driver struct {
	drivers.Unimplemented
	opts Options
	// classes are the ClusterClass bundles the driver applies.
	classes classSet
	// flavors caches the flavors of capacity annotations and of the
	// minimum sizes, images the images checkImage looks up.
	flavors *ttlCache[flavorKey, cloudsweep.Flavor]
	images  *ttlCache[flavorKey, cloudsweep.Image]
	deps    Deps
	log     *slog.Logger
	now     func() time.Time
	// cache is replaced by a new one when the management cluster answers
	// again after it was lost (see watchManagement).
	cache atomic.Pointer[stateCache]

	startMu          sync.Mutex
	informersStarted bool
	ready            atomic.Bool
	notReady         atomic.Pointer[string] // why the last start attempt failed

	// lost is set while the management cluster does not answer after the
	// driver started; probeKick asks watchManagement for a probe now.
	lost      atomic.Pointer[lostState]
	probeKick chan struct{}

	// written holds, per Cluster ("namespace/name"), the generation our last
	// apply produced, until the informer cache has caught up with it.
	written writtenGenerations

	// deleteRequested holds, per Cluster, when this driver last asked for
	// its deletion; the annotationDeleteRequested it also writes reaches
	// the informer cache (and other conductors) a little later.
	deleteMu        sync.Mutex
	deleteRequested map[string]time.Time

	// charts caches the add-ons' Helm charts (nil without add-ons).
	charts *addons.Charts
	// addOnsWritten holds, per Cluster, the generation of the add-ons'
	// ClusterResourceSet our last apply produced, until the informer cache
	// has it: a set cached from before it would judge the add-ons of the
	// previous rendering.
	addOnsWritten writtenGenerations

	// guard makes Observe's writes (sizeAutoscaled, cleanup) happen once
	// for concurrent observations of a cluster.
	guard writeGuard

	// notManagedSeen holds the uuids of the clusters this driver was asked
	// about and does not manage (foreign.go), each logged once.
	notManagedSeen sync.Map
}

var (
	_ drivers.Driver                = (*Driver)(nil)
	_ drivers.Runner                = (*Driver)(nil)
	_ drivers.MonitorProvider       = (*Driver)(nil)
	_ drivers.CredentialRotator     = (*Driver)(nil)
	_ drivers.CARotator             = (*Driver)(nil)
	_ drivers.MasterResizeValidator = (*Driver)(nil)
	_ drivers.SettledObserver       = (*Driver)(nil)
	_ drivers.Admitter              = (*Driver)(nil)
	_ drivers.Aliased               = (*Driver)(nil)
)

// RESTConfig loads the management cluster configuration: the kubeconfig at
// opts.Kubeconfig, or in-cluster when it is empty.
func RESTConfig(opts Options) (*rest.Config, error) {
	if opts.Kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("capi: in-cluster config: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: opts.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("capi: kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	return cfg, nil
}

// NewForConfig builds the dynamic and core clients from cfg and calls New.
func NewForConfig(cfg *rest.Config, opts Options, certs CertSource, creds CredentialIssuer, log *slog.Logger) (*Driver, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sweeper := cloudsweep.New(cloudRequestTimeout)
	return New(opts, Deps{Dynamic: dyn, Core: NewCore(dyn), Certs: certs, Credentials: creds,
		Sweeper: sweeper, ServerGroups: sweeper, Flavors: sweeper, Images: sweeper, Mapper: mapper}, log)
}

// New returns the driver. Call Start before serving requests.
func New(opts Options, deps Deps, log *slog.Logger) (*Driver, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if deps.Dynamic == nil || deps.Core == nil || deps.Certs == nil || deps.Credentials == nil {
		return nil, errors.New("capi: Dynamic, Core, Certs and Credentials are required")
	}
	if log == nil {
		return nil, errors.New("capi: a logger is required")
	}
	opts = opts.withDefaults()
	classes, err := loadClasses(opts.ClassDir)
	if err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	d := &Driver{opts: opts, classes: classes, deps: deps, log: log.With("driver", DriverName), now: now, probeKick: make(chan struct{}, 1),
		flavors: newTTLCache[flavorKey, cloudsweep.Flavor](flavorTTL, cacheEntries),
		images:  newTTLCache[flavorKey, cloudsweep.Image](imageTTL, cacheEntries)}
	if opts.AddOns.Enabled {
		d.charts = addons.NewCharts(opts.AddOns.CacheDir, nil)
	}
	c, err := newStateCache(deps.Dynamic, opts.ResyncPeriod, d.kickProbe, opts.AddOns.Enabled, d.infraConfig())
	if err != nil {
		return nil, err
	}
	d.cache.Store(c)
	return d, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return DriverName }

// Aliases implements drivers.Aliased: the other drivers' names whose
// templates this driver serves. Their clusters are refused until adopted
// (foreign.go); new clusters from their templates are this driver's.
func (d *Driver) Aliases() []string { return slices.Clone(d.opts.Aliases) }

// Provides implements drivers.Driver.
func (d *Driver) Provides() []drivers.Key {
	var keys []drivers.Key
	for _, os := range d.opts.OSDistros {
		keys = append(keys, drivers.Key{ServerType: "vm", OS: os, COE: "kubernetes"})
	}
	return keys
}

func (d *Driver) logAttrs(ctx context.Context, c *objects.Cluster) []any {
	return append(request.From(ctx).LogAttrs(), "cluster_uuid", deref(c.UUID))
}
