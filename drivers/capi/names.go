package capi

import (
	"regexp"
	"strings"

	"github.com/openstack/magnum-conductor/api/objects"
)

// Labels the driver puts on everything it writes.
const (
	LabelClusterUUID   = "magnum.openstack.org/cluster-uuid"
	LabelProjectID     = "magnum.openstack.org/project-id"
	LabelNodeGroupUUID = "magnum.openstack.org/nodegroup-uuid"
	LabelNodeGroupName = "magnum.openstack.org/nodegroup"
	LabelRole          = "magnum.openstack.org/role"
	LabelSecretKind    = "magnum.openstack.org/secret-kind"
	// LabelComponent names what a workload the driver runs in the
	// management cluster is (cluster-autoscaler).
	LabelComponent = "magnum.openstack.org/component"
)

// Node labels: Cluster API copies the labels of these domains from a
// Machine to its Node, and the topology's metadata reaches the Machines.
const (
	// LabelNodeNodeGroup names the nodegroup of a Node.
	LabelNodeNodeGroup = "node.cluster.x-k8s.io/nodegroup"
	// labelNodeRolePrefix + role, with an empty value, is Kubernetes' role
	// label (kubectl get nodes shows it as ROLES).
	labelNodeRolePrefix = "node-role.kubernetes.io/"
)

// Annotations the driver reads or writes.
const (
	annotationTemplateID         = "magnum.openstack.org/cluster-template-id"
	annotationPreviousTemplateID = "magnum.openstack.org/previous-cluster-template-id"
	annotationPreviousKubeTag    = "magnum.openstack.org/previous-kube-tag"
	annotationCreateDeadline     = "magnum.openstack.org/create-deadline"
	annotationDeleteRequested    = "magnum.openstack.org/delete-requested-at"
	// annotationUpdateStarted is when the update the Cluster carries was
	// first applied (RFC 3339), annotationUpdateRequest a digest of that
	// update's request: a repeat of the request keeps the start.
	annotationUpdateStarted    = "magnum.openstack.org/update-started-at"
	annotationUpdateRequest    = "magnum.openstack.org/update-request"
	annotationCredentialID     = "magnum.openstack.org/credential-id"
	annotationCredentialUserID = "magnum.openstack.org/credential-user-id"
	// workerClass is the MachineDeployment class of every nodegroup.
	workerClass = "default-worker"
)

var (
	nonDNS       = regexp.MustCompile(`[^a-z0-9-]+`)
	dnsLabelRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	multiDashRE  = regexp.MustCompile(`-+`)
	maxNameChars = 20
)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

// sanitize lowercases s and keeps [a-z0-9-], at most n characters, with no
// leading or trailing dash.
func sanitize(s string, n int) string {
	s = nonDNS.ReplaceAllString(strings.ToLower(s), "-")
	s = multiDashRE.ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if len(s) > n {
		s = strings.Trim(s[:n], "-")
	}
	return s
}

// namespaceFor is the per-project namespace: <prefix>-<project id>.
func namespaceFor(prefix, projectID string) string {
	p := sanitize(projectID, 63-len(prefix)-1)
	if p == "" {
		p = "default"
	}
	return prefix + "-" + p
}

// capiNameFor is the CAPI Cluster name: <sanitised name ≤ 20>-<6 chars of
// the uuid>. It stays stable across renames (stored in stack_id) and leaves
// room for CAPI's generated child names (<name>-<ng>-<hash>) within 63.
func capiNameFor(c *objects.Cluster) string {
	id := strings.ReplaceAll(deref(c.UUID), "-", "")
	if len(id) > 6 {
		id = id[:6]
	}
	name := sanitize(deref(c.Name), maxNameChars)
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "k8s-" + name
		name = strings.Trim(sanitize(name, maxNameChars), "-")
	}
	return name + "-" + sanitize(id, 6)
}

// mdNameFor is the topology MachineDeployment name of a nodegroup.
func mdNameFor(ng *objects.NodeGroup) string {
	n := sanitize(ng.Name, 20)
	if n == "" {
		n = "ng-" + sanitize(strings.ReplaceAll(ng.UUID, "-", ""), 8)
	}
	return n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
