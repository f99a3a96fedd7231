package main

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone"
	"github.com/openstack/magnum-conductor/internal/wiring"
)

// capiConfigured reports whether the Cluster API driver is wanted: a
// [capi_driver]/kubeconfig, or a conductor running inside Kubernetes
// (KUBERNETES_SERVICE_HOST), which then uses its service account. KUBECONFIG
// and ~/.kube/config alone do not enable the driver, so a developer's own
// kubeconfig never turns a conductor into a Cluster API one by accident.
func capiConfigured(cfg *config.Config, getenv func(string) string) bool {
	return cfg.CAPIDriver.Kubeconfig != "" || getenv("KUBERNETES_SERVICE_HOST") != ""
}

// capiOptions maps [capi_driver] onto the driver's options. cloudCACert is
// the content of cloud_ca_file.
func capiOptions(c config.CAPIDriverOpts, cloudCACert string) capi.Options {
	return capi.Options{
		Kubeconfig: c.Kubeconfig,
		Context:    c.KubeconfigContext,
		// The driver appends "-" itself (<prefix>-<project id>); the option
		// is written as Magnum operators expect, with the dash.
		NamespacePrefix:     strings.TrimSuffix(c.NamespacePrefix, "-"),
		ClusterClassVersion: c.ClusterClassVersion,
		ClassDir:            c.ClassDir,
		CreateTimeout:       c.CreateTimeout,
		DeleteTimeout:       c.DeleteTimeout,
		ResyncPeriod:        c.ResyncPeriod,
		CloudRegion:         c.CloudRegion,
		CloudInterface:      c.CloudInterface,
		CloudCACert:         cloudCACert,
		ProbeInterval:       c.ProbeInterval,
		ProbeTimeout:        c.ProbeTimeout,
		CacheSyncTimeout:    c.StartTimeout,
		AutoscalerImage:     c.AutoscalerImage,
		ManagementCIDRs:     c.ManagementCIDRs,
		Aliases:             c.DriverAliases,
		// Clusters without a floating IP for their API are refused unless
		// the operator routes the management cluster to them.
		ManagementNetworkRouted: c.ManagementRouted,
		MinFlavorRAMMiB:         c.MinFlavorRAMMB,
		MinFlavorVCPUs:          c.MinFlavorVCPUs,
		AddOns: capi.AddOnOptions{Enabled: c.AddonsEnabled, CacheDir: c.AddonChartCacheDir, Settings: addons.Settings{
			Repos: c.AddonChartRepos, Charts: c.AddonChartNames, Versions: c.AddonChartVersions,
			ImageRegistry: c.AddonImageRegistry, ExtraDir: c.ExtraAddonsDir, Builtin: nonNil(c.Addons)}},
	}
}

// labelDefaults are the site-wide label defaults: [cinder]'s volume
// defaults, then [capi_driver] flavor_label_defaults over them.
func labelDefaults(cinder config.CinderOpts, site map[string]string) map[string]string {
	out := map[string]string{}
	for label, v := range map[string]string{
		"boot_volume_type": cinder.DefaultBootVolumeType, "etcd_volume_type": cinder.DefaultEtcdVolumeType,
		"docker_volume_type": cinder.DefaultDockerVolumeType,
	} {
		if v != "" {
			out[label] = v
		}
	}
	if cinder.DefaultBootVolumeSize > 0 {
		out["boot_volume_size"] = strconv.Itoa(cinder.DefaultBootVolumeSize)
	}
	maps.Copy(out, site)
	return out
}

// nonNil is l, or an empty list for none (the driver's nil means all).
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// keystoneOptions configures the application-credential issuer: the
// Keystone URL of a request is its auth_url; without one, the public
// [keystone_authtoken]/www_authenticate_uri, else [keystone_auth]/auth_url.
// Revocation without a user token uses the [keystone_auth] service
// credentials, as Magnum's admin context does.
func keystoneOptions(cfg *config.Config) keystone.Options {
	k := cfg.KeystoneAuth
	authURL := cfg.KeystoneAuthtoken.WWWAuthenticateURI
	if authURL == "" {
		authURL = k.AuthURL
	}
	caFile, insecure := k.Cafile, k.Insecure
	if caFile == "" {
		caFile = cfg.KeystoneAuthtoken.Cafile
	}
	return keystone.Options{
		AuthURL:  authURL,
		Timeout:  cfg.CAPIDriver.KeystoneTimeout,
		CAFile:   caFile,
		Insecure: insecure || cfg.KeystoneAuthtoken.Insecure,
		Service: keystone.ServiceCredentials{
			AuthURL: k.AuthURL, Username: k.Username, UserID: k.UserID, Password: k.Password,
			UserDomainName: k.UserDomainName, UserDomainID: k.UserDomainID,
			ProjectName: k.ProjectName, ProjectID: k.ProjectID,
			ProjectDomainName: k.ProjectDomainName, ProjectDomainID: k.ProjectDomainID,
		},
	}
}

// newCAPIDriver returns the Cluster API driver, or nil when it is not
// configured (see capiConfigured). It is not started here: it is a
// drivers.Runner, which the conductor starts with every driver (startDrivers).
//
// Configuration errors (bad options, unreadable kubeconfig or CA file) stop
// the conductor: they need an operator. A management cluster that does not
// answer, or does not serve cluster.x-k8s.io/v1beta2, does NOT stop it: the
// driver is registered, logs an error, and keeps retrying in the background
// (every attempt bounded by [capi_driver]/start_timeout, pauses doubling from
// 5 s to 5 min) until the management cluster answers and its informer caches
// are filled. Until then every operation of the driver fails with an error
// wrapping drivers.ErrNotReady: a create ends in CREATE_FAILED with that
// reason, and sync_cluster_status leaves its clusters' status unchanged (an
// empty cache must never read as "every CAPI Cluster is gone").
//
// Once started, the driver notices a management cluster that stops
// answering (see capi.Options.ProbeInterval): status sync then leaves its
// clusters alone and their health reads UNKNOWN, until it answers again and
// the caches are rebuilt.
func newCAPIDriver(cfg *config.Config, certs *certmanager.Manager, log *slog.Logger) (drivers.Driver, error) {
	return buildCAPIDriver(cfg, os.Getenv, certs, log)
}

func buildCAPIDriver(cfg *config.Config, getenv func(string) string, certs wiring.CAKeyPairs, log *slog.Logger) (drivers.Driver, error) {
	if !capiConfigured(cfg, getenv) {
		log.Info("Cluster API driver not configured ([capi_driver]/kubeconfig unset, not running in Kubernetes)")
		return nil, nil
	}
	c := cfg.CAPIDriver
	if c.ClusterClassName != "" && c.ClusterClassName != "magnum" {
		log.Warn("[capi_driver]/cluster_class_name is ignored: the driver names its classes magnum-<cluster_class_version>",
			"cluster_class_name", c.ClusterClassName)
	}
	var cloudCACert string
	if c.CloudCAFile != "" {
		b, err := os.ReadFile(c.CloudCAFile)
		if err != nil {
			return nil, fmt.Errorf("[capi_driver]/cloud_ca_file: %w", err)
		}
		cloudCACert = string(b)
	}
	opts := capiOptions(c, cloudCACert)
	opts.Start = capi.RunOptions{AttemptTimeout: c.StartTimeout, RetryMin: capiRetryMin, RetryMax: capiRetryMax}
	opts.LabelDefaults = labelDefaults(cfg.Cinder, c.FlavorLabelDefaults)
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("[capi_driver]: %w", err)
	}
	restCfg, err := capi.RESTConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("[capi_driver]: %w", err)
	}
	issuer, err := keystone.New(keystoneOptions(cfg), log.With("component", "keystone"))
	if err != nil {
		return nil, fmt.Errorf("[capi_driver] application credentials: %w", err)
	}
	d, err := capi.NewForConfig(restCfg, opts, wiring.CertSource{Certs: certs}, issuer, log.With("management_cluster", restCfg.Host))
	if err != nil {
		return nil, fmt.Errorf("[capi_driver]: %w", err)
	}
	return d, nil
}

// Retry pauses of the driver's start after a failed attempt.
const (
	capiRetryMin = 5 * time.Second
	capiRetryMax = 5 * time.Minute
)
