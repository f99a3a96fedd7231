package cloudsweep

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
)

// Flavor is what a Nova flavor gives a server.
type Flavor struct {
	ID, Name  string
	VCPUs     int
	RAMMiB    int
	DiskGiB   int // root disk (0: the flavor takes its size from the image or a volume)
	Ephemeral int // GiB
	// GPUs counts the PCI devices the flavor passes through
	// (pci_passthrough:alias, "<alias>:<count>[,...]") and its virtual GPUs
	// (resources:VGPU).
	GPUs int
}

// Flavor looks a flavor up by id or name, with cloud's credential.
func (s *Sweeper) Flavor(ctx context.Context, cloud Cloud, idOrName string) (Flavor, error) {
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return Flavor{}, err
	}
	cc, err := computeClient(provider, gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)})
	if err != nil {
		return Flavor{}, err
	}
	pages, err := flavors.ListDetail(cc, flavors.ListOpts{AccessType: flavors.AllAccess}).AllPages(ctx)
	if err != nil {
		return Flavor{}, fmt.Errorf("cloudsweep: list flavors: %w", err)
	}
	all, err := flavors.ExtractFlavors(pages)
	if err != nil {
		return Flavor{}, fmt.Errorf("cloudsweep: list flavors: %w", err)
	}
	var found *flavors.Flavor
	for i := range all {
		if all[i].ID == idOrName {
			found = &all[i]
			break
		}
		if all[i].Name == idOrName && found == nil {
			found = &all[i]
		}
	}
	if found == nil {
		return Flavor{}, fmt.Errorf("cloudsweep: no flavor %q: %w", idOrName, ErrNotFound)
	}
	specs, err := flavors.ListExtraSpecs(ctx, cc, found.ID).Extract()
	if err != nil && !notFound(err) {
		return Flavor{}, fmt.Errorf("cloudsweep: extra specs of flavor %s: %w", found.Name, err)
	}
	return Flavor{ID: found.ID, Name: found.Name, VCPUs: found.VCPUs, RAMMiB: found.RAM, DiskGiB: found.Disk,
		Ephemeral: found.Ephemeral, GPUs: gpus(specs)}, nil
}

// gpus counts the devices of a flavor's extra specs.
func gpus(specs map[string]string) int {
	n := 0
	for _, alias := range strings.Split(specs["pci_passthrough:alias"], ",") {
		if _, count, ok := strings.Cut(strings.TrimSpace(alias), ":"); ok {
			if c, err := strconv.Atoi(strings.TrimSpace(count)); err == nil && c > 0 {
				n += c
			}
		}
	}
	if c, err := strconv.Atoi(strings.TrimSpace(specs["resources:VGPU"])); err == nil && c > 0 {
		n += c
	}
	return n
}
