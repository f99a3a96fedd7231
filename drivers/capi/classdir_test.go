package capi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeBundle(t *testing.T, dir, file, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

const siteBundle = `apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevClusterTemplate
metadata: {name: site-cluster}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: magnum-%s}
spec: {}
`

// A bundle of the class directory replaces the embedded one of its
// version, a new version is offered beside the embedded ones, and the
// embedded bundles stay the default.
func TestClassDirBesideTheEmbeddedBundles(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, LatestClassVersion+".yaml", strings.ReplaceAll(siteBundle, "%s", LatestClassVersion))
	writeBundle(t, dir, "site-1.yaml", strings.ReplaceAll(siteBundle, "%s", "site-1"))
	writeBundle(t, dir, "README", "not a bundle")
	set, err := loadClasses(dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := set.bundle(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "DevClusterTemplate" || objs[1].GetName() != className(LatestClassVersion) {
		t.Fatalf("bundle %s from the directory: %v", LatestClassVersion, objs)
	}
	if _, err := set.bundle("site-1"); err != nil {
		t.Fatal(err)
	}
	for _, v := range ClassVersions() {
		if _, err := set.bundle(v); err != nil {
			t.Errorf("embedded version %s lost: %v", v, err)
		}
	}
	if err := (Options{ClassDir: dir, ClusterClassVersion: "site-1"}).Validate(); err != nil {
		t.Fatalf("a version of the directory: %v", err)
	}
	embedded, err := loadClasses("")
	if err != nil {
		t.Fatal(err)
	}
	if objs, _ := embedded.bundle(LatestClassVersion); len(objs) < 3 {
		t.Fatalf("without a directory the embedded bundle %s is used; got %d objects", LatestClassVersion, len(objs))
	}
}

// The directory's bundles are checked as the embedded ones are, and every
// error is reported at once, naming the file.
func TestClassDirRefusesBadBundles(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, "wrong-name.yaml", strings.ReplaceAll(siteBundle, "%s", "other"))
	writeBundle(t, dir, "two.yaml", strings.ReplaceAll(siteBundle, "%s", "two")+"---\n"+strings.ReplaceAll(siteBundle, "%s", "two"))
	writeBundle(t, dir, "Bad_Version.yaml", strings.ReplaceAll(siteBundle, "%s", "Bad_Version"))
	err := Options{ClassDir: dir}.Validate()
	if err == nil {
		t.Fatal("bad bundles accepted")
	}
	for _, want := range []string{
		`the ClusterClass is named "magnum-other", want "magnum-wrong-name"`, "wrong-name.yaml",
		"want one ClusterClass, found 2", "two.yaml",
		`version "Bad_Version" must be a DNS label`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	if err := (Options{ClassDir: filepath.Join(dir, "missing")}).Validate(); err == nil || !strings.Contains(err.Error(), "ClusterClass directory") {
		t.Fatalf("missing directory: %v", err)
	}
	if err := (Options{ClusterClassVersion: "site-1"}).Validate(); err == nil || !strings.Contains(err.Error(), `unknown ClusterClass version "site-1"`) {
		t.Fatalf("a version no bundle has: %v", err)
	}
}

// Without a RESTMapper, a kind beyond the released bundles' gets the
// plural its CRD conventionally has.
func TestResourceForOtherProvidersKinds(t *testing.T) {
	gvr, err := resourceFor("infrastructure.cluster.x-k8s.io/v1beta2", "DevMachineTemplate")
	if err != nil || gvr.Resource != "devmachinetemplates" || gvr.Group != "infrastructure.cluster.x-k8s.io" || gvr.Version != "v1beta2" {
		t.Fatalf("%v, %v", gvr, err)
	}
}
