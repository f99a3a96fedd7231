package capi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// ImageLookup reads a Glance image's properties with the cluster's
// credential. cloudsweep.Sweeper implements it.
type ImageLookup interface {
	Image(ctx context.Context, cloud cloudsweep.Cloud, idOrName string) (cloudsweep.Image, error)
}

var _ ImageLookup = (*cloudsweep.Sweeper)(nil)

// ServerGroupDeleter deletes Nova server groups by name; a ServerGroups
// dependency that implements it (cloudsweep.Sweeper does) has a deleted
// nodegroup's group deleted with it.
type ServerGroupDeleter interface {
	DeleteServerGroups(ctx context.Context, cloud cloudsweep.Cloud, names []string) (int, error)
}

var _ ServerGroupDeleter = (*cloudsweep.Sweeper)(nil)

// cloudCheck selects what an apply checks in the cloud before it writes:
// the flavors' minimum sizes and the images' properties, of every
// nodegroup (all) or of one (ng). Create and upgrade check all, a
// nodegroup create its own; resizes, updates and nodegroup updates check
// nothing (as magnum-capi-helm: an image rotated out of Glance or a
// minimum raised later does not block scaling what exists).
type cloudCheck struct {
	all bool
	ng  *objects.NodeGroup
}

// annotationImageWarnings holds, on the Cluster, the warnings of the last
// image check (an image without kube_version, a patch release other than
// kube_tag's), which the status sync appends to status_reason with the
// label warnings. Applies that check nothing keep it.
const annotationImageWarnings = "magnum.openstack.org/image-warnings"

// imageTTL is how long an image looked up stays cached: a name may move to
// a new image, and properties may be corrected.
const imageTTL = 10 * time.Minute

// checkCloud runs the checks ck selects, and records the image warnings in
// ann (none: removed). A flavor below [capi_driver] min_flavor_ram_mb or
// min_flavor_vcpus, a flavor or image that does not exist, and an image
// whose os_distro the driver does not bootstrap or whose kube_version is
// another minor than kube_tag's are InvalidParameterValue; a cloud that
// cannot be asked fails the operation with its error.
func (d *Driver) checkCloud(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, ngs []*objects.NodeGroup,
	l Labels, r ref, identityRef string, ck cloudCheck, ann map[string]string) error {
	if !ck.all && ck.ng == nil {
		return nil
	}
	if t == nil {
		t = &objects.ClusterTemplate{}
	}
	checkFlavors := d.deps.Flavors != nil && (d.opts.MinFlavorRAMMiB > 0 || d.opts.MinFlavorVCPUs > 0)
	if !checkFlavors && d.deps.Images == nil {
		return nil
	}
	var scope []*objects.NodeGroup
	for _, ng := range ngs {
		if ng.Status == objects.DeleteInProgress || ng.Status == objects.DeleteComplete {
			continue
		}
		if ck.all || (ng.UUID != "" && ng.UUID == ck.ng.UUID) || ng.Name == ck.ng.Name {
			scope = append(scope, ng)
		}
	}
	if len(scope) == 0 {
		return nil
	}
	cloud, err := d.clusterCloud(ctx, c, r, identityRef)
	if err != nil {
		return fmt.Errorf("capi: the cluster's flavors and images cannot be checked: %w", err)
	}
	var warnings []string
	seenImages := map[string]bool{}
	for _, ng := range scope {
		flavor := firstNonEmpty(ng.FlavorID, c.FlavorID, t.FlavorID)
		image := firstNonEmpty(ng.ImageID, t.ImageID)
		if ng.Role == objects.RoleMaster {
			flavor = firstNonEmpty(ng.FlavorID, c.MasterFlavorID, t.MasterFlavorID)
		}
		if checkFlavors && flavor != "" {
			if err := d.checkFlavor(ctx, cloud, ng, flavor); err != nil {
				return err
			}
		}
		if d.deps.Images != nil && image != "" && !seenImages[image] {
			seenImages[image] = true
			w, err := d.checkImage(ctx, cloud, image, l.String("kube_tag"))
			if err != nil {
				return err
			}
			warnings = append(warnings, w...)
		}
	}
	if ck.all || len(warnings) > 0 {
		// A nodegroup's check adds to the cluster's warnings, never
		// clears those of other images.
		prev := []string{}
		if !ck.all && ann[annotationImageWarnings] != "" {
			prev = strings.Split(ann[annotationImageWarnings], "; ")
		}
		for _, w := range warnings {
			if !slices.Contains(prev, w) {
				prev = append(prev, w)
			}
		}
		if len(prev) == 0 {
			delete(ann, annotationImageWarnings)
		} else {
			ann[annotationImageWarnings] = strings.Join(prev, "; ")
			d.log.WarnContext(ctx, "cluster images", append(d.logAttrs(ctx, c), "warning", ann[annotationImageWarnings])...)
		}
	}
	return nil
}

// checkFlavor refuses a flavor smaller than the minimum sizes, as
// magnum-capi-helm's [capi_helm] minimum_flavor_ram and
// minimum_flavor_vcpus do.
func (d *Driver) checkFlavor(ctx context.Context, cloud cloudsweep.Cloud, ng *objects.NodeGroup, flavor string) error {
	k := flavorKey{cloud.AuthURL, cloud.Region, cloud.ApplicationCredentialID, flavor}
	f, ok := d.flavors.get(k, d.now())
	if !ok {
		var err error
		if f, err = d.deps.Flavors.Flavor(ctx, cloud, flavor); err != nil {
			if errors.Is(err, cloudsweep.ErrNotFound) {
				return invalid("Flavor %s of nodegroup %s does not exist in the cluster's project.", flavor, ng.Name)
			}
			return fmt.Errorf("capi: flavor %s of nodegroup %s: %w", flavor, ng.Name, err)
		}
		d.flavors.put(k, f, d.now())
	}
	if minRAM := d.opts.MinFlavorRAMMiB; minRAM > 0 && f.RAMMiB < minRAM {
		return invalid("Flavor %s of nodegroup %s does not have enough RAM to run Kubernetes: %d MB, minimum %d MB.",
			flavor, ng.Name, f.RAMMiB, minRAM)
	}
	if minCPU := d.opts.MinFlavorVCPUs; minCPU > 0 && f.VCPUs < minCPU {
		return invalid("Flavor %s of nodegroup %s does not have enough vCPUs to run Kubernetes: %d, minimum %d.",
			flavor, ng.Name, f.VCPUs, minCPU)
	}
	return nil
}

// checkImage checks an image's os_distro and kube_version properties
// against the driver and kubeTag, and returns the warnings about it:
//   - os_distro must be set (Magnum requires it of a template's image) and
//     be one the driver bootstraps (its os keys, without flatcar);
//   - kube_version, when set (magnum-capi-helm requires it, image-builder's
//     images carry it), must be kube_tag's minor: the image's kubeadm and
//     kubelet are that version, and kubeadm cannot set up or join a control
//     plane of another minor. Another patch release is accepted with a
//     warning (the kubelet stays at the image's); an image without it is
//     accepted with a warning (magnum-cluster-api's images need not carry
//     it), as nothing can tell its version.
func (d *Driver) checkImage(ctx context.Context, cloud cloudsweep.Cloud, image, kubeTag string) ([]string, error) {
	img, err := d.image(ctx, cloud, image)
	if err != nil {
		if errors.Is(err, cloudsweep.ErrNotFound) {
			return nil, invalid("Image %s does not exist in the cluster's project.", image)
		}
		return nil, fmt.Errorf("capi: image %s: %w", image, err)
	}
	distro := strings.ToLower(img.OSDistro)
	provided := slices.DeleteFunc(slices.Clone(d.opts.OSDistros), func(s string) bool { return s == "flatcar" })
	switch {
	case distro == "":
		return nil, invalid("Image %s does not have an os_distro property.", image)
	case !slices.Contains(provided, distro):
		return nil, invalid("Image %s has os_distro %s; the Cluster API driver bootstraps %s.", image, img.OSDistro,
			strings.Join(provided, ", "))
	}
	kv := img.KubeVersion
	if kv == "" {
		return []string{fmt.Sprintf("image %s has no kube_version property: its Kubernetes version cannot be checked against kube_tag %s", image, kubeTag)}, nil
	}
	if !strings.HasPrefix(kv, "v") {
		kv = "v" + kv
	}
	iMaj, iMin, _, ok := parseVersion(kv)
	tMaj, tMin, _, tok := parseVersion(kubeTag)
	switch {
	case !ok:
		return nil, invalid("Image %s has kube_version %q, which is not a Kubernetes version (v1.33.4).", image, img.KubeVersion)
	case !tok:
		return nil, nil // kube_tag is checked by the label schema
	case iMaj != tMaj || iMin != tMin:
		return nil, invalid("Image %s holds Kubernetes %s (its kube_version), not the minor of kube_tag %s: use an image of v%d.%d or a kube_tag of v%d.%d.",
			image, kv, kubeTag, tMaj, tMin, iMaj, iMin)
	case kv != kubeTag:
		return []string{fmt.Sprintf("image %s holds Kubernetes %s, kube_tag is %s: the nodes' kubelet stays at %s", image, kv, kubeTag, kv)}, nil
	}
	return nil, nil
}

// image looks an image up, cached for imageTTL.
func (d *Driver) image(ctx context.Context, cloud cloudsweep.Cloud, image string) (cloudsweep.Image, error) {
	k := flavorKey{cloud.AuthURL, cloud.Region, cloud.ApplicationCredentialID, "image:" + image}
	if img, ok := d.images.get(k, d.now()); ok {
		return img, nil
	}
	img, err := d.deps.Images.Image(ctx, cloud, image)
	if err != nil {
		return img, err
	}
	d.images.put(k, img, d.now())
	return img, nil
}

// deleteNodeGroupServerGroup deletes a deleted nodegroup's Nova server
// group (the control plane's and the other nodegroups' stay). Failing is
// logged, not an error: the sweep at the cluster's delete removes every
// group of the cluster by name prefix.
func (d *Driver) deleteNodeGroupServerGroup(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) {
	del, ok := d.deps.ServerGroups.(ServerGroupDeleter)
	r, hasRef := refOf(c)
	if !ok || !hasRef || ng.Role == objects.RoleMaster {
		return
	}
	current, err := d.liveCluster(ctx, r)
	if err != nil {
		d.log.WarnContext(ctx, "the deleted nodegroup's server group stays until the cluster is deleted: the Cluster cannot be read",
			append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "error", err.Error())...)
		return
	}
	if current.Spec.Topology.ClassRef.Name == "" {
		return
	}
	declared, err := d.classes.variables(strings.TrimPrefix(current.Spec.Topology.ClassRef.Name, "magnum-"))
	if err != nil {
		d.log.WarnContext(ctx, "the deleted nodegroup's server group stays until the cluster is deleted: its ClusterClass is not known",
			append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "class", current.Spec.Topology.ClassRef.Name, "error", err.Error())...)
		return
	}
	if !declared["workerServerGroup"] {
		return
	}
	identityRef := firstNonEmpty(ptr(variableString(current, "identityRefName")), ptr(credentialSecretName(r.Name)))
	name := serverGroupPrefix(c) + mdNameFor(ng)
	cloud, err := d.clusterCloud(ctx, c, r, identityRef)
	n := 0
	if err == nil {
		n, err = del.DeleteServerGroups(ctx, cloud, []string{name})
	}
	if err != nil {
		d.log.WarnContext(ctx, "the deleted nodegroup's server group stays until the cluster is deleted",
			append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "server_group", name, "error", err.Error())...)
		return
	}
	if n == 0 {
		return
	}
	d.log.InfoContext(ctx, "nodegroup server group deleted", append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "server_group", name)...)
}
