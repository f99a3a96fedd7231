package capi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestProjectInfraKeepsWhatTheStatusReads: the cache's copy of an
// infrastructure object keeps its identity, labels and the contract's
// status fields (what worstInfraMessage and the informers' index read),
// and drops the spec and the provider's own status.
func TestProjectInfraKeepsWhatTheStatusReads(t *testing.T) {
	conds := []any{map[string]any{"type": "InstanceReady", "status": "False", "reason": "InstanceCreateFailed",
		"message": "Quota exceeded for cores"}}
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": "m-1", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
			"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "c"}, "annotations": map[string]any{"a": "b"},
			"managedFields": []any{map[string]any{"manager": "capo"}}},
		"spec": map[string]any{"flavor": map[string]any{"id": "f"}},
		"status": map[string]any{"conditions": conds, "initialization": map[string]any{"provisioned": false},
			"resolved": map[string]any{"imageID": "i"}, "addresses": []any{map[string]any{"address": "10.0.0.1"}}},
	}}
	out, err := projectInfra(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": "m-1", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
			"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "c"}},
		"status": map[string]any{"conditions": conds, "initialization": map[string]any{"provisioned": false}},
	}
	u := out.(*unstructured.Unstructured)
	if !reflect.DeepEqual(u.Object, want) {
		t.Errorf("projected = %v\nwant %v", u.Object, want)
	}
	if keys, _ := indexByClusterLabel(u); len(keys) != 1 || keys[0] != "ns/c" {
		t.Errorf("index keys = %v", keys)
	}
	if got := unstructuredConditions(u); len(got) != 1 || got[0].Message != "Quota exceeded for cores" {
		t.Errorf("conditions = %+v", got)
	}
	// A tombstone passes through.
	if tomb, _ := projectInfra("tombstone"); tomb != "tombstone" {
		t.Errorf("tombstone = %v", tomb)
	}
}
