package capi

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// ServerGroupEnsurer creates the Nova server groups a cluster's machines
// go into, with the cluster's credential. cloudsweep.Sweeper implements
// it.
type ServerGroupEnsurer interface {
	EnsureServerGroups(ctx context.Context, cloud cloudsweep.Cloud, groups []cloudsweep.ServerGroup) (map[string]string, error)
}

var _ ServerGroupEnsurer = (*cloudsweep.Sweeper)(nil)

// serverGroupControlPlane is the control plane's key in spec.ServerGroups.
const serverGroupControlPlane = "control-plane"

// serverGroupPrefix starts the name of every server group of the cluster:
// magnum-<cluster uuid>-, unique to it (the sweep at delete goes by it).
func serverGroupPrefix(c *objects.Cluster) string { return "magnum-" + deref(c.UUID) + "-" }

// ensureServerGroups creates the server groups of the control plane and of
// every live worker nodegroup (soft-anti-affinity unless the
// server_group_policies label, the nodegroup's or the cluster's, says
// otherwise), when the class places machines in them and the driver has a
// Nova client, and returns their ids by spec.ServerGroups key. Existing
// groups are reused by name, so every apply may call it.
func (d *Driver) ensureServerGroups(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, l Labels, r ref,
	classVersion, identityRef string) (map[string]string, error) {
	if d.deps.ServerGroups == nil {
		return nil, nil
	}
	declared, err := d.classes.variables(classVersion)
	if err != nil || !declared["controlPlaneServerGroup"] {
		return nil, err
	}
	policy := l.String("server_group_policies")
	keys := map[string]string{} // group name -> spec.ServerGroups key
	groups := []cloudsweep.ServerGroup{{Name: serverGroupPrefix(c) + serverGroupControlPlane, Policy: policy}}
	keys[groups[0].Name] = serverGroupControlPlane
	for _, ng := range ngs {
		if ng.Role == objects.RoleMaster || ng.Status == objects.DeleteInProgress || ng.Status == objects.DeleteComplete {
			continue
		}
		p := policy
		if v := ng.Labels["server_group_policies"]; v != "" {
			spec := DefaultLabelSchema()[slices.IndexFunc(DefaultLabelSchema(), func(s LabelSpec) bool { return s.Name == "server_group_policies" })]
			if _, err := spec.parse(v); err != nil {
				return nil, invalid("Invalid value %q for label server_group_policies of nodegroup %s: %v.", v, ng.Name, err)
			}
			p = v
		}
		g := cloudsweep.ServerGroup{Name: serverGroupPrefix(c) + mdNameFor(ng), Policy: p}
		groups = append(groups, g)
		keys[g.Name] = mdNameFor(ng)
	}
	cloud, err := d.clusterCloud(ctx, c, r, identityRef)
	if err != nil {
		return nil, fmt.Errorf("capi: server groups: %w", err)
	}
	ids, err := d.deps.ServerGroups.EnsureServerGroups(ctx, cloud, groups)
	if err != nil {
		return nil, fmt.Errorf("capi: server groups of the cluster's machines: %w", err)
	}
	out := map[string]string{}
	for name, id := range ids {
		out[keys[name]] = id
	}
	return out, nil
}

// clusterCloud is the cloud of the cluster's cloud-credentials Secret
// identityRef (the one its Cluster uses).
func (d *Driver) clusterCloud(ctx context.Context, c *objects.Cluster, r ref, identityRef string) (cloudsweep.Cloud, error) {
	secrets, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err != nil {
		return cloudsweep.Cloud{}, err
	}
	i := slices.IndexFunc(secrets, func(s corev1.Secret) bool { return s.Name == identityRef })
	if i < 0 {
		return cloudsweep.Cloud{}, fmt.Errorf("no cloud-credentials Secret %s/%s", r.Namespace, identityRef)
	}
	return cloudOf(secrets[i])
}
