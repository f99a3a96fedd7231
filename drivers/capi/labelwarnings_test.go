package capi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
)

// A label the driver does not understand, and one the cluster's class
// cannot apply, are named in the Cluster's annotation at create and in
// the cluster's status_reason from then on; their values never are.
// magnum-v2 names CAPO kinds no CAPO release serves (the test server has
// CAPO v0.14.2's): its in-memory variant (same variables) stands in for it.
func TestCreateReportsLabelsNotApplied(t *testing.T) {
	dir := t.TempDir()
	if _, err := apitest.WriteInMemoryClassDir(dir, "v2", classBundleYAML(t, "v2")); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, Options{CreateTimeout: time.Hour, ClusterClassVersion: "v2", ClassDir: dir}, nil)
	c := e.newCluster("warned", map[string]string{"kube_tag": "v1.33.4", "http_proxy": "http://user:secret@proxy:3128",
		"heat_container_agent_tag": "wallaby-stable-1"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	cl, err := e.d.liveCluster(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := "labels not understood by the Cluster API driver, ignored: heat_container_agent_tag; " +
		"labels not applied by ClusterClass magnum-v2 (an upgrade to a newer class applies them): http_proxy"
	if got := cl.Annotations[annotationLabelWarnings]; got != want {
		t.Errorf("annotation %q\nwant %q", got, want)
	}
	e.syncUntil(t, c, objects.CreateInProgress, "(warning: "+want+")")
	if strings.Contains(deref(c.StatusReason), "secret") {
		t.Errorf("status_reason shows a label value: %q", deref(c.StatusReason))
	}

	// On the latest class only the unknown label is left.
	e = newEnv(t)
	c = e.newCluster("warned3", map[string]string{"kube_tag": "v1.33.4", "http_proxy": "http://proxy:3128",
		"heat_container_agent_tag": "wallaby-stable-1"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ = refOf(c)
	if cl, err = e.d.liveCluster(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := cl.Annotations[annotationLabelWarnings]; got != "labels not understood by the Cluster API driver, ignored: heat_container_agent_tag" {
		t.Errorf("latest class: annotation %q", got)
	}
}

func TestWithLabelWarnings(t *testing.T) {
	if got := withLabelWarnings("waiting for Cluster", nil); got != "waiting for Cluster" {
		t.Error(got)
	}
}
