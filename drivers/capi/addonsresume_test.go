package capi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
)

// TestCreateStoppedBeforeItsAddOnsIsResumed (test API server; the test
// plays Cluster API): a conductor stopped between writing a new Cluster
// and writing its add-ons — here, every add-on write of the create fails
// as if the process had died there — leaves a CREATE_IN_PROGRESS cluster
// without add-ons. Within addOnsResumeGrace of the Cluster's creation the
// status sync leaves them to the create (which may be writing them that
// moment); after it, the sync writes them (the same content-hashed Secrets
// and ClusterResourceSet a create writes), once, and the create goes on to
// CREATE_COMPLETE when Cluster API has applied them. A sync that cannot
// take the add-ons' lock says so.
func TestCreateStoppedBeforeItsAddOnsIsResumed(t *testing.T) {
	var stopped atomic.Bool
	var refused, crsWrites atomic.Int64
	stopped.Store(true)
	wrap := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			addOnWrite := req.Method == http.MethodPatch &&
				(strings.Contains(req.URL.Path, "/clusterresourcesets/") || strings.Contains(req.URL.Path, "-addon-"))
			if addOnWrite && stopped.Load() {
				refused.Add(1)
				return nil, errors.New("conductor stopped")
			}
			if addOnWrite && strings.Contains(req.URL.Path, "/clusterresourcesets/") {
				crsWrites.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	opts := Options{CreateTimeout: time.Hour, AddOns: AddOnOptions{Enabled: true, CacheDir: t.TempDir(), Settings: addons.Settings{
		Builtin: []string{}, ExtraDir: extraAddOnsDir(t, map[string]string{"hello": helloAddOn})}}}
	e := newEnvWith(t, opts, wrap)
	ctx := context.Background()
	c := e.newCluster("resumed", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err == nil || refused.Load() == 0 {
		t.Fatalf("create: %v, %d add-on writes refused; want it stopped at its add-ons", err, refused.Load())
	}
	// What the stopped conductor left: the cluster row in
	// CREATE_IN_PROGRESS with its stack_id, a Cluster, no add-ons.
	r := ref{Namespace: namespaceFor(e.d.opts.NamespacePrefix, deref(c.ProjectID)), Name: capiNameFor(c)}
	c.StackID = ptr(r.String())
	cl := e.getCluster(t, r)
	if _, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterResourceSet after the stopped create: %v, want none", err)
	}
	if left := e.secretNames(t, r.Namespace, LabelComponent+"="+componentAddOn); len(left) != 0 {
		t.Fatalf("add-on Secrets after the stopped create: %v", left)
	}
	stopped.Store(false)

	// Within the grace, the syncs leave them to the create.
	resumed := func() []string {
		return e.logs.lines("level=WARN", "has no add-ons (its create stopped before writing them)")
	}
	eventually(t, "the Cluster cached", func() (bool, string) {
		return e.d.cache.Load().observe(r.Namespace, r.Name).Cluster != nil, ""
	})
	for range 3 {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) || crsWrites.Load() != 0 {
		t.Fatalf("ClusterResourceSet written within the grace (%v, %d writes), want it left to the create", err, crsWrites.Load())
	}
	if got := resumed(); len(got) != 0 {
		t.Fatalf("within the grace: logged %q", got)
	}
	// Another write of the add-ons holds their lock past the sync's
	// deadline: the sync says it could not check them.
	unlock, err := e.d.guard.lock(ctx, addOnsKey(c))
	if err != nil {
		t.Fatal(err)
	}
	later := cl.CreationTimestamp.Add(addOnsResumeGrace + time.Second)
	e.now.Store(&later)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	l, err := e.d.opts.Labels.Parse(mergedLabels(c, e.store.templates[deref(c.ClusterTemplateID)]))
	if err != nil {
		t.Fatal(err)
	}
	e.d.resumeAddOns(short, c, r, cl, &l)
	cancel()
	unlock()
	if got := e.logs.lines("level=WARN", "could not check the add-ons of a cluster being created", "context deadline exceeded"); len(got) != 1 {
		t.Errorf("the lock not taken: logged %q, want one warning", e.logs.lines("add-ons"))
	}

	// After the grace, the next syncs write them, once: the later ones
	// find the set.
	eventually(t, "the add-ons written by the status sync", func() (bool, string) {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			return false, err.Error()
		}
		_, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{})
		return err == nil, c.Status + " " + deref(c.StatusReason)
	})
	if c.Status != objects.CreateInProgress {
		t.Fatalf("status %s (%s), want CREATE_IN_PROGRESS", c.Status, deref(c.StatusReason))
	}
	crs := e.crs(t, r)
	if len(crs.Spec.Resources) != 2 || !strings.HasPrefix(crs.Spec.Resources[0].Name, r.Name+"-addon-cloud-config-") ||
		!strings.HasPrefix(crs.Spec.Resources[1].Name, r.Name+"-addon-hello-") {
		t.Fatalf("resources %+v, want the cloud-config then hello", crs.Spec.Resources)
	}
	if len(crs.OwnerReferences) != 1 || crs.OwnerReferences[0].UID != cl.UID ||
		crs.Spec.ClusterSelector.MatchLabels[LabelClusterUUID] != deref(c.UUID) {
		t.Errorf("ClusterResourceSet owners %+v, selector %v", crs.OwnerReferences, crs.Spec.ClusterSelector.MatchLabels)
	}
	for _, res := range crs.Spec.Resources {
		s := e.secret(t, r.Namespace, res.Name)
		if s.Type != addonsv1.ClusterResourceSetSecretType || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != cl.UID {
			t.Errorf("Secret %s: type %s, owners %+v", s.Name, s.Type, s.OwnerReferences)
		}
	}
	if cc := string(e.secret(t, r.Namespace, crs.Spec.Resources[0].Name).Data["resources.yaml"]); !strings.Contains(cc, "application-credential-id=appcred-1") {
		t.Errorf("the resumed cloud-config does not hold the cluster's credential:\n%s", cc)
	}
	// The same as a create writes: a create of the same cluster now (the
	// conductor's retry) changes no Secret name.
	for range 5 {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
	}
	if n := crsWrites.Load(); n != 1 {
		t.Errorf("the ClusterResourceSet was written %d times by the syncs, want once", n)
	}
	if got := resumed(); len(got) != 1 {
		t.Errorf("the resumption logged %q, want one warning", got)
	}
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	if again := e.crs(t, r); again.Spec.Resources[0].Name != crs.Spec.Resources[0].Name || again.Spec.Resources[1].Name != crs.Spec.Resources[1].Name {
		t.Errorf("a create after the resumption renders %+v, the resumption %+v", again.Spec.Resources, crs.Spec.Resources)
	}

	// Cluster API brings the cluster up and applies the add-ons.
	p := &capi{t: t, e: e, r: r, c: c}
	p.upWithOneWorker(ctx)
	e.syncUntil(t, c, objects.CreateInProgress, "add-ons not applied yet: cloud-config, hello")
	var applied []addonsv1.ResourceBinding
	for _, res := range crs.Spec.Resources {
		applied = append(applied, addonsv1.ResourceBinding{ResourceRef: res, Applied: ptr(true), Hash: "h", LastAppliedTime: metav1.Now()})
	}
	u, err := toUnstructured(&addonsv1.ClusterResourceSetBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: addonsv1.GroupVersion.String(), Kind: "ClusterResourceSetBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
		Spec: addonsv1.ClusterResourceSetBindingSpec{ClusterName: r.Name, Bindings: []addonsv1.ResourceSetBinding{{
			ClusterResourceSetName: crs.Name, Resources: applied}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(gvrCRSBinding).Namespace(r.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setCRSApplied(t, e, r)
	e.syncUntil(t, c, objects.CreateComplete, "")
}

// A settled cluster, or one being deleted, whose set is missing gets none
// from the status sync: only a create is resumed.
func TestOnlyACreateIsResumed(t *testing.T) {
	opts := Options{CreateTimeout: time.Hour, AddOns: AddOnOptions{Enabled: true, CacheDir: t.TempDir(), Settings: addons.Settings{
		Builtin: []string{}, ExtraDir: extraAddOnsDir(t, map[string]string{"hello": helloAddOn})}}}
	e := newEnvWith(t, opts, nil)
	ctx := context.Background()
	c := e.newCluster("settled", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	if err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Delete(ctx, crsName(r.Name), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion cached", func() (bool, string) {
		crs, _ := e.d.cache.Load().addOns(r.Namespace, r.Name)
		return crs == nil, ""
	})
	for _, status := range []string{objects.UpdateInProgress, objects.CreateComplete, objects.DeleteInProgress} {
		c.Status = status
		cl := e.getCluster(t, r)
		later := cl.CreationTimestamp.Add(addOnsResumeGrace + time.Second) // past the grace: only the status stops it
		e.now.Store(&later)
		l, err := e.d.opts.Labels.Parse(c.Labels)
		if err != nil {
			t.Fatal(err)
		}
		e.d.resumeAddOns(ctx, c, r, cl, &l)
		if _, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: the status sync wrote the ClusterResourceSet (%v)", status, err)
		}
	}
}
