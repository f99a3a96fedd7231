package capi

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// A delete leaves nothing behind in the cloud that the cluster's add-ons
// created: the Service load balancers (and their floating IPs) go before
// Cluster API tears the network down, those created meanwhile and the
// PersistentVolumes' Cinder volumes once the Cluster is gone; a volume
// still attached keeps the delete in progress (the credential and its
// Secret kept, so that the next sync can finish), and only then does the
// credential go.
func TestDeleteSweepsTheClustersLoadBalancersAndVolumes(t *testing.T) {
	cloud := cloudsweeptest.New(t)
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour}, nil, func(e *env, d *Deps) {
		e.creds.cloud = cloud
		d.Sweeper = cloudsweep.New(0)
	})
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ctx := context.Background()
	name := p.r.Name
	cloud.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb-web", Name: cloudsweep.LoadBalancerPrefix(name) + "default_web", VipPortID: "port-web"})
	cloud.AddFloatingIP(cloudsweeptest.FloatingIP{ID: "fip-web", PortID: "port-web"})
	cloud.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb-other", Name: cloudsweep.LoadBalancerPrefix(name+"x") + "default_web"})
	mine := map[string]string{cloudsweep.VolumeClusterKey: name}
	cloud.AddVolume(cloudsweeptest.Volume{ID: "vol-attached", Status: "in-use", Metadata: mine})
	cloud.AddVolume(cloudsweeptest.Volume{ID: "vol-free", Status: "available", Metadata: mine})

	p.heldDeletion(c, "MachineDeployments default-worker are being deleted")
	lbs, fips, vols := cloud.Left()
	if !slices.Equal(lbs, []string{"lb-other"}) || len(fips) != 0 {
		t.Fatalf("before the teardown: load balancers %v and floating IPs %v left, want only another cluster's", lbs, fips)
	}
	if len(vols) != 2 {
		t.Fatalf("volumes deleted while the servers may still use them: %v left", vols)
	}
	// A Service created during the teardown gets a load balancer too.
	cloud.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb-late", Name: cloudsweep.LoadBalancerPrefix(name) + "kube-system_ingress"})
	if _, err := e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Patch(ctx, name, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.syncUntil(t, c, objects.DeleteInProgress, "clean-up pending: waiting for volume vol-attached is in-use")
	lbs, _, vols = cloud.Left()
	if !slices.Equal(lbs, []string{"lb-other"}) || !slices.Equal(vols, []string{"vol-attached"}) {
		t.Fatalf("after the Cluster went: load balancers %v, volumes %v", lbs, vols)
	}
	if len(e.creds.revoked) != 0 || len(e.secretNames(t, p.r.Namespace, LabelClusterUUID+"="+*c.UUID+","+LabelSecretKind+"=cloud-credentials")) != 1 {
		t.Fatalf("credential revoked (%v) or its Secret deleted while a volume is left", e.creds.revoked)
	}
	cloud.SetVolumeStatus("vol-attached", "available") // Nova detached it with its server
	e.syncUntil(t, c, objects.DeleteComplete, "")
	if _, _, vols = cloud.Left(); len(vols) != 0 {
		t.Errorf("volumes left at DELETE_COMPLETE: %v", vols)
	}
	if len(e.creds.revoked) != 1 {
		t.Errorf("revoked = %v, want the cluster's credential", e.creds.revoked)
	}
	for _, r := range cloud.Requests() {
		if strings.Contains(r, cloudsweeptest.CredentialSecret) {
			t.Errorf("the credential's secret in a URL: %s", r)
		}
	}
}
