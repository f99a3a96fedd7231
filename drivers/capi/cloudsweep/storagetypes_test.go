package cloudsweep_test

import (
	"context"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// StorageTypes lists Cinder's volume types and default and, when asked and
// the catalog has Manila, its share types and default; a cloud without a
// default type, or without Manila, is not an error.
func TestStorageTypes(t *testing.T) {
	ctx := context.Background()
	fake := cloudsweeptest.New(t)
	fake.SetVolumeTypes([]string{"ssd", "__DEFAULT__", "hdd"}, "ssd")
	s := cloudsweep.New(0)

	got, err := s.StorageTypes(ctx, cloudOf(fake), true)
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasCinder || !slices.Equal(got.Volume, []string{"__DEFAULT__", "hdd", "ssd"}) || got.DefaultVolume != "ssd" {
		t.Errorf("volume types %+v", got)
	}
	if got.HasManila || got.Share != nil {
		t.Errorf("share types without Manila: %+v", got)
	}

	fake.SetVolumeTypes([]string{"hdd"}, "")
	fake.SetShareTypes([]string{"cephfs", "default"}, "default")
	got, err = s.StorageTypes(ctx, cloudOf(fake), true)
	if err != nil {
		t.Fatal(err)
	}
	if got.DefaultVolume != "" || !got.HasManila || !slices.Equal(got.Share, []string{"cephfs", "default"}) || got.DefaultShare != "default" {
		t.Errorf("types %+v", got)
	}
	if got, err := s.StorageTypes(ctx, cloudOf(fake), false); err != nil || got.HasManila {
		t.Errorf("shares not asked: %+v, %v", got, err)
	}

	bad := cloudOf(fake)
	bad.ApplicationCredentialSecret = "wrong"
	if _, err := s.StorageTypes(ctx, bad, false); err == nil {
		t.Error("a refused credential listed types")
	}
}
