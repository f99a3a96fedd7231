package capi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// CloudSweeper deletes what a workload cluster's own controllers created
// in the cloud (load balancers of Services, volumes of PersistentVolumes),
// which Cluster API does not know about. cloudsweep.Sweeper implements it;
// a nil Deps.Sweeper disables sweeping.
type CloudSweeper interface {
	Sweep(ctx context.Context, cloud cloudsweep.Cloud, clusterName string, w cloudsweep.What) (cloudsweep.Result, error)
}

var _ CloudSweeper = (*cloudsweep.Sweeper)(nil)

// cloudsYAML is the part of the clouds.yaml the driver writes (see
// credentialSecret) that a sweep needs.
type cloudsYAML struct {
	Clouds map[string]struct {
		Auth struct {
			AuthURL                     string `json:"auth_url"`
			ApplicationCredentialID     string `json:"application_credential_id"`
			ApplicationCredentialSecret string `json:"application_credential_secret"`
		} `json:"auth"`
		RegionName string `json:"region_name"`
		Interface  string `json:"interface"`
	} `json:"clouds"`
}

// cloudOf reads the cloud a cloud-credentials Secret describes.
func cloudOf(s corev1.Secret) (cloudsweep.Cloud, error) {
	var cy cloudsYAML
	if err := yaml.Unmarshal(s.Data["clouds.yaml"], &cy); err != nil {
		return cloudsweep.Cloud{}, fmt.Errorf("Secret %s: clouds.yaml: %w", s.Name, err)
	}
	c, ok := cy.Clouds["openstack"]
	if !ok {
		return cloudsweep.Cloud{}, fmt.Errorf("Secret %s: clouds.yaml has no cloud named openstack", s.Name)
	}
	return cloudsweep.Cloud{AuthURL: c.Auth.AuthURL, ApplicationCredentialID: c.Auth.ApplicationCredentialID,
		ApplicationCredentialSecret: c.Auth.ApplicationCredentialSecret, Region: c.RegionName, Interface: c.Interface,
		CACert: s.Data["cacert"]}, nil
}

// unauthorized reports whether err is the cloud refusing the credential:
// a sweep with it can never succeed (the user deleted the application
// credential, or its project went).
func unauthorized(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) || gophercloud.ResponseCodeIs(err, http.StatusForbidden)
}

// sweepCloud sweeps, with each cloud-credentials Secret among secrets (the
// cluster's, listed by the caller), what w selects for the Cluster API
// Cluster the Secret names. It returns what could not go yet, and an error
// only for a failure worth retrying: a Secret that cannot be read, or a
// credential the cloud refuses, cannot get better by retrying, so it is
// logged and skipped (the resources, if any, are then the operator's to
// delete; the log says which cluster).
func (d *Driver) sweepCloud(ctx context.Context, c *objects.Cluster, secrets []corev1.Secret, w cloudsweep.What) ([]string, error) {
	if d.deps.Sweeper == nil {
		return nil, nil
	}
	var remaining []string
	var errs []error
	for _, s := range secrets {
		if s.Labels[LabelSecretKind] != "cloud-credentials" {
			continue
		}
		name := s.Labels[clusterv1.ClusterNameLabel]
		attrs := append(d.logAttrs(ctx, c), "capi_cluster", s.Namespace+"/"+name, "secret", s.Name)
		if name == "" {
			d.log.Warn("cloud-credentials Secret names no Cluster: the cluster's load balancers and volumes are not swept", attrs...)
			continue
		}
		cloud, err := cloudOf(s)
		if err != nil {
			d.log.Warn("cannot read the cluster's cloud credential: its load balancers and volumes are not swept", append(attrs, "error", err)...)
			continue
		}
		res, err := d.deps.Sweeper.Sweep(ctx, cloud, name, w)
		if res.DeletedLoadBalancers+res.DeletedFloatingIPs+res.DeletedVolumes > 0 || len(res.Remaining) > 0 {
			d.log.Info("swept the cluster's cloud resources", append(attrs, "load_balancers", res.DeletedLoadBalancers,
				"floating_ips", res.DeletedFloatingIPs, "volumes", res.DeletedVolumes, "remaining", strings.Join(res.Remaining, "; "))...)
		}
		remaining = append(remaining, res.Remaining...)
		switch {
		case err == nil:
			return remaining, nil // one credential that works is enough
		case unauthorized(err):
			d.log.Warn("the cloud refuses the cluster's credential: its load balancers and volumes are not swept "+
				"(delete any left by hand)", append(attrs, "error", err)...)
		default:
			errs = append(errs, err)
		}
	}
	return remaining, errors.Join(errs...)
}

// sweepBeforeDelete deletes the cluster's Service load balancers before
// Cluster API tears the cluster down: their ports on the cluster's subnet
// would keep its network from being deleted. A failure is logged, not
// returned: the final sweep (cleanup) retries.
func (d *Driver) sweepBeforeDelete(ctx context.Context, c *objects.Cluster, ns string) {
	if d.deps.Sweeper == nil {
		return
	}
	secrets, err := d.deps.Core.ListSecrets(ctx, ns, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err == nil {
		_, err = d.sweepCloud(ctx, c, secrets, cloudsweep.What{LoadBalancers: true})
	}
	if err != nil {
		d.log.Warn("could not delete the cluster's Service load balancers before its teardown; retried once the Cluster is gone",
			append(d.logAttrs(ctx, c), "error", err)...)
	}
}

// cloudRequestTimeout bounds each OpenStack request of a sweep; the
// driver call's own deadline bounds the whole sweep.
const cloudRequestTimeout = 30 * time.Second
