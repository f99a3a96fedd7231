package cloudsweep

import (
	"context"
	"errors"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
)

// ErrNotFound is wrapped by the errors of lookups (a flavor, an image)
// that found nothing of that id or name.
var ErrNotFound = errors.New("not found")

// Image is what the driver reads of a Glance image: the properties the
// Cluster API images carry.
type Image struct {
	ID, Name string
	// OSDistro is the os_distro property ("" when unset).
	OSDistro string
	// KubeVersion is the kube_version property image-builder's and the
	// Cluster API drivers' images carry ("" when unset), e.g. v1.33.4.
	KubeVersion string
}

// Image looks an image up by id, else by name (exactly one image of that
// name), with cloud's credential.
func (s *Sweeper) Image(ctx context.Context, cloud Cloud, idOrName string) (Image, error) {
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return Image{}, err
	}
	ic, err := openstack.NewImageV2(provider, gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)})
	if err != nil {
		return Image{}, fmt.Errorf("cloudsweep: image endpoint: %w", err)
	}
	img, err := images.Get(ctx, ic, idOrName).Extract()
	if err != nil && !notFound(err) {
		return Image{}, fmt.Errorf("cloudsweep: image %s: %w", idOrName, err)
	}
	if err != nil {
		pages, err := images.List(ic, images.ListOpts{Name: idOrName}).AllPages(ctx)
		if err != nil {
			return Image{}, fmt.Errorf("cloudsweep: list images named %s: %w", idOrName, err)
		}
		all, err := images.ExtractImages(pages)
		if err != nil {
			return Image{}, fmt.Errorf("cloudsweep: list images named %s: %w", idOrName, err)
		}
		switch len(all) {
		case 0:
			return Image{}, fmt.Errorf("cloudsweep: no image %q: %w", idOrName, ErrNotFound)
		case 1:
			img = &all[0]
		default:
			return Image{}, fmt.Errorf("cloudsweep: %d images are named %q: use the image's id", len(all), idOrName)
		}
	}
	prop := func(k string) string {
		v, _ := img.Properties[k].(string)
		return v
	}
	return Image{ID: img.ID, Name: img.Name, OSDistro: prop("os_distro"), KubeVersion: prop("kube_version")}, nil
}
