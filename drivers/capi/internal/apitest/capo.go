package apitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CAPOModule is Cluster API Provider OpenStack; its module root package is
// the manager.
const CAPOModule = "sigs.k8s.io/cluster-api-provider-openstack"

// CAPOVersion is the CAPO release the tests run: the one test/capomanager
// builds (StartControllers refuses a go.mod that says otherwise) and whose
// CRDs CAPOCRDFiles lists. The Go module proxy serves v0.14.2 and v0.13.0
// only.
const CAPOVersion = "v0.14.2"

// CAPOContract is the Cluster API provider contract CAPOVersion
// implements. Its CRDs carry the label cluster.x-k8s.io/v1beta1: v1beta1
// (its config/crd/kustomization.yaml); Cluster API finds an
// OpenStackCluster's contract by that label (there is no v1beta2 API).
const CAPOContract = "v1beta1"

// ORCModule is the OpenStack Resource Controller: CAPO watches its Image
// kind (an OpenStackServer's image may be an ORC Image).
const ORCModule = "github.com/k-orc/openstack-resource-controller/v2"

// capoModule builds the CAPO manager, relative to the magnum-conductor
// root: its own module, as CAPO pins controller-runtime, Cluster API
// (v1.12) and k8s.io versions other than the Cluster API managers'.
const capoModule = "test/capomanager"

// binCAPO is the CAPO manager's binary (and log and webhook prefix).
const binCAPO = "capo-manager"

// orcCRDs are the ORC CRDs CAPO needs, relative to ORC's module root: it
// watches Images and nothing else of ORC (ORC's own controller, which
// would reconcile them, does not run).
var orcCRDs = []string{"config/crd/bases/openstack.k-orc.cloud_images.yaml"}

// capoManager is the CAPO manager as StartControllers runs it (WithCAPO):
// no --feature-gates (its own gates do not include Cluster API's
// ClusterTopology), ready once every controller it runs by default has
// started its workers (without ORC's Image CRD, for one, its
// OpenStackServer controller never does).
var capoManager = manager{
	name: binCAPO, pkg: CAPOModule, module: CAPOModule,
	crds: "config/crd/bases", webhooks: "config/webhook/manifests.yaml", contract: CAPOContract,
	controllers: []string{"crdmigrator", "openstackcluster", "openstackmachine", "openstackfloatingippool", "openstackserver"},
}

func capoTargets() []target {
	v := strings.TrimPrefix(CAPOVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	const p = CAPOModule + "/version"
	// What CAPO's Makefile links (it reports it in its log and its
	// User-Agent).
	ldflags := fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean",
		p, CAPOVersion, p, parts[0], p, parts[1], p)
	return []target{{name: binCAPO, pkg: CAPOModule, ldflags: ldflags}}
}

// BuildCAPO compiles the CAPO manager of test/capomanager (about 7
// minutes on two cores with a cold build cache) and returns the directory
// that holds it; see buildModule for the cache.
func BuildCAPO(ctx context.Context, logf Logger) (string, error) {
	return buildModule(ctx, logf, capoModule, "capomanager", capoTargets())
}

// checkCAPOVersion fails unless test/capomanager builds CAPOVersion.
func checkCAPOVersion(ctx context.Context) error {
	v, err := moduleVersion(ctx, capoModule, CAPOModule)
	if err != nil {
		return err
	}
	if v != CAPOVersion {
		return fmt.Errorf("apitest: %s builds CAPO %s but apitest.CAPOVersion is %s: keep them on one version", capoModule, v, CAPOVersion)
	}
	return nil
}

// CAPOCRDFiles lists the CRD files of CAPO CAPOVersion (all seven of its
// kinds) in the Go module cache, downloading the module if needed. Install
// them with Start or StartControllers: they get CAPO's contract label
// (CAPOContract), and only their storage versions (v1beta1; v1alpha1 for
// OpenStackServer, OpenStackFloatingIPPool, OpenStackClusterIdentity) are
// served.
func CAPOCRDFiles(ctx context.Context) ([]string, error) {
	dir, err := ModuleDir(ctx, CAPOModule, CAPOVersion)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, capoManager.crds, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("apitest: no CRDs under %s in %s@%s", capoManager.crds, CAPOModule, CAPOVersion)
	}
	return files, nil
}

// orcCRDFiles lists the ORC CRDs CAPO needs (orcCRDs), of the ORC version
// test/capomanager builds CAPO with.
func orcCRDFiles(ctx context.Context) ([]string, error) {
	v, err := moduleVersion(ctx, capoModule, ORCModule)
	if err != nil {
		return nil, err
	}
	dir, err := ModuleDir(ctx, ORCModule, v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(orcCRDs))
	for _, f := range orcCRDs {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("apitest: ORC CRD missing: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// StartWithCAPO is StartWithControllers with the CAPO manager too
// (WithCAPO and capoArgs). Stop it with Stop.
func StartWithCAPO(ctx context.Context, verbose bool, capoArgs ...string) (*Server, error) {
	return StartWithControllers(ctx, verbose, WithCAPO(capoArgs...))
}
