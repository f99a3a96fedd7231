package cloudsweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// An image is found by id, else by its unique name, with its os_distro and
// kube_version properties; a missing one wraps ErrNotFound, an ambiguous
// name is an error naming the count.
func TestImageByIDOrNameWithItsProperties(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddImage(cloudsweeptest.Image{ID: "img-1", Name: "ubuntu-2404-kube-v1.33.4",
		Properties: map[string]string{"os_distro": "ubuntu", "kube_version": "v1.33.4"}})
	fake.AddImage(cloudsweeptest.Image{ID: "img-2", Name: "bare"})
	fake.AddImage(cloudsweeptest.Image{ID: "img-3", Name: "twice"})
	fake.AddImage(cloudsweeptest.Image{ID: "img-4", Name: "twice"})
	s := cloudsweep.New(0)
	ctx := context.Background()
	want := cloudsweep.Image{ID: "img-1", Name: "ubuntu-2404-kube-v1.33.4", OSDistro: "ubuntu", KubeVersion: "v1.33.4"}
	for _, key := range []string{"img-1", "ubuntu-2404-kube-v1.33.4"} {
		img, err := s.Image(ctx, cloudOf(fake), key)
		if err != nil || img != want {
			t.Fatalf("%s: %+v, %v", key, img, err)
		}
	}
	img, err := s.Image(ctx, cloudOf(fake), "bare")
	if err != nil || img != (cloudsweep.Image{ID: "img-2", Name: "bare"}) {
		t.Fatalf("bare: %+v, %v", img, err)
	}
	if _, err := s.Image(ctx, cloudOf(fake), "nope"); !errors.Is(err, cloudsweep.ErrNotFound) {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := s.Image(ctx, cloudOf(fake), "twice"); err == nil || errors.Is(err, cloudsweep.ErrNotFound) || !strings.Contains(err.Error(), "2 images") {
		t.Fatalf("ambiguous name: %v", err)
	}
}

// DeleteServerGroups deletes the groups of the names given, and only those.
func TestDeleteServerGroupsByName(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddServerGroup(cloudsweeptest.ServerGroup{ID: "sg-1", Name: "magnum-u1-ng1", Policies: []string{"soft-anti-affinity"}})
	fake.AddServerGroup(cloudsweeptest.ServerGroup{ID: "sg-2", Name: "magnum-u1-ng2", Policies: []string{"soft-anti-affinity"}})
	s := cloudsweep.New(0)
	n, err := s.DeleteServerGroups(context.Background(), cloudOf(fake), []string{"magnum-u1-ng1", "magnum-u1-gone"})
	if err != nil || n != 1 {
		t.Fatalf("%d, %v", n, err)
	}
	if left := fake.ServerGroups(); len(left) != 1 || left[0].ID != "sg-2" {
		t.Errorf("left %v", left)
	}
}
