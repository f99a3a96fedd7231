package cloudsweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
)

// ServerGroup is a Nova server group a cluster's machines are placed in.
type ServerGroup struct {
	Name string
	// Policy is affinity, anti-affinity, soft-affinity or
	// soft-anti-affinity.
	Policy string
}

// serverGroupMicroversion is the first compute API version with the soft
// policies.
const serverGroupMicroversion = "2.15"

func computeClient(provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error) {
	cc, err := openstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("cloudsweep: compute endpoint: %w", err)
	}
	cc.Microversion = serverGroupMicroversion
	return cc, nil
}

// EnsureServerGroups creates, with cloud's credential, those of groups
// that do not exist yet (by name, in the credential's project), and
// returns the id of every one by name. A group that exists keeps its
// policy (Nova cannot change it).
func (s *Sweeper) EnsureServerGroups(ctx context.Context, cloud Cloud, groups []ServerGroup) (map[string]string, error) {
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return nil, err
	}
	cc, err := computeClient(provider, gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)})
	if err != nil {
		return nil, err
	}
	existing, err := listServerGroups(ctx, cc)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, g := range existing {
		if _, dup := ids[g.Name]; !dup {
			ids[g.Name] = g.ID
		}
	}
	out := map[string]string{}
	for _, g := range groups {
		if id, ok := ids[g.Name]; ok {
			out[g.Name] = id
			continue
		}
		created, err := servergroups.Create(ctx, cc, servergroups.CreateOpts{Name: g.Name, Policies: []string{g.Policy}}).Extract()
		if err != nil {
			return nil, fmt.Errorf("cloudsweep: create server group %s (%s): %w", g.Name, g.Policy, err)
		}
		out[g.Name], ids[g.Name] = created.ID, created.ID
	}
	return out, nil
}

// DeleteServerGroups deletes, with cloud's credential, the project's server
// groups of these names (all of a name, as the sweep does); a name with no
// group is not an error. A group that still has members is deleted all the
// same.
func (s *Sweeper) DeleteServerGroups(ctx context.Context, cloud Cloud, names []string) (int, error) {
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return 0, err
	}
	cc, err := computeClient(provider, gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)})
	if err != nil {
		return 0, err
	}
	groups, err := listServerGroups(ctx, cc)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, g := range groups {
		if !slices.Contains(names, g.Name) {
			continue
		}
		if err := servergroups.Delete(ctx, cc, g.ID).ExtractErr(); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("cloudsweep: delete server group %s: %w", g.Name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func listServerGroups(ctx context.Context, cc *gophercloud.ServiceClient) ([]servergroups.ServerGroup, error) {
	pages, err := servergroups.List(cc, servergroups.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("cloudsweep: list server groups: %w", err)
	}
	groups, err := servergroups.ExtractServerGroups(pages)
	if err != nil {
		return nil, fmt.Errorf("cloudsweep: list server groups: %w", err)
	}
	return groups, nil
}

// sweepServerGroups deletes the project's server groups named with
// prefix. A group that still has members is deleted all the same (Nova
// allows it; the members only lose the policy).
func (s *Sweeper) sweepServerGroups(ctx context.Context, provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts, prefix string, res *Result) error {
	cc, err := computeClient(provider, eo)
	if err != nil {
		var nf *gophercloud.ErrEndpointNotFound
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	groups, err := listServerGroups(ctx, cc)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range groups {
		if !strings.HasPrefix(g.Name, prefix) {
			continue
		}
		if err := servergroups.Delete(ctx, cc, g.ID).ExtractErr(); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("cloudsweep: delete server group %s: %w", g.Name, err))
			continue
		}
		res.DeletedServerGroups++
	}
	return errors.Join(errs...)
}
