package addons

import (
	"context"
	"slices"
	"testing"
)

func isDefaultClass(o Object) string {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	s, _ := ann[annotationDefaultClass].(string)
	return s
}

// TestStorageClassPerVolumeType: with the real openstack-cinder-csi chart,
// one StorageClass per volume type, the cloud's default type's the default
// class and the chart's not; without known types, the chart's
// csi-cinder-sc-delete is the default and nothing else is added.
func TestStorageClassPerVolumeType(t *testing.T) {
	_, s := realRepo(t)
	s.Builtin = []string{"cinder-csi"}
	s.Versions = map[string]string{CinderCSI: "2.34.0"}
	render := func(types []string, def string) []Object {
		t.Helper()
		cl := testCluster(labels{})
		cl.VolumeTypes, cl.DefaultVolumeType = types, def
		set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
		if err != nil {
			t.Fatal(err)
		}
		return byName(t, set, CinderCSI).Objects
	}
	objs := render([]string{"__DEFAULT__", "SSD Fast", "hdd"}, "SSD Fast")
	for name, want := range map[string]string{"cinder-default": "false", "cinder-ssd-fast": "true", "cinder-hdd": "false", "csi-cinder-sc-delete": "false"} {
		sc := find(objs, "StorageClass", name)
		if sc == nil {
			t.Errorf("no StorageClass %s", name)
			continue
		}
		if got := isDefaultClass(sc); (got == "true") != (want == "true") {
			t.Errorf("%s default %q, want %q", name, got, want)
		}
	}
	if sc := find(objs, "StorageClass", "cinder-ssd-fast"); sc != nil {
		if sc["provisioner"] != "cinder.csi.openstack.org" || sc["parameters"].(map[string]any)["type"] != "SSD Fast" || sc["allowVolumeExpansion"] != true {
			t.Errorf("cinder-ssd-fast %v", sc)
		}
	}
	defaults := 0
	for _, o := range objs {
		if o["kind"] == "StorageClass" && isDefaultClass(o) == "true" {
			defaults++
		}
	}
	if defaults != 1 {
		t.Errorf("%d default StorageClasses", defaults)
	}

	objs = render(nil, "")
	if got := isDefaultClass(find(objs, "StorageClass", "csi-cinder-sc-delete")); got != "true" {
		t.Errorf("without volume types csi-cinder-sc-delete default %q", got)
	}
	if find(objs, "StorageClass", "cinder-hdd") != nil {
		t.Error("a volume-type class without volume types")
	}
	// A default type the project does not see leaves the chart's default.
	objs = render([]string{"hdd"}, "private")
	if got := isDefaultClass(find(objs, "StorageClass", "csi-cinder-sc-delete")); got != "true" {
		t.Errorf("unseen default type: csi-cinder-sc-delete default %q", got)
	}
	if VolumeTypeClass("--") != "" {
		t.Error("a type name of no letters has a class")
	}
}

// TestStorageClassPerShareType: with the real openstack-manila-csi chart,
// one NFS StorageClass per share type, none default, whose secrets are the
// cluster's credential in kube-system/manila-csi-credentials.
func TestStorageClassPerShareType(t *testing.T) {
	_, s := realRepo(t)
	s.Builtin = []string{"manila-csi"}
	s.Versions = map[string]string{ManilaCSI: "2.34.0"}
	cl := testCluster(labels{"manila_csi_enabled": "true"})
	cl.ShareTypes = []string{"default", "CephFS Gold"}
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
	if err != nil {
		t.Fatal(err)
	}
	objs := byName(t, set, ManilaCSI).Objects
	sc := find(objs, "StorageClass", "manila-cephfs-gold")
	if sc == nil || find(objs, "StorageClass", "manila-default") == nil {
		t.Fatal("no StorageClass per share type")
	}
	p := sc["parameters"].(map[string]any)
	if sc["provisioner"] != "nfs.manila.csi.openstack.org" || p["type"] != "CephFS Gold" ||
		p["csi.storage.k8s.io/node-publish-secret-name"] != "manila-csi-credentials" || isDefaultClass(sc) == "true" {
		t.Errorf("manila-cephfs-gold %v", sc)
	}
	sec := find(objs, "Secret", "manila-csi-credentials")
	if sec == nil {
		t.Fatal("no credential Secret")
	}
	data := sec["stringData"].(map[string]any)
	if data["os-applicationCredentialID"] != "cred-id" || data["os-authURL"] != "https://keystone.example/v3" || data["os-certAuthority"] == nil {
		t.Errorf("credential Secret %v", data)
	}
	if sec["metadata"].(map[string]any)["namespace"] != "kube-system" {
		t.Errorf("credential Secret namespace %v", sec["metadata"])
	}
	cl.ShareTypes = nil
	set, err = Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
	if err != nil {
		t.Fatal(err)
	}
	if find(byName(t, set, ManilaCSI).Objects, "Secret", "manila-csi-credentials") != nil {
		t.Error("a credential Secret without share types")
	}
}

// TestTypeClassesKeepTheFirstOfOneName: two types whose names fold to one
// class name give one class, the first type's; a type with no letters or
// digits gives none; a loop that stops early is not called again.
func TestTypeClassesKeepTheFirstOfOneName(t *testing.T) {
	var got []string
	for name, typ := range typeClasses([]string{"SSD Fast", "--", "ssd_fast", "HDD"}, ShareTypeClass) {
		got = append(got, name+"="+typ)
	}
	if want := []string{"manila-ssd-fast=SSD Fast", "manila-hdd=HDD"}; !slices.Equal(got, want) {
		t.Errorf("classes %q, want %q", got, want)
	}
	for name := range typeClasses([]string{"a", "b"}, VolumeTypeClass) {
		if name != "cinder-a" {
			t.Errorf("yielded %s after the loop stopped", name)
		}
		break
	}
}
