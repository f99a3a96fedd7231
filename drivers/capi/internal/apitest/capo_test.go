package apitest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
)

// needCAPO returns the server with CAPO's released CRDs and the CAPO
// manager beside the Cluster API controllers.
func needCAPO(t *testing.T) (*apitest.Server, dynamic.Interface) {
	t.Helper()
	return needServer(t, "CAPO "+apitest.CAPOVersion, func(ctx context.Context) (*apitest.Server, error) {
		return apitest.StartWithCAPO(ctx, testing.Verbose())
	})
}

var (
	openStackClusterGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackclusters"}
	openStackMTGVR      = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackmachinetemplates"}
	secretGVR           = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// closedPort is a port of 127.0.0.1 on which nothing listens and nothing
// else can listen while the test runs: a TCP socket bound to it and never
// listening (a connection to it is refused at once).
func closedPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) }) // a socket that never listened: nothing to lose
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// openStackCluster is a v1beta1 OpenStackCluster whose cloud is the
// clouds.yaml entry "openstack" of the Secret named secret.
func openStackCluster(ns, name, secret string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackCluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"identityRef": map[string]any{"name": secret, "cloudName": "openstack"},
		},
	}}
}

// The CAPO manager reconciles: a Cluster whose infrastructure is an
// OpenStackCluster is accepted, Cluster API core finds the kind's contract
// (by CAPO's v1beta1 contract label: without a label it refuses the ref,
// with the v1beta2 one it waits for a status field CAPO never sets) and
// adopts the OpenStackCluster, and CAPO reads the cloud's credentials from
// the identityRef Secret and dials its auth URL (a closed port of
// 127.0.0.1). CAPO v0.14.2 reports that failure in its log only (a
// Reconciler error, retried with back-off): no condition, no event.
func TestCAPOReconcilesAnOpenStackCluster(t *testing.T) {
	s, dyn := needCAPO(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns, err := s.NewNamespace(ctx, "capo")
	if err != nil {
		t.Fatal(err)
	}
	capoLog, err := s.Controllers().Log("capo-manager")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(strings.Split(capoLog, "\n"), func(l string) bool {
		return strings.Contains(l, `"starting manager"`) && strings.Contains(l, `version="`+apitest.CAPOVersion+`"`)
	}) {
		t.Fatalf("the CAPO manager's log lacks its start, version %s:\n%s", apitest.CAPOVersion, capoLog)
	}

	port := closedPort(t)
	authURL := fmt.Sprintf("http://127.0.0.1:%d/v3", port)
	clouds := fmt.Sprintf(`clouds:
  openstack:
    auth_type: v3applicationcredential
    auth:
      auth_url: %s
      application_credential_id: apitest-id
      application_credential_secret: apitest-not-a-secret
    region_name: RegionOne
`, authURL)
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "cloud", "namespace": ns},
		"stringData": map[string]any{"clouds.yaml": clouds},
	}}
	if _, err := dyn.Resource(secretGVR).Namespace(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(openStackClusterGVR).Namespace(ns).Create(ctx, openStackCluster(ns, "demo", "cloud"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "demo", "namespace": ns},
		"spec": map[string]any{
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackCluster", "name": "demo"},
		},
	}}
	clusters := dyn.Resource(clusterGVR).Namespace(ns)
	if _, err := clusters.Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Core adopts its infrastructure only once it has found the kind's
	// contract version from the CRD's labels.
	waitFor(ctx, t, "OpenStackCluster owned by its Cluster", func() (bool, string, error) {
		got, err := dyn.Resource(openStackClusterGVR).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, o := range got.GetOwnerReferences() {
			if o.Kind == "Cluster" && o.Name == "demo" {
				return true, "", nil
			}
		}
		return false, fmt.Sprint(got.GetOwnerReferences()), nil
	})
	// CAPO goes on to authenticate with the Secret's credentials.
	dialled := fmt.Sprintf("127.0.0.1:%d", port)
	var refused string
	waitFor(ctx, t, "CAPO reporting the refused authentication", func() (bool, string, error) {
		log, err := s.Controllers().Log("capo-manager")
		if err != nil {
			return false, "", err
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "Reconciler error") && strings.Contains(line, `OpenStackCluster="`+ns+`/demo"`) &&
				strings.Contains(line, "providerClient authentication err") &&
				strings.Contains(line, dialled) && strings.Contains(line, "connection refused") {
				refused = line
				return true, "", nil
			}
		}
		return false, "no such line in its log", nil
	})
	t.Logf("CAPO: %s", refused)
	// Core reports the infrastructure as not ready...
	waitFor(ctx, t, "Cluster InfrastructureReady False", func() (bool, string, error) {
		got, err := clusters.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st, msg := condition(got, "InfrastructureReady")
		return st == "False" && strings.Contains(msg, "OpenStackCluster"), st + ": " + msg, nil
	})
	// ... and reads readiness where the v1beta1 contract puts it:
	// status.ready (CAPO's, set here as CAPO sets it once the cloud's
	// resources exist; the v1beta2 contract's is
	// status.initialization.provisioned, which CAPO v0.14 has not).
	ready := `{"status":{"ready":true}}`
	if _, err := dyn.Resource(openStackClusterGVR).Namespace(ns).Patch(ctx, "demo", types.MergePatchType, []byte(ready), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "Cluster infrastructure provisioned", func() (bool, string, error) {
		got, err := clusters.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		provisioned, _, _ := unstructured.NestedBool(got.Object, "status", "initialization", "infrastructureProvisioned")
		st, msg := condition(got, "InfrastructureReady")
		return provisioned && st == "True", fmt.Sprintf("infrastructureProvisioned %v, InfrastructureReady %s: %s", provisioned, st, msg), nil
	})
	coreLog, err := s.Controllers().Log("capi-core")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(coreLog, "\n") {
		if strings.Contains(line, "contract") && (strings.Contains(line, "OpenStack") || strings.Contains(line, "openstack")) {
			t.Errorf("Cluster API core complains about CAPO's contract: %s", line)
		}
	}
	capoLog, err = s.Controllers().Log("capo-manager")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(capoLog, "apitest-not-a-secret") {
		t.Error("the CAPO manager logged the application credential's secret")
	}
}

// CAPO's validating webhooks are called: an OpenStackMachineTemplate's
// spec cannot change after creation (its metadata can), and an
// OpenStackCluster with a security group rule naming two kinds of remote
// is refused with CAPO's reason.
func TestCAPOWebhooksRefuse(t *testing.T) {
	s, dyn := needCAPO(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns, err := s.NewNamespace(ctx, "capo-webhooks")
	if err != nil {
		t.Fatal(err)
	}
	templates := dyn.Resource(openStackMTGVR).Namespace(ns)
	omt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate",
		"metadata": map[string]any{"name": "workers", "namespace": ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"flavor": "m1.small",
			"image":  map[string]any{"filter": map[string]any{"name": "ubuntu-2404-kube-v1.33"}},
		}}},
	}}
	if _, err := templates.Create(ctx, omt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	flavor := `{"spec":{"template":{"spec":{"flavor":"m1.large"}}}}`
	_, err = templates.Patch(ctx, "workers", types.MergePatchType, []byte(flavor), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing an OpenStackMachineTemplate's flavor: err = %v, want Invalid from CAPO's webhook", err)
	}
	for _, want := range []string{
		`admission webhook "validation.openstackmachinetemplate.infrastructure.cluster.x-k8s.io" denied the request`,
		"OpenStackMachineTemplate spec.template.spec field is immutable",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q\nlacks %q", err, want)
		}
	}
	label := `{"metadata":{"labels":{"apitest":"relabelled"}}}`
	if _, err := templates.Patch(ctx, "workers", types.MergePatchType, []byte(label), metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling an OpenStackMachineTemplate: %v", err)
	}

	bad := openStackCluster(ns, "two-remotes", "cloud")
	rule := map[string]any{
		"name": "api", "direction": "ingress", "protocol": "tcp", "portRangeMin": int64(6443), "portRangeMax": int64(6443),
		"remoteManagedGroups": []any{"worker"}, "remoteIPPrefix": "10.0.0.0/8",
	}
	if err := unstructured.SetNestedField(bad.Object, map[string]any{
		"allowAllInClusterTraffic": false, "allNodesSecurityGroupRules": []any{rule},
	}, "spec", "managedSecurityGroups"); err != nil {
		t.Fatal(err)
	}
	clusters := dyn.Resource(openStackClusterGVR).Namespace(ns)
	_, err = clusters.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("an OpenStackCluster with remoteManagedGroups and remoteIPPrefix: err = %v, want Invalid from CAPO's webhook", err)
	}
	for _, want := range []string{
		`admission webhook "validation.openstackcluster.infrastructure.cluster.x-k8s.io" denied the request`,
		"spec.managedSecurityGroups.allNodesSecurityGroupRules: Forbidden: remoteManagedGroups cannot be used with remoteGroupID or remoteIPPrefix",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q\nlacks %q", err, want)
		}
	}
	delete(rule, "remoteIPPrefix")
	if err := unstructured.SetNestedSlice(bad.Object, []any{rule}, "spec", "managedSecurityGroups", "allNodesSecurityGroupRules"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the same OpenStackCluster with remoteManagedGroups only: %v", err)
	}
}
