package apitest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
)

// The server installs the released CAPO's CRDs (apitest.CAPOVersion, from
// the module cache), which serve infrastructure.cluster.x-k8s.io/v1beta1
// only, labelled with the contract their provider implements (v1beta1, as
// CAPO's kustomization labels them); Cluster API's and the in-memory
// provider's with v1beta2, as clusterctl does.
func TestCRDsCarryTheirProvidersContract(t *testing.T) {
	s, _ := needControllers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := apiextclient.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	files, err := apitest.CAPOCRDFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 7 || !strings.Contains(files[0], "cluster-api-provider-openstack@"+apitest.CAPOVersion) {
		t.Errorf("CAPO CRD files %v, want CAPO %s's seven", files, apitest.CAPOVersion)
	}
	for _, tc := range []struct {
		crd, contract, versions string
	}{
		{"openstackclusters.infrastructure.cluster.x-k8s.io", "v1beta1", "v1beta1"},
		{"openstackclustertemplates.infrastructure.cluster.x-k8s.io", "v1beta1", "v1beta1"},
		{"openstackmachines.infrastructure.cluster.x-k8s.io", "v1beta1", "v1beta1"},
		{"openstackmachinetemplates.infrastructure.cluster.x-k8s.io", "v1beta1", "v1beta1"},
		// CAPO's own v1alpha1 kinds are no Cluster API provider kinds;
		// labelled, as every CRD here, with the versions it serves.
		{"openstackservers.infrastructure.cluster.x-k8s.io", "v1beta1", "v1alpha1"},
		{"clusters.cluster.x-k8s.io", "v1beta2", "v1beta2"},
		{"devmachines.infrastructure.cluster.x-k8s.io", "v1beta2", "v1beta2"},
	} {
		crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, tc.crd, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.crd, err)
			continue
		}
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		var contracts []string
		for k, v := range crd.Labels {
			if strings.HasPrefix(k, "cluster.x-k8s.io/v1") {
				contracts = append(contracts, k+"="+v)
			}
		}
		slices.Sort(contracts)
		if want := apitest.ContractLabel(tc.contract) + "=" + tc.versions; !slices.Equal(contracts, []string{want}) ||
			strings.Join(served, ",") != tc.versions {
			t.Errorf("%s: contract labels %v, served %v; want %s, served %s", tc.crd, contracts, served, want, tc.versions)
		}
	}
}
