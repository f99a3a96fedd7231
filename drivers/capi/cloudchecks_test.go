package capi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// checkedEnv is an env whose driver checks flavors (minimum 2048 MB, 2
// vCPUs) and images in a fake cloud holding the newCluster template's
// flavors and image img-1 (ubuntu, v1.33.4), and makes server groups.
func checkedEnv(t *testing.T) (*env, *cloudsweeptest.Cloud) {
	cloud := cloudsweeptest.New(t)
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 40})
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 20})
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-tiny", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1})
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-onecpu", Name: "c1.onecpu", VCPUs: 1, RAM: 4096, Disk: 20})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-1", Name: "ubuntu-2404-kube-v1.33.4",
		Properties: map[string]string{"os_distro": "ubuntu", "kube_version": "v1.33.4"}})
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour, MinFlavorRAMMiB: 2048, MinFlavorVCPUs: 2}, nil, func(e *env, d *Deps) {
		e.creds.cloud = cloud
		sw := cloudsweep.New(0)
		d.Sweeper, d.ServerGroups, d.Flavors, d.Images = sw, sw, sw, sw
	})
	return e, cloud
}

func isInvalid(err error, want string) bool {
	return errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) && strings.Contains(err.Error(), want)
}

// A create whose master or worker flavor is below the minimum sizes is
// refused with InvalidParameterValue naming the flavor and the minimum,
// and writes no Cluster; so is a nodegroup created with a flavor below
// them, while the cluster stays as it was. A resize and a nodegroup update
// check nothing.
func TestFlavorMinimaEnforced(t *testing.T) {
	e, _ := checkedEnv(t)
	ctx := context.Background()
	c := e.newCluster("tiny-master", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	e.store.templates[deref(c.ClusterTemplateID)].MasterFlavorID = ptr("m1.tiny")
	err := e.create(ctx, c, 60)
	if !isInvalid(err, "Flavor m1.tiny of nodegroup default-master does not have enough RAM to run Kubernetes: 512 MB, minimum 2048 MB.") {
		t.Fatalf("tiny master: %v", err)
	}
	r, _ := refOf(c)
	if _, err := e.d.liveCluster(ctx, r); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused create wrote its Cluster: %v", err)
	}

	c = e.newCluster("onecpu-worker", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1, FlavorID: ptr("c1.onecpu")})
	if err := e.create(ctx, c, 60); !isInvalid(err, "Flavor c1.onecpu of nodegroup default-worker does not have enough vCPUs to run Kubernetes: 1, minimum 2.") {
		t.Fatalf("one-vCPU worker: %v", err)
	}
	c = e.newCluster("ghost-flavor", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1, FlavorID: ptr("no.such")})
	if err := e.create(ctx, c, 60); !isInvalid(err, "Flavor no.such of nodegroup default-worker does not exist") {
		t.Fatalf("missing flavor: %v", err)
	}

	c = e.newCluster("sized", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ = refOf(c)
	before := e.getCluster(t, r).Generation
	small := &objects.NodeGroup{UUID: "ng-small", Name: "small", Role: objects.RoleWorker, NodeCount: 1, ClusterID: *c.UUID,
		FlavorID: ptr("m1.tiny"), Status: objects.CreateInProgress}
	if err := e.createNG(ctx, c, small); !isInvalid(err, "Flavor m1.tiny of nodegroup small") {
		t.Fatalf("nodegroup create with a tiny flavor: %v", err)
	}
	if g := e.getCluster(t, r).Generation; g != before {
		t.Errorf("a refused nodegroup create wrote the Cluster: generation %d -> %d", before, g)
	}
	big := &objects.NodeGroup{UUID: "ng-big", Name: "big", Role: objects.RoleWorker, NodeCount: 1, ClusterID: *c.UUID,
		FlavorID: ptr("m1.large"), Status: objects.CreateInProgress}
	if err := e.createNG(ctx, c, big); err != nil {
		t.Fatal(err)
	}
	// A resize checks nothing: a minimum raised later does not block it.
	e.d.opts.MinFlavorRAMMiB = 16384
	if err := e.resize(ctx, c, 2, nil, big); err != nil {
		t.Fatalf("resize under a raised minimum: %v", err)
	}
	// Nor does a nodegroup update (node_count, min/max_node_count, as
	// magnum-capi-helm): neither that minimum nor its image gone from
	// Glance blocks scaling it.
	big.Status, big.NodeCount, big.ImageID = objects.UpdateInProgress, 3, ptr("img-gone")
	if err := e.updateNG(ctx, c, big); err != nil {
		t.Fatalf("nodegroup update under a raised minimum, its image gone: %v", err)
	}
	replicas := map[string]int32{}
	for _, md := range e.getCluster(t, r).Spec.Topology.Workers.MachineDeployments {
		replicas[md.Name] = deref(md.Replicas)
	}
	if replicas["big"] != 3 {
		t.Errorf("after the nodegroup update, MachineDeployment replicas %v, want big 3", replicas)
	}
}

// The image's os_distro must be one the driver bootstraps and its
// kube_version kube_tag's minor; an image without kube_version, and one of
// another patch release, are accepted with a warning in status_reason.
func TestImagePropertiesCheckedAgainstKubeTag(t *testing.T) {
	e, cloud := checkedEnv(t)
	ctx := context.Background()
	cloud.AddImage(cloudsweeptest.Image{ID: "img-132", Properties: map[string]string{"os_distro": "ubuntu", "kube_version": "1.32.8"}})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-coreos", Properties: map[string]string{"os_distro": "fedora-coreos", "kube_version": "v1.33.4"}})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-flatcar", Properties: map[string]string{"os_distro": "flatcar", "kube_version": "v1.33.4"}})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-nodistro", Properties: map[string]string{"kube_version": "v1.33.4"}})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-noversion", Name: "plain-ubuntu", Properties: map[string]string{"os_distro": "ubuntu"}})
	cloud.AddImage(cloudsweeptest.Image{ID: "img-patch", Properties: map[string]string{"os_distro": "Ubuntu", "kube_version": "v1.33.2"}})

	withImage := func(name, image string) *objects.Cluster {
		c := e.newCluster(name, map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
		e.store.templates[deref(c.ClusterTemplateID)].ImageID = ptr(image)
		return c
	}
	for image, want := range map[string]string{
		"img-132":      "Image img-132 holds Kubernetes v1.32.8 (its kube_version), not the minor of kube_tag v1.33.4",
		"img-coreos":   "Image img-coreos has os_distro fedora-coreos; the Cluster API driver bootstraps ubuntu, rockylinux.",
		"img-flatcar":  "Image img-flatcar has os_distro flatcar",
		"img-nodistro": "Image img-nodistro does not have an os_distro property.",
		"img-gone":     "Image img-gone does not exist",
	} {
		c := withImage("img-"+strings.TrimPrefix(image, "img-"), image)
		if err := e.create(ctx, c, 60); !isInvalid(err, want) {
			t.Errorf("%s: %v, want InvalidParameterValue %q", image, err, want)
		}
	}

	// By name, without kube_version: a warning that names the image.
	c := withImage("unversioned", "plain-ubuntu")
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	want := "image plain-ubuntu has no kube_version property: its Kubernetes version cannot be checked against kube_tag v1.33.4"
	if got := e.getCluster(t, r).Annotations[annotationImageWarnings]; got != want {
		t.Fatalf("annotation %q, want %q", got, want)
	}
	e.syncUntil(t, c, objects.CreateInProgress, "(warning: "+want+")")
	// An update checks nothing and keeps the warning.
	if _, err := e.d.UpdateCluster(ctx, e.request(c)); err != nil {
		t.Fatal(err)
	}
	if got := e.getCluster(t, r).Annotations[annotationImageWarnings]; got != want {
		t.Errorf("after an update: annotation %q", got)
	}

	c = withImage("patch", "img-patch")
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ = refOf(c)
	if got := e.getCluster(t, r).Annotations[annotationImageWarnings]; got != "image img-patch holds Kubernetes v1.33.2, kube_tag is v1.33.4: the nodes' kubelet stays at v1.33.2" {
		t.Errorf("patch release: annotation %q", got)
	}

	// A matching image leaves no warning.
	c = withImage("matching", "img-1")
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ = refOf(c)
	if got, ok := e.getCluster(t, r).Annotations[annotationImageWarnings]; ok {
		t.Errorf("matching image: annotation %q", got)
	}
}

// An upgrade checks the new template's image against the new kube_tag:
// an image of the old minor is refused before anything is written, one of
// the new minor is accepted.
func TestUpgradeChecksTheNewTemplatesImage(t *testing.T) {
	e, cloud := checkedEnv(t)
	ctx := context.Background()
	cloud.AddImage(cloudsweeptest.Image{ID: "img-134", Properties: map[string]string{"os_distro": "ubuntu", "kube_version": "v1.34.1"}})
	c := e.newCluster("upgraded", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	before := e.getCluster(t, r)
	old := e.store.templates[deref(c.ClusterTemplateID)]
	stale := objects.Clone(old)
	stale.UUID, stale.Labels = ptr("tmpl-stale"), map[string]string{"kube_tag": "v1.34.1"}
	err := e.upgrade(ctx, c, stale, 1, nil)
	if !isInvalid(err, "Image img-1 holds Kubernetes v1.33.4 (its kube_version), not the minor of kube_tag v1.34.1") {
		t.Fatalf("upgrade to a template whose image is the old minor: %v", err)
	}
	if after := e.getCluster(t, r); after.Generation != before.Generation || after.Spec.Topology.Version != "v1.33.4" {
		t.Errorf("a refused upgrade wrote the Cluster: %s, generation %d -> %d", after.Spec.Topology.Version, before.Generation, after.Generation)
	}
	next := objects.Clone(old)
	next.UUID, next.ImageID, next.Labels = ptr("tmpl-next"), ptr("img-134"), map[string]string{"kube_tag": "v1.34.1"}
	if err := e.upgrade(ctx, c, next, 1, nil); err != nil {
		t.Fatal(err)
	}
	if v := e.getCluster(t, r).Spec.Topology.Version; v != "v1.34.1" {
		t.Errorf("version %s after the upgrade", v)
	}
}

// Deleting a nodegroup deletes its server group; the control plane's and
// the other nodegroups' stay.
func TestDeletedNodeGroupsServerGroupGoesWithIt(t *testing.T) {
	e, cloud := checkedEnv(t)
	ctx := context.Background()
	c := e.newCluster("grouped", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1}, &objects.NodeGroup{Name: "gpu", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	prefix := "magnum-" + *c.UUID + "-"
	names := func() map[string]bool {
		out := map[string]bool{}
		for _, g := range cloud.ServerGroups() {
			out[g.Name] = true
		}
		return out
	}
	if got := names(); len(got) != 3 || !got[prefix+"gpu"] {
		t.Fatalf("server groups %v", got)
	}
	var gpu *objects.NodeGroup
	for _, ng := range e.nodeGroups(c) {
		if ng.Name == "gpu" {
			gpu = ng
		}
	}
	if err := e.deleteNG(ctx, c, gpu); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 2 || got[prefix+"gpu"] || !got[prefix+"control-plane"] || !got[prefix+"default-worker"] {
		t.Errorf("server groups after the nodegroup's delete: %v", got)
	}
}
