package capi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
)

// Add-ons (CNI, cloud controller manager, CSI plugins, metrics-server, a
// site's own) reach a workload cluster through one Cluster API
// ClusterResourceSet per cluster, strategy Reconcile, that selects only
// that Cluster (by its cluster-uuid label) and lists one Secret of type
// addons.cluster.x-k8s.io/resource-set per add-on: the manifests the
// driver rendered from the add-on's Helm chart (package addons). The
// Secrets and the ClusterResourceSet live beside the Cluster, owned by
// it, so they go with it.
//
// A Secret's name carries the hash of its content: a change (an upgrade's
// chart versions, a rotated credential in the cloud-config) is a new
// resource of the ClusterResourceSet, which Cluster API applies, and
// whose binding tells when it has been. Secrets no longer listed are
// deleted after the ClusterResourceSet moved on.

var (
	gvrCRS        = addonsv1.GroupVersion.WithResource("clusterresourcesets")
	gvrCRSBinding = addonsv1.GroupVersion.WithResource("clusterresourcesetbindings")
)

// AddOnOptions configure add-on delivery.
type AddOnOptions struct {
	// Enabled turns add-on delivery on (the conductor's
	// [capi_driver] addons_enabled).
	Enabled bool
	// CacheDir is where fetched charts are kept.
	CacheDir string
	Settings addons.Settings
}

const (
	// annotationAddOnResources on the ClusterResourceSet maps each of its
	// Secrets to the add-on it holds (JSON), for the status reason.
	annotationAddOnResources = "magnum.openstack.org/addon-resources"
	// annotationAddOnWarnings on the ClusterResourceSet holds the warnings
	// of its last rendering ("; "-separated: the charts' hooks not run),
	// which the status sync appends to the cluster's status_reason.
	annotationAddOnWarnings = "magnum.openstack.org/addon-warnings"
	componentAddOn          = "addon"
	// maxAddOnSecret keeps a resource-set Secret under the API server's
	// 1 MiB object limit; a larger add-on is split over several.
	maxAddOnSecret = 900 << 10
)

func crsName(clusterName string) string { return clusterName + "-addons" }

// reconcileAddOns renders the add-ons of the Cluster applied (uid: its
// UID) and writes their Secrets and ClusterResourceSet.
func (d *Driver) reconcileAddOns(ctx context.Context, c *objects.Cluster, r ref, applied *clusterv1.Cluster, uid string, l Labels) error {
	if !d.opts.AddOns.Enabled {
		return nil
	}
	cred, err := d.addOnCredential(ctx, c, r, variableString(applied, "identityRefName"))
	if err != nil {
		return err
	}
	storage, err := d.addOnStorageTypes(ctx, cred, l)
	if err != nil {
		return err
	}
	var pods string
	if b := applied.Spec.ClusterNetwork.Pods.CIDRBlocks; len(b) > 0 {
		pods = b[0]
	}
	set, err := addons.Render(ctx, d.charts, d.opts.AddOns.Settings, addons.Cluster{
		Name: r.Name, KubeVersion: applied.Spec.Topology.Version, PodCIDR: pods, Labels: l,
		Credential: cred, ProjectID: deref(c.ProjectID), VolumeTypes: storage.Volume, DefaultVolumeType: storage.DefaultVolume,
		ShareTypes: storage.Share})
	if err != nil {
		return fmt.Errorf("capi: add-ons of %s: %w", r, err)
	}
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: r.Name, UID: types.UID(uid)}
	labels := mapWith(ownerLabels(c), map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelComponent: componentAddOn})
	var refs []addonsv1.ResourceRef
	which := map[string]string{}
	var warnings []string
	for _, a := range set {
		if w := a.Warning(); w != "" {
			warnings = append(warnings, w)
		}
		if left := a.LeftOut(); left != "" {
			d.log.Info("add-ons: chart hooks left out", append(d.logAttrs(ctx, c), "capi_cluster", r.String(), "hooks", left)...)
		}
		parts, err := addOnParts(a.Objects)
		if err != nil {
			return fmt.Errorf("capi: add-on %s: %w", a.Name, err)
		}
		for i, data := range parts {
			sum := sha256.Sum256(data)
			name := fmt.Sprintf("%s-addon-%s-%s", r.Name, a.Name, hex.EncodeToString(sum[:5]))
			if len(parts) > 1 {
				name += fmt.Sprintf("-%d", i)
			}
			s := &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
				Type:       addonsv1.ClusterResourceSetSecretType,
				Data:       map[string][]byte{"resources.yaml": data},
			}
			if err := d.applyOwned(ctx, gvrSecret, s); err != nil {
				return err
			}
			refs = append(refs, addonsv1.ResourceRef{Kind: string(addonsv1.SecretClusterResourceSetResourceKind), Name: name})
			which[name] = a.Name
		}
	}
	ann, _ := json.Marshal(which)
	crsAnnotations := map[string]string{annotationAddOnResources: string(ann)}
	if len(warnings) > 0 {
		// Server-side apply: an annotation no longer sent is removed.
		crsAnnotations[annotationAddOnWarnings] = strings.Join(warnings, "; ")
		d.log.Warn("add-ons: chart upgrade hooks not run", append(d.logAttrs(ctx, c), "capi_cluster", r.String(),
			"warning", crsAnnotations[annotationAddOnWarnings])...)
	}
	crs := &addonsv1.ClusterResourceSet{
		TypeMeta: metav1.TypeMeta{APIVersion: addonsv1.GroupVersion.String(), Kind: "ClusterResourceSet"},
		ObjectMeta: metav1.ObjectMeta{Name: crsName(r.Name), Namespace: r.Namespace, Labels: labels,
			Annotations: crsAnnotations, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: addonsv1.ClusterResourceSetSpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelClusterUUID: deref(c.UUID)}},
			Resources:       refs,
			Strategy:        string(addonsv1.ClusterResourceSetStrategyReconcile),
		},
	}
	u, err := toUnstructured(crs)
	if err != nil {
		return err
	}
	written, err := d.deps.Dynamic.Resource(gvrCRS).Namespace(r.Namespace).Apply(ctx, crs.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("capi: apply ClusterResourceSet %s/%s: %w", r.Namespace, crs.Name, err)
	}
	d.addOnsWritten.note(r, string(written.GetUID()), written.GetGeneration(), d.now())
	// The Secrets of earlier renderings.
	old, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelComponent+"="+componentAddOn)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range old {
		if _, ok := which[s.Name]; !ok {
			errs = append(errs, d.deps.Core.DeleteSecret(ctx, r.Namespace, s.Name))
		}
	}
	d.log.Info("add-ons applied", append(d.logAttrs(ctx, c), "capi_cluster", r.String(), "addons", len(set), "resources", len(refs))...)
	return errors.Join(errs...)
}

// applyOwned writes obj with server-side apply.
func (d *Driver) applyOwned(ctx context.Context, gvr schema.GroupVersionResource, obj any) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	if _, err := d.deps.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("capi: apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// addOnParts serialises objs as YAML documents, in Secrets' worth.
func addOnParts(objs []addons.Object) ([][]byte, error) { return addons.Parts(objs, maxAddOnSecret) }

// addOnCredential reads the application credential from the cluster's
// identity Secret (name; "" is the first one's) for the cloud-config.
func (d *Driver) addOnCredential(ctx context.Context, c *objects.Cluster, r ref, name string) (addons.Credential, error) {
	if name == "" {
		name = credentialSecretName(r.Name)
	}
	secrets, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err != nil {
		return addons.Credential{}, err
	}
	for _, s := range secrets {
		if s.Name != name {
			continue
		}
		var cf struct {
			Clouds map[string]struct {
				Auth struct {
					AuthURL string `json:"auth_url"`
					ID      string `json:"application_credential_id"`
					Secret  string `json:"application_credential_secret"`
				} `json:"auth"`
				Region    string `json:"region_name"`
				Interface string `json:"interface"`
			} `json:"clouds"`
		}
		if err := yaml.Unmarshal(s.Data["clouds.yaml"], &cf); err != nil {
			return addons.Credential{}, fmt.Errorf("capi: cloud credentials Secret %s/%s: clouds.yaml does not parse", r.Namespace, name)
		}
		o := cf.Clouds["openstack"]
		return addons.Credential{AuthURL: o.Auth.AuthURL, ID: o.Auth.ID, Secret: o.Auth.Secret, Region: o.Region,
			Interface: o.Interface, CACert: string(s.Data["cacert"])}, nil
	}
	return addons.Credential{}, fmt.Errorf("capi: cloud credentials Secret %s/%s not found", r.Namespace, name)
}

// addOnsPending reports whether the add-ons of the Cluster r are not all
// applied to its workload cluster yet, and which, from the informer
// cache (the ClusterResourceSet's ResourcesApplied condition and its
// binding's per-resource state).
func (d *Driver) addOnsPending(r ref) (reason string, pending bool) {
	if !d.opts.AddOns.Enabled {
		return "", false
	}
	crs, binding := d.cache.Load().addOns(r.Namespace, r.Name)
	if crs == nil {
		return "waiting for the add-ons' ClusterResourceSet " + crsName(r.Name), true
	}
	if d.addOnsWritten.behind(r, string(crs.UID), crs.Generation, d.now()) {
		// The cache still shows the set before our last rendering.
		return "waiting for Cluster API to apply the add-ons", true
	}
	which := map[string]string{}
	_ = json.Unmarshal([]byte(crs.Annotations[annotationAddOnResources]), &which)
	applied := map[string]bool{}
	if binding != nil {
		for _, b := range binding.Spec.Bindings {
			if b.ClusterResourceSetName != crs.Name {
				continue
			}
			for _, res := range b.Resources {
				applied[res.Name] = res.Applied != nil && *res.Applied
			}
		}
	}
	var missing []string
	for _, res := range crs.Spec.Resources {
		if !applied[res.Name] {
			name := which[res.Name]
			if name == "" {
				name = res.Name
			}
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}
	}
	cond := meta.FindStatusCondition(crs.Status.Conditions, addonsv1.ClusterResourceSetResourcesAppliedCondition)
	if len(missing) == 0 && crs.Status.ObservedGeneration >= crs.Generation && cond != nil && cond.Status == metav1.ConditionTrue {
		return "", false
	}
	if len(missing) == 0 {
		return "waiting for Cluster API to apply the add-ons", true
	}
	reason = "add-ons not applied yet: " + strings.Join(missing, ", ")
	if cond != nil && cond.Status == metav1.ConditionFalse {
		msg := cond.Message
		if v1 := crs.GetV1Beta1Conditions(); v1 != nil {
			for _, c := range v1 {
				if c.Type == addonsv1.ResourcesAppliedV1Beta1Condition && c.Message != "" {
					msg = c.Message
				}
			}
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		reason += " (" + cond.Reason + ": " + msg + ")"
	}
	return reason, true
}

// holdForAddOns keeps a create or an update the back end otherwise shows
// ready in progress while the add-ons are pending, and reports it failed
// when they still are at the driver's create deadline.
func (d *Driver) holdForAddOns(current string, r ref, res statusResult, now, deadline time.Time) statusResult {
	if res.Phase != drivers.PhaseReady || (current != objects.CreateInProgress && current != objects.UpdateInProgress) {
		return res
	}
	if crs, _ := d.cache.Load().addOns(r.Namespace, r.Name); crs == nil && current == objects.UpdateInProgress {
		// An update begun before add-ons were delivered (an older
		// conductor) wrote none: the next apply will.
		return res
	}
	reason, pending := d.addOnsPending(r)
	if !pending {
		return res
	}
	if current == objects.CreateInProgress && !deadline.IsZero() && now.After(deadline) {
		return statusResult{Phase: drivers.PhaseFailed, Reason: "the add-ons were not applied within the create timeout: " + reason}
	}
	return statusResult{Phase: drivers.PhaseInProgress, Reason: reason}
}

// validate reports every error in the add-on options.
func (o AddOnOptions) validate() error {
	if !o.Enabled {
		return nil
	}
	var errs []error
	if o.CacheDir == "" {
		errs = append(errs, errors.New("capi: add-ons: a chart cache directory is required"))
	}
	for _, k := range o.Settings.Builtin {
		if !slices.Contains(addons.BuiltinKinds, k) {
			errs = append(errs, fmt.Errorf("capi: add-ons: unknown built-in add-on %q (one of %s)", k, strings.Join(addons.BuiltinKinds, ", ")))
		}
	}
	for opt, m := range map[string]map[string]string{"repositories": o.Settings.Repos, "chart names": o.Settings.Charts, "chart versions": o.Settings.Versions} {
		for k := range m {
			if !slices.Contains(addons.Names, k) {
				errs = append(errs, fmt.Errorf("capi: add-on %s: unknown add-on %q (one of %s)", opt, k, strings.Join(addons.Names, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}
