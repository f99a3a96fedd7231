package cloudsweep

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumetypes"
	"github.com/gophercloud/gophercloud/v2/openstack/sharedfilesystems/v2/sharetypes"
)

// StorageTypes are the Cinder volume types and Manila share types the
// cluster's project sees (names, sorted), and the default of each ("" when
// the cloud has none or lacks the service).
type StorageTypes struct {
	Volume        []string
	DefaultVolume string
	Share         []string
	DefaultShare  string
	// HasCinder and HasManila report whether the catalog lists the service.
	HasCinder, HasManila bool
}

// StorageTypes lists, with the cluster's own application credential, the
// volume types (and, when shares, the share types) its workload cluster's
// StorageClasses are made of. It shares the sweeper's authentication; it
// deletes nothing.
func (s *Sweeper) StorageTypes(ctx context.Context, cloud Cloud, shares bool) (StorageTypes, error) {
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return StorageTypes{}, err
	}
	eo := gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)}
	var out StorageTypes
	var nf *gophercloud.ErrEndpointNotFound
	bs, err := openstack.NewBlockStorageV3(provider, eo)
	switch {
	case errors.As(err, &nf):
	case err != nil:
		return out, fmt.Errorf("cloudsweep: block-storage endpoint: %w", err)
	default:
		out.HasCinder = true
		pages, err := volumetypes.List(bs, volumetypes.ListOpts{}).AllPages(ctx)
		if err != nil {
			return out, fmt.Errorf("cloudsweep: list volume types: %w", err)
		}
		vts, err := volumetypes.ExtractVolumeTypes(pages)
		if err != nil {
			return out, fmt.Errorf("cloudsweep: list volume types: %w", err)
		}
		for _, vt := range vts {
			out.Volume = append(out.Volume, vt.Name)
		}
		sort.Strings(out.Volume)
		def, err := volumetypes.Get(ctx, bs, "default").Extract()
		switch {
		case notFound(err): // no default type configured
		case err != nil:
			return out, fmt.Errorf("cloudsweep: default volume type: %w", err)
		default:
			out.DefaultVolume = def.Name
		}
	}
	if !shares {
		return out, nil
	}
	sfs, err := openstack.NewSharedFileSystemV2(provider, eo)
	switch {
	case errors.As(err, &nf):
		return out, nil
	case err != nil:
		return out, fmt.Errorf("cloudsweep: shared-file-system endpoint: %w", err)
	}
	out.HasManila = true
	pages, err := sharetypes.List(sfs, sharetypes.ListOpts{}).AllPages(ctx)
	if err != nil {
		return out, fmt.Errorf("cloudsweep: list share types: %w", err)
	}
	sts, err := sharetypes.ExtractShareTypes(pages)
	if err != nil {
		return out, fmt.Errorf("cloudsweep: list share types: %w", err)
	}
	for _, st := range sts {
		out.Share = append(out.Share, st.Name)
	}
	sort.Strings(out.Share)
	def, err := sharetypes.GetDefault(ctx, sfs).Extract()
	switch {
	case notFound(err):
	case err != nil:
		return out, fmt.Errorf("cloudsweep: default share type: %w", err)
	default:
		out.DefaultShare = def.Name
	}
	return out, nil
}
