package addons

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

// TestNFSNodePluginWithManila: with manila_csi_enabled the NFS node plugin
// (csi-driver-nfs) is delivered before the Manila CSI plugin, in
// kube-system, serving the socket Manila's node plugin forwards NFS mounts
// to, with one controller, no StorageClass and no snapshot controller, its
// images from the site's registry and its plugin's tag from
// nfs_csi_plugin_tag; without the label, or without the manila-csi kind,
// neither is; a site's repository and version apply. The csi-driver-nfs
// chart is the generated stand-in (addonstest.GeneratedNFSChart, with the
// real chart's value names): the real one is not rendered by any test, as
// its Go module is not served by the module proxy; the Manila chart is the
// real one.
func TestNFSNodePluginWithManila(t *testing.T) {
	repo := addonstest.NewRepo(t)
	repo.AddDir(t, filepath.Join(addonstest.ModuleDir(t, cpoModule), "charts/manila-csi-plugin"))
	repo.Add(t, addonstest.GeneratedNFSChart("4.11.0"), "")
	s := Settings{Repos: map[string]string{ManilaCSI: repo.Server.URL, NFSCSI: repo.Server.URL},
		Versions: map[string]string{ManilaCSI: "2.34.0"}, ImageRegistry: "mirror.example/site", Builtin: []string{"manila-csi"}}
	render := func(s Settings, l labels) []AddOn {
		t.Helper()
		set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(l))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}

	set := render(s, labels{"manila_csi_enabled": "true", "nfs_csi_plugin_tag": "v4.11.1"})
	if got, want := names(set), []string{"cloud-config", NFSCSI, ManilaCSI}; !slices.Equal(got, want) {
		t.Fatalf("add-ons %v, want %v", got, want)
	}
	nfs := byName(t, set, NFSCSI)
	if nfs.Chart != (ChartRef{Repo: repo.Server.URL, Chart: "csi-driver-nfs", Version: "4.11.0"}) {
		t.Errorf("chart %+v", nfs.Chart)
	}
	node := find(nfs.Objects, "DaemonSet", "csi-nfs-node")
	if node == nil || node["metadata"].(map[string]any)["namespace"] != "kube-system" {
		t.Fatalf("NFS node plugin DaemonSet %v", node)
	}
	sock := envValue(container(t, node, "node-driver-registrar"), "DRIVER_REG_SOCK_PATH")
	manila := find(byName(t, set, ManilaCSI).Objects, "DaemonSet", "manila-csi-openstack-manila-csi-nodeplugin")
	if manila == nil {
		t.Fatal("no Manila node plugin")
	}
	if fwd := envValue(container(t, manila, "nfs-nodeplugin"), "FWD_CSI_ENDPOINT"); sock != "/var/lib/kubelet/plugins/csi-nfsplugin/csi.sock" || fwd != "unix://"+sock {
		t.Errorf("the NFS node plugin serves %q, Manila forwards to %q", sock, fwd)
	}
	if ctrl := find(nfs.Objects, "Deployment", "csi-nfs-controller"); ctrl == nil || mustJSON(ctrl["spec"].(map[string]any)["replicas"]) != "1" {
		t.Errorf("NFS controller %v", ctrl)
	}
	for _, o := range nfs.Objects {
		if o["kind"] == "StorageClass" || objectName(o) == "snapshot-controller" {
			t.Errorf("csi-driver-nfs delivers %s/%s", o["kind"], objectName(o))
		}
	}
	var images []string
	for _, o := range nfs.Objects {
		for _, spec := range podSpecs(o) {
			for _, c := range spec["containers"].([]any) {
				images = append(images, c.(map[string]any)["image"].(string))
			}
		}
	}
	// Helm's install order: the DaemonSet, then the Deployment.
	if want := []string{"mirror.example/site/livenessprobe:v2.15.0", "mirror.example/site/csi-node-driver-registrar:v2.13.0",
		"mirror.example/site/nfsplugin:v4.11.1", "mirror.example/site/csi-provisioner:v5.2.0",
		"mirror.example/site/nfsplugin:v4.11.1"}; !slices.Equal(images, want) {
		t.Errorf("images %v, want %v", images, want)
	}

	// Without the label, or without the kind, neither add-on.
	if got := names(render(s, labels{})); !slices.Equal(got, []string{"cloud-config"}) {
		t.Errorf("without manila_csi_enabled: %v", got)
	}
	without := s
	without.Builtin = []string{"keystone-auth"}
	if got := names(render(without, labels{"manila_csi_enabled": "true"})); !slices.Equal(got, []string{"cloud-config", KeystoneAuth}) {
		t.Errorf("Builtin %v: %v", without.Builtin, got)
	}

	// A site's repository and version.
	site := addonstest.NewRepo(t)
	site.Add(t, addonstest.GeneratedNFSChart("4.12.1"), "")
	s.Repos = map[string]string{ManilaCSI: repo.Server.URL, NFSCSI: site.Server.URL}
	s.Versions = map[string]string{ManilaCSI: "2.34.0", NFSCSI: "4.12.1"}
	nfs = byName(t, render(s, labels{"manila_csi_enabled": "true"}), NFSCSI)
	if nfs.Chart.Repo != site.Server.URL || nfs.Chart.Version != "4.12.1" ||
		!strings.HasSuffix(container(t, find(nfs.Objects, "DaemonSet", "csi-nfs-node"), "nfs")["image"].(string), "/nfsplugin:v4.12.1") {
		t.Errorf("site override: chart %+v", nfs.Chart)
	}
}
