package capi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestProjectInfraKeepsWhatTheStatusReads: the cache's copy of an
// infrastructure object (here an OpenStackMachine as CAPO v0.14 writes it:
// v1beta1, Cluster API's v1beta1 contract) keeps its identity, labels and
// the contract's status fields (what worstInfraMessage and the informers'
// index read), and drops the spec and the provider's own status.
func TestProjectInfraKeepsWhatTheStatusReads(t *testing.T) {
	conds := []any{map[string]any{"type": "Ready", "status": "False", "severity": "Error", "reason": "InstanceCreateFailed",
		"message": "Quota exceeded for cores", "lastTransitionTime": "2026-12-02T10:00:00Z"},
		map[string]any{"type": "InstanceReady", "status": "False", "severity": "Error", "reason": "InstanceCreateFailed",
			"message": "Quota exceeded for cores", "lastTransitionTime": "2026-12-02T10:00:00Z"}}
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": "m-1", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
			"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "c"}, "annotations": map[string]any{"a": "b"},
			"managedFields": []any{map[string]any{"manager": "capo"}}},
		"spec": map[string]any{"flavorID": "f"},
		"status": map[string]any{"ready": false, "conditions": conds, "initialization": map[string]any{"provisioned": false},
			"failureReason": "CreateError", "failureMessage": "instance state ERROR", "instanceState": "ERROR",
			"resolved": map[string]any{"imageID": "i"}, "addresses": []any{map[string]any{"address": "10.0.0.1"}}},
	}}
	out, err := projectInfra(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": "m-1", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
			"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "c"}},
		"status": map[string]any{"ready": false, "conditions": conds, "initialization": map[string]any{"provisioned": false},
			"failureReason": "CreateError", "failureMessage": "instance state ERROR"},
	}
	u := out.(*unstructured.Unstructured)
	if !reflect.DeepEqual(u.Object, want) {
		t.Errorf("projected = %v\nwant %v", u.Object, want)
	}
	if keys, _ := indexByClusterLabel(u); len(keys) != 1 || keys[0] != "ns/c" {
		t.Errorf("index keys = %v", keys)
	}
	if got := unstructuredConditions(u); len(got) != 2 || got[1].Type != "InstanceReady" || got[1].Reason != "InstanceCreateFailed" ||
		got[1].Message != "Quota exceeded for cores" {
		t.Errorf("conditions = %+v", got)
	}
	if msg, terminal := worstInfraMessage(observation{InfraMachines: []*unstructured.Unstructured{u}}); msg !=
		"OpenStackMachine m-1: failed (CreateError): instance state ERROR" || !terminal {
		t.Errorf("infrastructure message = %q (terminal %v)", msg, terminal)
	}
	// A tombstone passes through.
	if tomb, _ := projectInfra("tombstone"); tomb != "tombstone" {
		t.Errorf("tombstone = %v", tomb)
	}
}
