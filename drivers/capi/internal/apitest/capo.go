package apitest

import (
	"context"
	"fmt"
	"path/filepath"
)

// capoModule is Cluster API Provider OpenStack's Go module; its zip holds
// the provider's CRDs (config/crd/bases).
const capoModule = "sigs.k8s.io/cluster-api-provider-openstack"

// CAPOVersion is the Cluster API Provider OpenStack release whose CRDs the
// tests install: the newest the Go module proxy serves, and the one run
// with Cluster API 1.12 and later. Its API is infrastructure.cluster.x-k8s.io
// v1beta1 only, and it implements Cluster API's v1beta1 provider contract
// (its kustomization labels its CRDs cluster.x-k8s.io/v1beta1: v1beta1).
const CAPOVersion = "v0.14.2"

// capoContract is the Cluster API contract version CAPOVersion implements.
const capoContract = "v1beta1"

// CAPOCRDFiles downloads (if needed) Cluster API Provider OpenStack at
// CAPOVersion from the Go module proxy and returns its CRD files, as its
// release installs them (config/crd/bases: OpenStackCluster,
// OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
// OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer).
func CAPOCRDFiles(ctx context.Context) ([]string, error) {
	dir, err := ModuleDir(ctx, capoModule, CAPOVersion)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("apitest: no CRDs under config/crd/bases of %s@%s", capoModule, CAPOVersion)
	}
	return files, nil
}
