package addons

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The add-on names: keys of the per-add-on options and of Versions.
const (
	Calico        = "calico"
	Cilium        = "cilium"
	CloudProvider = "openstack-cloud-controller-manager"
	CinderCSI     = "cinder-csi"
	ManilaCSI     = "manila-csi"
	// NFSCSI is the NFS node plugin the Manila CSI plugin forwards NFS
	// mounts to: delivered with it (kind manila-csi), before it.
	NFSCSI        = "csi-driver-nfs"
	MetricsServer = "metrics-server"
)

// Names lists the built-in add-ons, in the order they are applied.
var Names = []string{Calico, Cilium, CloudProvider, CinderCSI, NFSCSI, ManilaCSI, MetricsServer}

// DefaultRepos are the upstream Helm repositories of the built-in add-ons.
var DefaultRepos = map[string]string{
	Calico:        "https://docs.tigera.io/calico/charts",
	Cilium:        "https://helm.cilium.io",
	CloudProvider: "https://kubernetes.github.io/cloud-provider-openstack",
	CinderCSI:     "https://kubernetes.github.io/cloud-provider-openstack",
	ManilaCSI:     "https://kubernetes.github.io/cloud-provider-openstack",
	// The one Helm repository upstream publishes the chart in.
	NFSCSI:        "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
	MetricsServer: "https://kubernetes-sigs.github.io/metrics-server",
}

// DefaultCharts are the chart names in those repositories.
var DefaultCharts = map[string]string{
	Calico:        "tigera-operator",
	Cilium:        "cilium",
	CloudProvider: "openstack-cloud-controller-manager",
	CinderCSI:     "openstack-cinder-csi",
	ManilaCSI:     "openstack-manila-csi",
	NFSCSI:        "csi-driver-nfs",
	MetricsServer: "metrics-server",
}

// Versions maps a Kubernetes minor ("1.33") to the chart version of each
// add-on: the cloud-provider-openstack charts follow the Kubernetes minor
// (2.<minor>.x supports 1.<minor>); the CNIs and metrics-server support a
// range of minors. A minor missing here takes the newest row at or below
// it, else the oldest row. The tests render every chart of the table from
// its upstream module except calico's: Calico's module is served at one
// commit only, whose tigera-operator chart is v3.28.5 (calicoModule in
// render_test.go). Upstream's v3.30 chart takes the same installation
// values and renders the same Installation and operator Deployment; it adds
// the Goldmane and Whisker custom resources (kept, as APIServer is), their
// CRDs, and no Namespace either.
//
// csi-driver-nfs: the compatibility table of kubernetes-csi/csi-driver-nfs's
// README gives its v4.11.0 (as v4.12 and v4.13) Kubernetes 1.21+, so one
// version serves every row. Its chart is not rendered by a test: its Go
// module is not served by the module proxy the tests take the other
// charts from (go mod download answers 403), and no third-party chart is
// copied into this repository; the tests render a stand-in with the real
// chart's value names (addonstest.GeneratedNFSChart).
var Versions = map[string]map[string]string{
	"1.31": {Calico: "v3.29.5", Cilium: "1.17.8", CloudProvider: "2.31.3", CinderCSI: "2.31.3", NFSCSI: "4.11.0", ManilaCSI: "2.31.3", MetricsServer: "3.12.2"},
	"1.32": {Calico: "v3.30.3", Cilium: "1.18.2", CloudProvider: "2.32.0", CinderCSI: "2.32.0", NFSCSI: "4.11.0", ManilaCSI: "2.32.0", MetricsServer: "3.12.2"},
	"1.33": {Calico: "v3.30.3", Cilium: "1.18.2", CloudProvider: "2.33.1", CinderCSI: "2.33.1", NFSCSI: "4.11.0", ManilaCSI: "2.33.1", MetricsServer: "3.12.2"},
	"1.34": {Calico: "v3.30.3", Cilium: "1.18.2", CloudProvider: "2.34.0", CinderCSI: "2.34.0", NFSCSI: "4.11.0", ManilaCSI: "2.34.0", MetricsServer: "3.12.2"},
}

// versionFor is the table's chart version of addon for Kubernetes kube.
func versionFor(addon, kube string) string {
	maj, minor, ok := minorOf(kube)
	if !ok {
		return ""
	}
	rows := make([]int, 0, len(Versions))
	for k := range Versions {
		if _, m, ok := minorOf("v" + k + ".0"); ok {
			rows = append(rows, m)
		}
	}
	slices.Sort(rows)
	pick := rows[0]
	for _, m := range rows {
		if m <= minor {
			pick = m
		}
	}
	return Versions[fmt.Sprintf("%d.%d", maj, pick)][addon]
}

func minorOf(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return maj, minor, err1 == nil && err2 == nil
}

// Settings are a site's add-on options.
type Settings struct {
	// Repos, Charts and Versions override, per add-on, the repository,
	// the chart name and the chart version (for every Kubernetes minor).
	Repos    map[string]string
	Charts   map[string]string
	Versions map[string]string
	// ImageRegistry, when set, replaces the registry and path of every
	// image of the built-in add-ons (an air-gapped mirror): image
	// quay.io/cilium/cilium:v1.18.2 becomes <ImageRegistry>/cilium:v1.18.2,
	// as Magnum's container_infra_prefix does.
	ImageRegistry string
	// ExtraDir holds an operator's own add-ons (see LoadExtra).
	ExtraDir string
	// Builtin lists the kinds of built-in add-ons delivered: "cni",
	// "cloud-provider", "cinder-csi", "manila-csi" (with csi-driver-nfs),
	// "metrics-server", "keystone-auth" (each still subject to its label);
	// nil means all. A site that installs its CNI another way (an image,
	// its own add-on) leaves it out.
	Builtin []string
}

// Builtin kinds.
var BuiltinKinds = []string{"cni", "cloud-provider", "cinder-csi", "manila-csi", "metrics-server", "keystone-auth"}

func (s Settings) wants(kind string) bool {
	return s.Builtin == nil || slices.Contains(s.Builtin, kind)
}

// Labels are the cluster's parsed labels (capi.Labels).
type Labels interface {
	String(name string) string
	Bool(name string) (bool, bool)
}

// Cluster is what a cluster's add-ons are rendered from.
type Cluster struct {
	// Name is the Cluster API Cluster's name (--cluster-name of the cloud
	// controller manager, --cluster of the CSI plugins: the names their
	// load balancers and volumes carry).
	Name        string
	KubeVersion string
	// PodCIDR is the Cluster's pod network.
	PodCIDR string
	Labels  Labels
	// Credential is the cluster's application credential, for the
	// cloud.conf of the cloud controller manager and the CSI plugins.
	Credential Credential
	// VolumeTypes are the Cinder volume types the project sees (nil when
	// not looked up: the chart's two classes only) and DefaultVolumeType
	// the cloud's default one ("" for none).
	VolumeTypes       []string
	DefaultVolumeType string
	// ShareTypes are the Manila share types the project sees (nil when
	// not looked up).
	ShareTypes []string
	// ProjectID is the cluster's OpenStack project (k8s-keystone-auth's
	// policy lets its members in).
	ProjectID string
}

// AddOn is one rendered add-on.
type AddOn struct {
	Name    string
	Chart   ChartRef // zero for plain manifests
	Objects []Object
	// Skipped are the chart's hooks left out (see Chart hooks in
	// render.go).
	Skipped []Hook
}

// Warning names the hooks of a's chart that are not run and whose moment
// comes to an add-on ("" when none): its upgrade hooks (pre-upgrade,
// post-upgrade), since an add-on's chart version moves with
// cluster_upgrade. The others are named by LeftOut only: an add-on is
// never uninstalled apart from its cluster (whose delete removes the
// nodes it runs on), rolled back or tested, and Helm itself skips the
// types it does not know; a warning for those on every cluster (the real
// tigera-operator chart has a pre-delete Job) would say nothing an
// operator can act on.
func (a AddOn) Warning() string {
	var upgrade []Hook
	for _, h := range a.Skipped {
		if h.onUpgrade() {
			upgrade = append(upgrade, h)
		}
	}
	return a.hooksNotRun("Helm upgrade hooks not run", upgrade)
}

// LeftOut names every hook of a's chart left out ("" when none), for the
// log.
func (a AddOn) LeftOut() string { return a.hooksNotRun("Helm hooks not run", a.Skipped) }

func (a AddOn) hooksNotRun(what string, hooks []Hook) string {
	if len(hooks) == 0 {
		return ""
	}
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.String()
	}
	return fmt.Sprintf("add-on %s (chart %s %s): %s: %s", a.Name, a.Chart.Chart, a.Chart.Version, what, strings.Join(names, ", "))
}

func (s Settings) ref(addon, kube string) ChartRef {
	r := ChartRef{Repo: DefaultRepos[addon], Chart: DefaultCharts[addon], Version: versionFor(addon, kube)}
	if v := s.Repos[addon]; v != "" {
		r.Repo = v
	}
	if v := s.Charts[addon]; v != "" {
		r.Chart = v
	}
	if v := s.Versions[addon]; v != "" {
		r.Version = v
	}
	return r
}

func enabled(l Labels, name string, def bool) bool {
	if b, ok := l.Bool(name); ok {
		return b
	}
	return def
}

// registry is where the add-ons' images come from: the cluster's
// container_infra_prefix label, else the site's ImageRegistry ("" keeps
// the charts' own).
func (s Settings) registry(l Labels) string {
	if p := l.String("container_infra_prefix"); p != "" {
		return strings.TrimSuffix(p, "/")
	}
	return strings.TrimSuffix(s.ImageRegistry, "/")
}

// releaseNamespace is the Namespace object of a built-in add-on's release
// namespace ns, labelled name=<ns> and with labels, or nil for kube-system
// and for a chart that renders its namespace itself. The charts leave their
// namespace to the user (tigera-operator's README: kubectl create namespace
// tigera-operator, then helm install), and Cluster API creates no
// namespace: without it, none of the add-on's namespaced objects could be
// created. It comes first, before what it holds.
func releaseNamespace(objs []Object, ns string, labels map[string]string) Object {
	if ns == "kube-system" {
		return nil
	}
	for _, o := range objs {
		if o["kind"] == "Namespace" && objectName(o) == ns {
			return nil
		}
	}
	l := map[string]any{"name": ns}
	for k, v := range labels {
		l[k] = v
	}
	return Object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": l}}
}

// Render renders the add-ons of cl: the cloud-config Secret, the CNI its
// network_driver label names, the cloud controller manager, the CSI
// plugins (Manila's with the NFS node plugin it needs) and metrics-server
// as their labels enable them, then the operator's own add-ons.
func Render(ctx context.Context, charts *Charts, s Settings, cl Cluster) ([]AddOn, error) {
	l := cl.Labels
	reg := s.registry(l)
	var out []AddOn
	out = append(out, AddOn{Name: "cloud-config", Objects: []Object{CloudConfigSecret(cl)}})

	type planned struct {
		kind   string
		name   string
		values map[string]any
		ns     string
		tag    string // a *_tag label: chart version (CNIs) or image tag
		// nsLabels are the labels of ns, when the add-on creates it (see
		// releaseNamespace).
		nsLabels map[string]string
	}
	var plan []planned
	switch nd := l.String("network_driver"); nd {
	case "", Calico:
		// The operator runs on the host network with host paths: its
		// namespace is labelled as Tigera's own manifest labels it.
		plan = append(plan, planned{kind: "cni", name: Calico, ns: "tigera-operator", values: calicoValues(cl, reg), tag: l.String("calico_tag"),
			nsLabels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}})
	case Cilium:
		plan = append(plan, planned{kind: "cni", name: Cilium, ns: "kube-system", values: ciliumValues(cl), tag: l.String("cilium_tag")})
	default:
		return nil, fmt.Errorf("addons: network_driver %q is not supported (calico or cilium)", nd)
	}
	plan = append(plan, planned{kind: "cloud-provider", name: CloudProvider, ns: "kube-system", values: cloudProviderValues(cl, l), tag: l.String("cloud_provider_tag")})
	if enabled(l, "cinder_csi_enabled", true) {
		plan = append(plan, planned{kind: "cinder-csi", name: CinderCSI, ns: "kube-system", values: cinderValues(cl), tag: l.String("cinder_csi_plugin_tag")})
	}
	if enabled(l, "manila_csi_enabled", false) {
		// The Manila node plugin mounts no NFS share itself: it forwards
		// the mount to the NFS node plugin's socket. Without that plugin
		// no share can be mounted, so it comes with Manila (same kind and
		// label), delivered before it.
		plan = append(plan,
			planned{kind: "manila-csi", name: NFSCSI, ns: "kube-system", values: nfsValues(), tag: l.String("nfs_csi_plugin_tag")},
			planned{kind: "manila-csi", name: ManilaCSI, ns: "kube-system", values: map[string]any{}, tag: l.String("manila_csi_plugin_tag")})
	}
	if enabled(l, "metrics_server_enabled", true) {
		plan = append(plan, planned{kind: "metrics-server", name: MetricsServer, ns: "kube-system", values: map[string]any{
			"args": []any{"--kubelet-insecure-tls"}}, tag: l.String("metrics_server_tag")})
	}
	for _, p := range plan {
		if !s.wants(p.kind) {
			continue
		}
		ref := s.ref(p.name, cl.KubeVersion)
		if p.tag != "" {
			switch p.name {
			case Calico, Cilium: // the chart's version is the CNI's
				ref.Version = p.tag
				if p.name == Cilium {
					ref.Version = strings.TrimPrefix(p.tag, "v")
				}
			case CinderCSI:
				setPath(p.values, p.tag, "csi", "plugin", "image", "tag")
			case ManilaCSI:
				setPath(p.values, p.tag, "csimanila", "image", "tag")
			case NFSCSI:
				setPath(p.values, p.tag, "image", "nfs", "tag")
			default:
				setPath(p.values, p.tag, "image", "tag")
			}
		}
		if ref.Version == "" {
			return nil, fmt.Errorf("addons: %s: no chart version for Kubernetes %s", p.name, cl.KubeVersion)
		}
		ch, err := charts.Get(ctx, ref)
		if err != nil {
			return nil, err
		}
		objs, skipped, err := RenderChart(ch, p.values, Release{Name: p.name, Namespace: p.ns, KubeVersion: cl.KubeVersion})
		if err != nil {
			return nil, err
		}
		if reg != "" {
			rewriteImages(objs, reg)
		}
		if ns := releaseNamespace(objs, p.ns, p.nsLabels); ns != nil {
			objs = append([]Object{ns}, objs...)
		}
		switch p.name {
		case CinderCSI:
			objs = append(objs, volumeTypeClasses(cl)...)
		case ManilaCSI:
			objs = append(objs, shareTypeClasses(cl)...)
		}
		out = append(out, AddOn{Name: p.name, Chart: ref, Objects: objs, Skipped: skipped})
	}
	if s.wants("keystone-auth") && enabled(l, "keystone_auth_enabled", true) {
		objs, err := keystoneAuthObjects(cl)
		if err != nil {
			return nil, err
		}
		if reg != "" {
			rewriteImages(objs, reg)
		}
		out = append(out, AddOn{Name: KeystoneAuth, Objects: objs})
	}
	extra, err := LoadExtra(ctx, charts, s.ExtraDir, cl)
	if err != nil {
		return nil, err
	}
	return withExtra(out, extra)
}

// withExtra appends the site's add-ons to the built-in ones, except that
// a site add-on named like a built-in one takes its place (in its place
// in the order): a site pins or configures a built-in add-on its own way
// without forking, and one that delivered csi-driver-nfs as a site
// add-on before it was built in does not deliver it twice. The
// cloud-config Secret, which carries the cluster's credential and is
// rewritten when it rotates, cannot be replaced.
func withExtra(out, extra []AddOn) ([]AddOn, error) {
	for _, e := range extra {
		if e.Name == "cloud-config" {
			return nil, fmt.Errorf("addons: extra add-on %s: the name is the driver's own (the cluster's cloud-config Secret); rename the add-on", e.Name)
		}
		if i := slices.IndexFunc(out, func(a AddOn) bool { return a.Name == e.Name }); i >= 0 {
			out[i] = e
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
