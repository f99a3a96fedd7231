// Package capi is the bundled Cluster API driver: it turns Magnum clusters
// into Cluster API v1beta2 topology Clusters (ClusterClass based) on a
// management cluster, with the OpenStack infrastructure provider (CAPO).
//
// The driver writes with server-side apply (field manager magnum-conductor),
// keeps one namespace per project, labels everything it writes with
// magnum.openstack.org/* and reads state from shared informers, so status
// syncs and health polls cost no API requests.
package capi

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "magnum-conductor"

// DriverName is the entry-point name of the driver (a template's `driver`).
const DriverName = "k8s_capi_v1"

// Options configure the driver. The zero value of each field means its
// default (see Defaults).
type Options struct {
	// Kubeconfig is the management cluster kubeconfig path. Empty means
	// in-cluster configuration.
	Kubeconfig string
	// Context selects a kubeconfig context ("" is the current one).
	Context string
	// NamespacePrefix prefixes the per-project namespace
	// (<prefix>-<project id>). Default "magnum".
	NamespacePrefix string
	// ClusterClassVersion selects the ClusterClass bundle version applied
	// to new clusters (see ClassVersions and ClassDir). Default: the newest
	// embedded one.
	ClusterClassVersion string
	// ClassDir, when set, is a directory of ClusterClass bundles
	// (<version>.yaml: one ClusterClass named magnum-<version> and its
	// templates) beside the embedded ones; a bundle there replaces the
	// embedded bundle of the same version. For an infrastructure provider
	// other than OpenStack, or a site's own class, with the same variables.
	ClassDir string
	// CreateTimeout is used when a cluster has no create_timeout. Default 60 m.
	CreateTimeout time.Duration
	// DeleteTimeout bounds how long deletion waits for the Cluster to go
	// before DELETE_FAILED. Default 30 m.
	DeleteTimeout time.Duration
	// ResyncPeriod of the shared informers. Default 10 m.
	ResyncPeriod time.Duration
	// Labels is the typed label schema; nil means DefaultLabelSchema().
	Labels LabelSchema
	// CloudRegion, CloudInterface and CloudCACert go into the clouds.yaml of
	// the cloud-credentials Secret.
	CloudRegion    string
	CloudInterface string
	CloudCACert    string
	// Provides overrides the (server_type, os) pairs served; default
	// vm/ubuntu, vm/flatcar, vm/rockylinux. Flatcar is served so that its
	// templates stay valid, and refused at create (checkBootstrap): the
	// classes write cloud-init, Flatcar reads Ignition only.
	OSDistros []string
	// Aliases are other drivers' names whose templates this driver serves
	// ([capi_driver] driver_aliases: magnum-cluster-api's and
	// magnum-capi-helm's entry points); nil: none.
	Aliases []string
	// ProbeInterval is how often the started driver checks that the
	// management cluster answers (also at once when an informer's request
	// fails). Default 10 s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one such check. Default 5 s.
	ProbeTimeout time.Duration
	// CacheSyncTimeout bounds the refill of the informer caches when the
	// management cluster answers again after it was lost. Default 60 s.
	CacheSyncTimeout time.Duration
	// AutoscalerImage is the cluster-autoscaler image (without a tag: the
	// tag is the autoscaler_tag label, else v<kube minor>.0). Default
	// DefaultAutoscalerImage.
	AutoscalerImage string
	// LabelDefaults are site-wide label values ([capi_driver]
	// flavor_label_defaults), applied when neither the cluster nor its
	// template sets the label. A label the schema does not know, or a
	// value it refuses, is a configuration error.
	LabelDefaults map[string]string
	// ManagementCIDRs are the prefixes the management cluster's requests
	// to workload clusters come from; they are added to every non-empty
	// api_master_lb_allowed_cidrs.
	ManagementCIDRs []string
	// ManagementNetworkRouted says the management cluster reaches the
	// clusters' private networks (routed, VPN or a shared provider
	// network), so clusters without a floating IP for their API are
	// accepted; when false they are refused at create.
	ManagementNetworkRouted bool
	// MinFlavorRAMMiB and MinFlavorVCPUs are the smallest flavor a node
	// may have ([capi_driver] min_flavor_ram_mb, min_flavor_vcpus; as
	// magnum-capi-helm's [capi_helm] minimum_flavor_ram and
	// minimum_flavor_vcpus), checked at create, upgrade and nodegroup
	// create and update. 0: no minimum (unlike the other fields, not a
	// default: the conductor passes its options' defaults, 2048 and 2).
	MinFlavorRAMMiB, MinFlavorVCPUs int
	// AddOns configure the add-ons delivered to every cluster (addons.go).
	AddOns AddOnOptions
	// Start bounds the start attempts of Run. Defaults: 1 min per attempt,
	// pauses doubling from 5 s to 5 min.
	Start RunOptions
}

// RunOptions bound the driver's start attempts (see Driver.Run): each
// attempt, and the pause after a failed one, which doubles from RetryMin
// up to RetryMax.
type RunOptions struct {
	AttemptTimeout     time.Duration
	RetryMin, RetryMax time.Duration
}

func (o Options) withDefaults() Options {
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = "magnum"
	}
	if o.AutoscalerImage == "" {
		o.AutoscalerImage = DefaultAutoscalerImage
	}
	if o.ClusterClassVersion == "" {
		o.ClusterClassVersion = LatestClassVersion
	}
	if o.CreateTimeout == 0 {
		o.CreateTimeout = 60 * time.Minute
	}
	if o.DeleteTimeout == 0 {
		o.DeleteTimeout = 30 * time.Minute
	}
	if o.ResyncPeriod == 0 {
		o.ResyncPeriod = 10 * time.Minute
	}
	if o.Labels == nil {
		o.Labels = DefaultLabelSchema()
	}
	o.Labels = o.Labels.withDefaults(o.LabelDefaults)
	if o.CloudInterface == "" {
		o.CloudInterface = "public"
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 10 * time.Second
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.CacheSyncTimeout == 0 {
		o.CacheSyncTimeout = 60 * time.Second
	}
	if o.Start.AttemptTimeout <= 0 {
		o.Start.AttemptTimeout = time.Minute
	}
	if o.Start.RetryMin <= 0 {
		o.Start.RetryMin = 5 * time.Second
	}
	if o.Start.RetryMax < o.Start.RetryMin {
		o.Start.RetryMax = max(5*time.Minute, o.Start.RetryMin)
	}
	if len(o.OSDistros) == 0 {
		o.OSDistros = []string{"ubuntu", "flatcar", "rockylinux"}
	}
	return o
}

// Validate reports every configuration error at once.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if !isDNSLabel(o.NamespacePrefix) || len(o.NamespacePrefix) > 20 {
		errs = append(errs, fmt.Errorf("capi: namespace prefix %q must be a DNS label of at most 20 characters", o.NamespacePrefix))
	}
	if classes, err := loadClasses(o.ClassDir); err != nil {
		errs = append(errs, err)
	} else if _, err := classes.bundle(o.ClusterClassVersion); err != nil {
		errs = append(errs, err)
	}
	if o.CreateTimeout < 0 || o.DeleteTimeout < 0 || o.ResyncPeriod < 0 ||
		o.ProbeInterval < 0 || o.ProbeTimeout < 0 || o.CacheSyncTimeout < 0 {
		errs = append(errs, errors.New("capi: timeouts must not be negative"))
	}
	if err := o.Labels.validateSchema(); err != nil {
		errs = append(errs, err)
	}
	for _, name := range slices.Sorted(maps.Keys(o.LabelDefaults)) {
		if !slices.ContainsFunc(o.Labels, func(l LabelSpec) bool { return l.Name == name }) {
			errs = append(errs, fmt.Errorf("capi: label default %q: the driver has no such label", name))
		}
	}
	for _, p := range o.ManagementCIDRs {
		if _, err := (LabelSpec{Type: LabelCIDR}).parse(p); err != nil {
			errs = append(errs, fmt.Errorf("capi: management CIDR %q: %w", p, err))
		}
	}
	if err := o.AddOns.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
