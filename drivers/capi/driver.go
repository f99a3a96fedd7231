package capi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
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
	// flavors caches the flavors of capacity annotations.
	flavors flavorCache
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
	writtenMu sync.Mutex
	written   map[string]int64

	// deleteRequested holds, per Cluster, when this driver last asked for
	// its deletion; the annotationDeleteRequested it also writes reaches
	// the informer cache (and other conductors) a little later.
	deleteMu        sync.Mutex
	deleteRequested map[string]time.Time

	// charts caches the add-ons' Helm charts (nil without add-ons);
	// addOnsWritten (under writtenMu) is noteAddOnsWritten's record.
	charts        *addons.Charts
	addOnsWritten map[string]int64

	// guard makes Observe's writes (sizeAutoscaled, cleanup) happen once
	// for concurrent observations of a cluster.
	guard writeGuard
}

// deleteStart is when the current attempt to delete the Cluster r began:
// the latest of its deletionTimestamp, the delete-requested annotation and
// this driver's own record. A delete retried after DELETE_FAILED gets a
// new delete_timeout from it.
func (d *Driver) deleteStart(r ref, cl *clusterv1.Cluster) time.Time {
	start := cl.DeletionTimestamp.Time
	if t, err := time.Parse(time.RFC3339, cl.Annotations[annotationDeleteRequested]); err == nil && t.After(start) {
		start = t
	}
	d.deleteMu.Lock()
	defer d.deleteMu.Unlock()
	if t, ok := d.deleteRequested[r.Namespace+"/"+r.Name]; ok && t.After(start) {
		start = t
	}
	return start
}

func (d *Driver) noteDeleteRequested(r ref, at time.Time) {
	d.deleteMu.Lock()
	defer d.deleteMu.Unlock()
	if at.IsZero() {
		delete(d.deleteRequested, r.Namespace+"/"+r.Name)
		return
	}
	if d.deleteRequested == nil {
		d.deleteRequested = map[string]time.Time{}
	}
	d.deleteRequested[r.Namespace+"/"+r.Name] = at
}

// noteWritten records the generation an apply of the Cluster r produced.
func (d *Driver) noteWritten(r ref, generation int64) {
	d.writtenMu.Lock()
	defer d.writtenMu.Unlock()
	if d.written == nil {
		d.written = map[string]int64{}
	}
	d.written[r.Namespace+"/"+r.Name] = generation
}

// cacheBehind reports whether the cached Cluster r (at generation, 0 when
// absent) is older than what this driver last wrote: its status then still
// describes the spec before our change, and judging an upgrade or a resize
// by it would call it complete before Cluster API has seen it. Once the
// cache has caught up the record is dropped.
func (d *Driver) cacheBehind(r ref, generation int64) bool {
	d.writtenMu.Lock()
	defer d.writtenMu.Unlock()
	key := r.Namespace + "/" + r.Name
	want, ok := d.written[key]
	if !ok {
		return false
	}
	if generation >= want {
		delete(d.written, key)
		return false
	}
	return true
}

var (
	_ drivers.Driver                = (*Driver)(nil)
	_ drivers.Runner                = (*Driver)(nil)
	_ drivers.MonitorProvider       = (*Driver)(nil)
	_ drivers.CredentialRotator     = (*Driver)(nil)
	_ drivers.CARotator             = (*Driver)(nil)
	_ drivers.MasterResizeValidator = (*Driver)(nil)
	_ drivers.SettledObserver       = (*Driver)(nil)
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
		Sweeper: sweeper, ServerGroups: sweeper, Flavors: sweeper, Mapper: mapper}, log)
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
	d := &Driver{opts: opts, classes: classes, deps: deps, log: log.With("driver", DriverName), now: now, probeKick: make(chan struct{}, 1)}
	if opts.AddOns.Enabled {
		d.charts = addons.NewCharts(opts.AddOns.CacheDir, nil)
	}
	c, err := newStateCache(deps.Dynamic, opts.ResyncPeriod, d.kickProbe, opts.AddOns.Enabled)
	if err != nil {
		return nil, err
	}
	d.cache.Store(c)
	return d, nil
}

// Start makes one start attempt bounded by ctx: it checks that the
// management cluster serves cluster.x-k8s.io/v1beta2, starts the informers
// (they then live as long as ctx) and waits for them to sync.
func (d *Driver) Start(ctx context.Context) error { return d.start(ctx, ctx) }

// Run implements drivers.Runner: the start attempts of startRetrying
// (bounded by Options.Start), each failure logged, then the informers
// until ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	run := d.opts.Start
	err := d.startRetrying(ctx, run.AttemptTimeout, run.RetryMin, run.RetryMax, func(attempt int, err error, retryIn time.Duration) {
		d.log.Error("Cluster API management cluster not usable; the driver is registered but refuses every "+
			"operation (its clusters' status stays unchanged) until it answers; retrying",
			"attempt", attempt, "retry_in", retryIn.String(), "attempt_timeout", run.AttemptTimeout.String(), "error", err)
	})
	if err != nil {
		return err
	}
	d.log.Info("Cluster API driver started")
	<-ctx.Done()
	return ctx.Err()
}

// startRetrying starts the driver and keeps trying until it has started or
// ctx ends: each attempt is bounded by attemptTimeout, and a failed one is
// retried after a pause that doubles from retryMin up to retryMax. The
// informers, once started, live as long as ctx and retry their own lists
// and watches. onFail, when not nil, hears about every failed attempt. It
// returns nil once the driver is ready, or ctx's error.
func (d *Driver) startRetrying(ctx context.Context, attemptTimeout, retryMin, retryMax time.Duration, onFail func(attempt int, err error, retryIn time.Duration)) error {
	pause := retryMin
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := d.start(ctx, actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if onFail != nil {
			onFail(attempt, err, pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// start is one attempt: run bounds the informers' life, attempt this try.
func (d *Driver) start(run, attempt context.Context) error {
	d.startMu.Lock()
	defer d.startMu.Unlock()
	if d.ready.Load() {
		return nil
	}
	fail := func(err error) error {
		msg := err.Error()
		d.notReady.Store(&msg)
		return err
	}
	if _, err := d.deps.Dynamic.Resource(gvrCluster).List(attempt, metav1.ListOptions{Limit: 1}); err != nil {
		return fail(fmt.Errorf("capi: the management cluster does not serve %s: %w", gvrCluster.GroupVersion(), err))
	}
	if !d.informersStarted {
		ctx, cancel := context.WithCancel(run)
		d.cache.Load().start(ctx, cancel)
		d.informersStarted = true
	}
	if err := d.cache.Load().waitForSync(attempt); err != nil {
		return fail(err)
	}
	d.ready.Store(true)
	d.notReady.Store(nil)
	go d.watchManagement(run)
	return nil
}

// Ready implements drivers.Runner: nil once the driver has started, else
// why not (wrapping drivers.ErrNotReady).
func (d *Driver) Ready() error { return d.usable() }

// usable is the guard at the top of every operation that needs the
// management cluster: until the driver has started it returns an error
// wrapping drivers.ErrNotReady, with the last start failure.
func (d *Driver) usable() error {
	if d.ready.Load() {
		return nil
	}
	why := "starting"
	if w := d.notReady.Load(); w != nil {
		why = *w
	}
	return fmt.Errorf("capi: the Cluster API management cluster is not usable yet (%s): %w", why, drivers.ErrNotReady)
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return DriverName }

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

// ref is a CAPI cluster's namespace and name, from stack_id.
type ref struct{ Namespace, Name string }

func (r ref) String() string { return r.Namespace + "/" + r.Name }

func refOf(c *objects.Cluster) (ref, bool) {
	ns, name, ok := strings.Cut(deref(c.StackID), "/")
	if !ok || ns == "" || name == "" {
		return ref{}, false
	}
	return ref{ns, name}, true
}

// requestTemplate is the request's cluster template.
func requestTemplate(req drivers.ClusterRequest) (*objects.ClusterTemplate, error) {
	if req.Template == nil {
		return nil, fmt.Errorf("capi: the request for cluster %s carries no cluster template", deref(req.Cluster.UUID))
	}
	return req.Template, nil
}

// nodeGroups are the request's nodegroups, with the given ones (the
// operation's own, as the caller passed it) replacing theirs.
func nodeGroups(req drivers.ClusterRequest, override ...*objects.NodeGroup) []*objects.NodeGroup {
	ngs := slices.Clone(req.NodeGroups)
	for _, o := range override {
		if o == nil {
			continue
		}
		i := slices.IndexFunc(ngs, func(n *objects.NodeGroup) bool { return n.UUID == o.UUID })
		if i >= 0 {
			ngs[i] = o
		} else {
			ngs = append(ngs, o)
		}
	}
	return ngs
}

func mergedLabels(c *objects.Cluster, t *objects.ClusterTemplate) map[string]string {
	out := map[string]string{}
	if t != nil {
		for k, v := range t.Labels {
			out[k] = v
		}
	}
	for k, v := range c.Labels {
		out[k] = v
	}
	return out
}

func credentialSecretName(name string) string { return name + "-cloud-credentials" }

// liveCluster reads the Cluster from the API server (for writes that must
// not act on a stale cache).
func (d *Driver) liveCluster(ctx context.Context, r ref) (*clusterv1.Cluster, error) {
	u, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cl := &clusterv1.Cluster{}
	if err := fromUnstructured(u.Object, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

func variableString(cl *clusterv1.Cluster, name string) string {
	if cl == nil {
		return ""
	}
	for _, v := range cl.Spec.Topology.Variables {
		if v.Name == name {
			var s string
			_ = jsonUnmarshal(v.Value.Raw, &s)
			return s
		}
	}
	return ""
}

// applyOptions carries what an operation changes beyond the Magnum objects.
type applyOptions struct {
	classVersion string
	identityRef  string
	annotations  map[string]string
	maxBatchSize int
}

// apply builds the desired Cluster and writes it with server-side apply.
// Fields of the existing Cluster the driver does not decide (class version,
// credential Secret, annotations, rollout batch) are carried over.
func (d *Driver) apply(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, ngs []*objects.NodeGroup, r ref, current *clusterv1.Cluster, ao applyOptions) (*clusterv1.Cluster, error) {
	labels, err := d.opts.Labels.Parse(mergedLabels(c, t))
	if err != nil {
		return nil, err
	}
	ann := map[string]string{}
	if current != nil {
		for _, k := range []string{annotationTemplateID, annotationPreviousTemplateID, annotationPreviousKubeTag, annotationCreateDeadline, annotationMaxBatch} {
			if v := current.Annotations[k]; v != "" {
				ann[k] = v
			}
		}
		if ao.classVersion == "" {
			ao.classVersion = strings.TrimPrefix(current.Spec.Topology.ClassRef.Name, "magnum-")
		}
		if ao.identityRef == "" {
			ao.identityRef = variableString(current, "identityRefName")
		}
	}
	for k, v := range ao.annotations {
		if v == "" {
			delete(ann, k) // an empty value removes what an earlier apply wrote
		} else {
			ann[k] = v
		}
	}
	if ao.maxBatchSize == 0 {
		fmt.Sscan(ann[annotationMaxBatch], &ao.maxBatchSize)
	}
	if ao.classVersion == "" {
		ao.classVersion = d.opts.ClusterClassVersion
	}
	if ao.identityRef == "" {
		ao.identityRef = credentialSecretName(r.Name)
	}
	ann[annotationTemplateID] = firstNonEmpty(c.ClusterTemplateID)
	if err := d.noteLabelWarnings(ctx, c, t, ao.classVersion, ann); err != nil {
		return nil, err
	}
	sgs, err := d.ensureServerGroups(ctx, c, ngs, labels, r, ao.classVersion, ao.identityRef)
	if err != nil {
		return nil, err
	}
	want, err := desiredCluster(spec{
		Cluster: c, Template: t, NodeGroups: ngs, Labels: labels, Namespace: r.Namespace, Name: r.Name,
		ClassVersion: ao.classVersion, Classes: d.classes, IdentityRef: ao.identityRef, Annotations: ann, MaxBatchSize: ao.maxBatchSize,
		ManagementCIDRs: d.opts.ManagementCIDRs, ServerGroups: sgs,
		Capacity: d.capacities(ctx, c, t, ngs, labels, r, ao.identityRef),
	})
	if err != nil {
		return nil, err
	}
	u, err := toUnstructured(want)
	if err != nil {
		return nil, err
	}
	applied, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Apply(ctx, r.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("capi: apply Cluster %s: %w", r, err)
	}
	d.noteWritten(r, applied.GetGeneration())
	if err := d.reconcileAutoscaler(ctx, c, r, want, string(applied.GetUID()), labels); err != nil {
		return nil, err
	}
	if err := d.reconcileAddOns(ctx, c, r, want, string(applied.GetUID()), labels); err != nil {
		return nil, err
	}
	return want, nil
}

const annotationMaxBatch = "magnum.openstack.org/max-batch-size"

// applyClass applies a ClusterClass bundle into ns.
func (d *Driver) applyClass(ctx context.Context, ns, version string) error {
	objs, err := d.classes.bundle(version)
	if err != nil {
		return err
	}
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetNamespace(ns)
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["magnum.openstack.org/class-version"] = version
		o.SetLabels(l)
		gvr, err := d.resource(o.GetAPIVersion(), o.GetKind())
		if err != nil {
			return err
		}
		if _, err := d.deps.Dynamic.Resource(gvr).Namespace(ns).Apply(ctx, o.GetName(), o,
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("capi: apply %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
	}
	return nil
}

// CreateCluster implements drivers.Driver: namespace, ClusterClass, cloud
// credentials, CA Secrets, then the topology Cluster. Result.StackID is
// <namespace>/<name>.
func (d *Driver) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	if err := d.createCluster(ctx, req); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{StackID: deref(req.Cluster.StackID)}, nil
}

func (d *Driver) createCluster(ctx context.Context, req drivers.CreateClusterRequest) error {
	if err := d.usable(); err != nil {
		return err
	}
	c := req.Cluster
	t, err := requestTemplate(req.ClusterRequest)
	if err != nil {
		return err
	}
	if _, err := d.opts.Labels.Parse(mergedLabels(c, t)); err != nil {
		return err
	}
	ngs := req.NodeGroups
	r := ref{Namespace: namespaceFor(d.opts.NamespacePrefix, deref(c.ProjectID)), Name: capiNameFor(c)}
	if existing, ok := refOf(c); ok {
		r = existing // a retried create keeps its name
	}
	// Validate the whole topology before the first write.
	labels, _ := d.opts.Labels.Parse(mergedLabels(c, t))
	if err := d.opts.checkAPIReachable(c, labels); err != nil {
		return err
	}
	if err := checkBootstrap(t); err != nil {
		return err
	}
	if _, err := desiredCluster(spec{Cluster: c, Template: t, NodeGroups: ngs, Labels: labels, Namespace: r.Namespace,
		Name: r.Name, ClassVersion: d.opts.ClusterClassVersion, Classes: d.classes, IdentityRef: "x"}); err != nil {
		return err
	}
	c.StackID = ptr(r.String())
	timeout := d.opts.CreateTimeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	} else if n := deref(c.CreateTimeout); n > 0 {
		timeout = time.Duration(n) * time.Minute
	}
	log := d.log.With(d.logAttrs(ctx, c)...)
	log.Info("creating CAPI cluster", "capi_cluster", r.String(), "class", className(d.opts.ClusterClassVersion))

	owner := ownerLabels(c)
	if err := d.deps.Core.EnsureNamespace(ctx, r.Namespace, map[string]string{LabelProjectID: owner[LabelProjectID]}); err != nil {
		return err
	}
	if err := d.applyClass(ctx, r.Namespace, d.opts.ClusterClassVersion); err != nil {
		return err
	}
	if err := d.ensureCredential(ctx, c, r, log); err != nil {
		return err
	}
	for _, kind := range []CAKind{CAKubernetes, CAEtcd, CAFrontProxy} {
		certPEM, keyPEM, err := d.deps.Certs.CAKeyPair(ctx, c, kind)
		if err != nil {
			return fmt.Errorf("capi: %s CA of cluster: %w", kind, err)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-" + string(kind), Namespace: r.Namespace,
				Labels: mapWith(owner, map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelSecretKind: "ca-" + string(kind)})},
			Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		if err := d.deps.Core.ApplySecret(ctx, s); err != nil {
			return err
		}
	}
	deadline := d.now().Add(timeout).UTC().Format(time.RFC3339)
	if _, err := d.apply(ctx, c, t, ngs, r, nil, applyOptions{
		classVersion: d.opts.ClusterClassVersion,
		annotations:  map[string]string{annotationCreateDeadline: deadline},
	}); err != nil {
		return err
	}
	log.Info("CAPI cluster applied", "capi_cluster", r.String(), "create_deadline", deadline)
	return nil
}

// ensureCredential writes the cluster's cloud-credentials Secret with a
// new credential, unless one already names a credential: a create called
// again (a lost reply, a resumed operation) must not issue a second one,
// whose predecessor no Secret would name any more, never to be revoked.
func (d *Driver) ensureCredential(ctx context.Context, c *objects.Cluster, r ref, log *slog.Logger) error {
	existing, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err != nil {
		return err
	}
	for _, s := range existing {
		if credentialRefOf(s).ID != "" {
			return nil
		}
	}
	cred, err := d.deps.Credentials.Issue(ctx, c)
	if err != nil {
		return fmt.Errorf("capi: issue cloud credential: %w", err)
	}
	if err := d.deps.Core.ApplySecret(ctx, d.credentialSecret(c, r, credentialSecretName(r.Name), cred)); err != nil {
		// No Secret names the credential, so the clean-up at deletion
		// would never find it: revoke it now.
		if rerr := d.deps.Credentials.Revoke(context.WithoutCancel(ctx), c, cred.Ref()); rerr != nil {
			log.Error("cannot revoke the cloud credential whose Secret was not written", "credential_id", cred.ID,
				"error", rerr.Error())
		}
		return err
	}
	return nil
}

func mapWith(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// credentialSecret renders the CAPO identity Secret (clouds.yaml, cloud
// "openstack", application credential).
func (d *Driver) credentialSecret(c *objects.Cluster, r ref, name string, cred Credential) *corev1.Secret {
	var b strings.Builder
	b.WriteString("clouds:\n  openstack:\n    auth:\n")
	fmt.Fprintf(&b, "      auth_url: %q\n      application_credential_id: %q\n      application_credential_secret: %q\n",
		cred.AuthURL, cred.ID, cred.Secret)
	fmt.Fprintf(&b, "    auth_type: v3applicationcredential\n    interface: %q\n    identity_api_version: 3\n", d.opts.CloudInterface)
	if d.opts.CloudRegion != "" {
		fmt.Fprintf(&b, "    region_name: %q\n", d.opts.CloudRegion)
	}
	data := map[string][]byte{"clouds.yaml": []byte(b.String())}
	if d.opts.CloudCACert != "" {
		data["cacert"] = []byte(d.opts.CloudCACert)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels:      mapWith(ownerLabels(c), map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelSecretKind: "cloud-credentials"}),
			Annotations: credentialAnnotations(cred)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// credentialAnnotations record on its Secret which credential it holds and
// whose it is, so that it is revoked under that user.
func credentialAnnotations(cred Credential) map[string]string {
	a := map[string]string{annotationCredentialID: cred.ID}
	if cred.UserID != "" {
		a[annotationCredentialUserID] = cred.UserID
	}
	return a
}

// UpdateCluster implements drivers.Driver: re-apply the desired topology
// (Magnum's update_cluster only carries node_count changes, which resize
// covers).
func (d *Driver) UpdateCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{}, d.reapply(ctx, req, nil, applyOptions{})
}

// reapply applies the request's cluster with ngs (nil: the request's).
func (d *Driver) reapply(ctx context.Context, req drivers.ClusterRequest, ngs []*objects.NodeGroup, ao applyOptions) error {
	c := req.Cluster
	r, ok := refOf(c)
	if !ok {
		return fmt.Errorf("capi: cluster %s has no stack_id", deref(c.UUID))
	}
	t, err := requestTemplate(req)
	if err != nil {
		return err
	}
	if ngs == nil {
		ngs = req.NodeGroups
	}
	current, err := d.liveCluster(ctx, r)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("capi: Cluster %s does not exist", r)
		}
		return err
	}
	_, err = d.apply(ctx, c, t, ngs, r, current, ao)
	return err
}

// DeleteCluster implements drivers.Driver: delete the Cluster (background
// propagation: Cluster API orders the teardown); Observe waits for it to
// go, then removes the labelled Secrets and the credential before it
// reports the cluster gone.
func (d *Driver) DeleteCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, d.deleteCluster(ctx, req.Cluster)
}

func (d *Driver) deleteCluster(ctx context.Context, c *objects.Cluster) error {
	if err := d.usable(); err != nil {
		return err
	}
	r, ok := refOf(c)
	if !ok {
		d.log.Info("cluster has no CAPI cluster to delete", d.logAttrs(ctx, c)...)
		return nil
	}
	// When this attempt began, for its delete_timeout (a retry after
	// DELETE_FAILED starts a new one).
	now := d.now().UTC()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotationDeleteRequested, now.Format(time.RFC3339))
	if _, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Patch(ctx, r.Name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: annotate Cluster %s for deletion: %w", r, err)
	}
	d.noteDeleteRequested(r, now)
	d.sweepBeforeDelete(ctx, c, r.Namespace)
	// Background, not foreground: Cluster API's own finalizer tears the
	// cluster down in order (workers, control plane, then the
	// infrastructure cluster: network, router, load balancer) and removes
	// the Cluster last. Foreground propagation would have the garbage
	// collector delete the infrastructure cluster beside servers that
	// still use it, and without a collector leave the Cluster with its
	// foregroundDeletion finalizer for ever (cluster-api#4085).
	bg := metav1.DeletePropagationBackground
	err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: delete Cluster %s: %w", r, err)
	}
	d.log.Info("CAPI cluster deletion requested", append(d.logAttrs(ctx, c), "capi_cluster", r.String())...)
	return nil
}

// cleanup removes what the driver created beside the Cluster: the cloud
// resources of its add-ons (sweepCloud), the labelled Secrets and the
// cloud credentials they name. Concurrent clean-ups of a cluster run one
// after the other (d.guard): the later one lists what the first left, so
// nothing is revoked or deleted twice.
func (d *Driver) cleanup(ctx context.Context, c *objects.Cluster, ns string) error {
	unlock, err := d.guard.lock(ctx, "cleanup/"+deref(c.UUID))
	if err != nil {
		return err
	}
	defer unlock()
	secrets, err := d.deps.Core.ListSecrets(ctx, ns, LabelClusterUUID+"="+deref(c.UUID))
	if err != nil {
		return err
	}
	// The cloud resources the cluster's add-ons created go first, while
	// its credential still works: the load balancers a Service created
	// after the first sweep, and the volumes, detached now that the
	// servers are gone. What is left (a volume still detaching) keeps the
	// delete in progress until the next sync.
	if err := d.deleteAutoscalerOf(ctx, c, ns); err != nil {
		return err
	}
	remaining, err := d.sweepCloud(ctx, c, secrets, cloudsweep.What{LoadBalancers: true, Volumes: true,
		ServerGroupPrefix: serverGroupPrefix(c)})
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		return fmt.Errorf("waiting for %s", strings.Join(remaining, ", "))
	}
	var errs []error
	for _, s := range secrets {
		if ref := credentialRefOf(s); ref.ID != "" {
			if err := d.deps.Credentials.Revoke(ctx, c, ref); err != nil {
				errs = append(errs, fmt.Errorf("revoke credential %s: %w", ref.ID, err))
				continue
			}
		}
		if err := d.deps.Core.DeleteSecret(ctx, ns, s.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// otherVersion reports whether Machine m runs a version other than the
// topology's (both known).
func otherVersion(m *clusterv1.Machine, version string) bool {
	return version != "" && m.Spec.Version != "" && m.Spec.Version != version
}

// createDeadlineFor is when a nodegroup in CREATE_IN_PROGRESS has failed:
// the cluster's create deadline for the nodegroups created with it, and
// created_at + the cluster's create timeout for one added later (else a
// nodegroup added after that deadline would fail at its first sync).
func createDeadlineFor(timeout time.Duration, ng *objects.NodeGroup, clusterDeadline time.Time) time.Time {
	if ng.Status != objects.CreateInProgress {
		return time.Time{}
	}
	if ng.CreatedAt != nil {
		if own := ng.CreatedAt.Add(timeout); own.After(clusterDeadline) {
			return own
		}
	}
	return clusterDeadline
}

// deadlinePassed reports whether this sync may fail c or one of its
// nodegroups on a deadline: the delete deadline has passed, or the create
// deadline has passed while something is still being created (nodegroup
// deadlines are never earlier than the cluster's).
func deadlinePassed(c *objects.Cluster, ngs []*objects.NodeGroup, now, createDeadline, deleteDeadline time.Time) bool {
	if !deleteDeadline.IsZero() && now.After(deleteDeadline) {
		return true
	}
	if createDeadline.IsZero() || !now.After(createDeadline) {
		return false
	}
	if c.Status == objects.CreateInProgress {
		return true
	}
	for _, ng := range ngs {
		if ng.Status == objects.CreateInProgress {
			return true
		}
	}
	return false
}

// createTimeout is the cluster's create_timeout, or the driver's default.
func (d *Driver) createTimeout(c *objects.Cluster) time.Duration {
	if n := deref(c.CreateTimeout); n > 0 {
		return time.Duration(n) * time.Minute
	}
	return d.opts.CreateTimeout
}

// createDeadline comes from the annotation written at create, else from
// created_at + create_timeout.
func (d *Driver) createDeadline(c *objects.Cluster, cl *clusterv1.Cluster) time.Time {
	if cl != nil {
		if t, err := time.Parse(time.RFC3339, cl.Annotations[annotationCreateDeadline]); err == nil {
			return t
		}
	}
	if c.CreatedAt == nil {
		return time.Time{}
	}
	return c.CreatedAt.Add(d.createTimeout(c))
}

// ValidateMasterResize implements drivers.MasterResizeValidator: the
// control plane keeps an odd member count for etcd quorum.
func (d *Driver) ValidateMasterResize(nodeCount int) error {
	if nodeCount < 1 || nodeCount%2 == 0 {
		return invalid("Master node count must be odd and at least 1, got %d.", nodeCount)
	}
	return nil
}

// ResizeCluster implements drivers.Driver. Machines named in nodesToRemove
// (server UUID, Machine name or node name) get the delete-machine
// annotation, then the replicas are lowered in the same call, so CAPI
// removes exactly those machines.
func (d *Driver) ResizeCluster(ctx context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return drivers.Result{}, d.resize(ctx, req.ClusterRequest, req.NodeCount, req.NodesToRemove, req.NodeGroup)
}

func (d *Driver) resize(ctx context.Context, req drivers.ClusterRequest, nodeCount int, nodesToRemove []string, ng *objects.NodeGroup) error {
	if err := d.usable(); err != nil {
		return err
	}
	c := req.Cluster
	if ng == nil {
		return invalid("A nodegroup is required to resize.")
	}
	if ng.Role == objects.RoleMaster {
		if err := d.ValidateMasterResize(nodeCount); err != nil {
			return err
		}
	}
	r, ok := refOf(c)
	if !ok {
		return fmt.Errorf("capi: cluster %s has no stack_id", deref(c.UUID))
	}
	// The re-apply needs the template: a missing one fails before the
	// first write.
	if _, err := requestTemplate(req); err != nil {
		return err
	}
	// Resolve every node before the first write.
	var victims []string
	if len(nodesToRemove) > 0 {
		obs := d.cache.Load().observe(r.Namespace, r.Name)
		mdName := mdNameFor(ng)
		inNG := func(m *clusterv1.Machine) bool {
			if ng.Role == objects.RoleMaster {
				_, cp := m.Labels[clusterv1.MachineControlPlaneLabel]
				return cp
			}
			return m.Labels[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == mdName
		}
		// The nodegroup's size now, from its Machines: the conductor has
		// already set ng.NodeCount to the new size.
		current := 0
		for _, m := range obs.Machines {
			if inNG(m) {
				current++
			}
		}
		var missing []string
		for _, want := range nodesToRemove {
			found := ""
			for _, m := range obs.Machines {
				if !inNG(m) {
					continue
				}
				if m.Name == want || m.Status.NodeRef.Name == want ||
					(m.Spec.ProviderID != "" && strings.HasSuffix(m.Spec.ProviderID, "/"+want)) {
					found = m.Name
					break
				}
			}
			if found == "" {
				missing = append(missing, want)
			} else {
				victims = append(victims, found)
			}
		}
		if len(missing) > 0 {
			return invalid("Nodes %s are not in nodegroup %s.", strings.Join(missing, ", "), ng.Name)
		}
		if current > nodeCount && len(victims) > current-nodeCount {
			return invalid("%d nodes to remove but the nodegroup only shrinks by %d.", len(victims), current-nodeCount)
		}
	}
	for _, name := range victims {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"yes"}}}`, clusterv1.DeleteMachineAnnotation)
		if _, err := d.deps.Dynamic.Resource(gvrMachine).Namespace(r.Namespace).Patch(ctx, name, types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
			// (Gone already: removed as asked, by an earlier call.)
			return fmt.Errorf("capi: mark Machine %s/%s for deletion: %w", r.Namespace, name, err)
		}
	}
	ng.NodeCount = int64(nodeCount)
	// An autoscaled nodegroup's new node_count is written on its
	// MachineDeployment by Observe (sizeAutoscaled), once.
	if err := d.reapply(ctx, req, nodeGroups(req, ng), applyOptions{}); err != nil {
		return err
	}
	d.log.Info("cluster resized", append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "node_count", nodeCount, "nodes_removed", len(victims))...)
	return nil
}

// CreateNodeGroup implements drivers.Driver: a new MachineDeployment in the
// topology.
func (d *Driver) CreateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	if req.NodeGroup.Role == objects.RoleMaster {
		return drivers.Result{}, exception.ClassCreateMasterNodeGroup.New(nil)
	}
	return drivers.Result{}, d.reapply(ctx, req.ClusterRequest, nodeGroups(req.ClusterRequest, req.NodeGroup), applyOptions{})
}

// UpdateNodeGroup implements drivers.Driver.
func (d *Driver) UpdateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{}, d.reapply(ctx, req.ClusterRequest, nodeGroups(req.ClusterRequest, req.NodeGroup), applyOptions{})
}

// DeleteNodeGroup implements drivers.Driver: the MachineDeployment leaves
// the topology; Observe reports the nodegroup gone once its Machines are.
func (d *Driver) DeleteNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	ng := req.NodeGroup
	if ng.Role == objects.RoleMaster {
		return drivers.Result{}, exception.ClassDeletingDefaultNGNotSupported.New(nil)
	}
	ngs := slices.DeleteFunc(nodeGroups(req.ClusterRequest), func(n *objects.NodeGroup) bool { return n.UUID == ng.UUID })
	return drivers.Result{}, d.reapply(ctx, req.ClusterRequest, ngs, applyOptions{})
}

// RotateCACertificate implements drivers.CARotator: Cluster API cannot
// roll out new cluster CAs (cluster-api#7721).
func (d *Driver) RotateCACertificate(context.Context, drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, exception.ClassNotSupported.WithMessage(
		"Rotating the cluster CA is not supported by the Cluster API driver: Cluster API cannot roll out new cluster CAs.",
		map[string]any{"operation": "rotate_ca_certificate"})
}
