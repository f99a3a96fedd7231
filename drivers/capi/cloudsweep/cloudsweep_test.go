package cloudsweep_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// These tests run against cloudsweeptest, a fake cloud; the same scenarios
// run against the real control plane in cloudsweep_real_test.go
// (TestRealOpenStack*). The fake stays for a load balancer held in a
// PENDING_* state, Manila share types and the request paths, which the
// real plane cannot give on demand.
func cloudOf(fake *cloudsweeptest.Cloud) cloudsweep.Cloud {
	return cloudsweep.Cloud{AuthURL: fake.URL + "/identity", ApplicationCredentialID: cloudsweeptest.CredentialID,
		ApplicationCredentialSecret: cloudsweeptest.CredentialSecret, Region: "RegionOne", Interface: "public"}
}

// The cluster's load balancers (with the floating IPs on their VIP ports)
// and its detached volumes go; another cluster's, whose name shares a
// prefix, stay; what cannot go yet is reported as remaining, and a second
// sweep after it settles finishes the job.
func TestSweepDeletesOnlyTheClustersLoadBalancersAndVolumes(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb1", Name: "kube_service_k8s-abc_default_web", VipPortID: "port1"})
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb2", Name: "kube_service_k8s-abc_kube-system_ingress", VipPortID: "port2", ProvisioningStatus: "PENDING_UPDATE"})
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb3", Name: "kube_service_k8s-abcd_default_web", VipPortID: "port3"})
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb4", Name: "k8s-abc-kubeapi", VipPortID: "port4"}) // CAPO's own: CAPO deletes it
	fake.AddFloatingIP(cloudsweeptest.FloatingIP{ID: "fip1", PortID: "port1"})
	fake.AddFloatingIP(cloudsweeptest.FloatingIP{ID: "fip3", PortID: "port3"})
	fake.AddFloatingIP(cloudsweeptest.FloatingIP{ID: "fip4", PortID: "port4"})
	mine := map[string]string{cloudsweep.VolumeClusterKey: "k8s-abc"}
	fake.AddVolume(cloudsweeptest.Volume{ID: "vol1", Status: "available", Metadata: mine})
	fake.AddVolume(cloudsweeptest.Volume{ID: "vol2", Status: "in-use", Metadata: mine})
	fake.AddVolume(cloudsweeptest.Volume{ID: "vol3", Status: "available", Metadata: map[string]string{cloudsweep.VolumeClusterKey: "k8s-abcd"}})
	fake.AddVolume(cloudsweeptest.Volume{ID: "vol4", Status: "available"})

	s := cloudsweep.New(0)
	ctx := context.Background()
	res, err := s.Sweep(ctx, cloudOf(fake), "k8s-abc", cloudsweep.What{LoadBalancers: true, Volumes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.DeletedLoadBalancers != 1 || res.DeletedFloatingIPs != 1 || res.DeletedVolumes != 1 {
		t.Errorf("deleted %d load balancers, %d floating IPs, %d volumes; want 1, 1, 1", res.DeletedLoadBalancers, res.DeletedFloatingIPs, res.DeletedVolumes)
	}
	if res.Done() || len(res.Remaining) != 2 || !strings.Contains(strings.Join(res.Remaining, ","), "PENDING_UPDATE") ||
		!strings.Contains(strings.Join(res.Remaining, ","), "vol2 is in-use") {
		t.Errorf("remaining = %q, want the pending load balancer and the attached volume", res.Remaining)
	}
	lbs, fips, vols := fake.Left()
	if !slices.Equal(lbs, []string{"lb2", "lb3", "lb4"}) || !slices.Equal(fips, []string{"fip3", "fip4"}) || !slices.Equal(vols, []string{"vol2", "vol3", "vol4"}) {
		t.Errorf("left load balancers %v, floating IPs %v, volumes %v", lbs, fips, vols)
	}
	for _, r := range fake.Requests() {
		if strings.HasPrefix(r, "DELETE /lb/") && !strings.Contains(r, "cascade=true") {
			t.Errorf("load balancer deleted without cascade: %s", r)
		}
	}

	// The load balancer settles, the server holding the volume goes.
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb2", Name: "kube_service_k8s-abc_kube-system_ingress", VipPortID: "port2"})
	fake.SetVolumeStatus("vol2", "available")
	res, err = s.Sweep(ctx, cloudOf(fake), "k8s-abc", cloudsweep.What{LoadBalancers: true, Volumes: true})
	if err != nil || !res.Done() {
		t.Fatalf("second sweep: %+v, %v; want done", res, err)
	}
	lbs, _, vols = fake.Left()
	if !slices.Equal(lbs, []string{"lb3", "lb4"}) || !slices.Equal(vols, []string{"vol3", "vol4"}) {
		t.Errorf("after the second sweep: load balancers %v, volumes %v", lbs, vols)
	}

	// Idempotent: nothing left, nothing to do, no error.
	if res, err := s.Sweep(ctx, cloudOf(fake), "k8s-abc", cloudsweep.What{LoadBalancers: true, Volumes: true}); err != nil || !res.Done() ||
		res.DeletedLoadBalancers+res.DeletedVolumes+res.DeletedFloatingIPs != 0 {
		t.Errorf("third sweep: %+v, %v", res, err)
	}
}

// What selects: a load-balancer sweep leaves volumes alone (they are still
// attached while the cluster's servers live).
func TestSweepDoesOnlyWhatIsAsked(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddLoadBalancer(cloudsweeptest.LoadBalancer{ID: "lb1", Name: "kube_service_k8s-abc_default_web"})
	fake.AddVolume(cloudsweeptest.Volume{ID: "vol1", Status: "available", Metadata: map[string]string{cloudsweep.VolumeClusterKey: "k8s-abc"}})
	res, err := cloudsweep.New(0).Sweep(context.Background(), cloudOf(fake), "k8s-abc", cloudsweep.What{LoadBalancers: true})
	if err != nil || res.DeletedLoadBalancers != 1 || res.DeletedVolumes != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r, "/vol/") {
			t.Errorf("a load-balancer sweep called Cinder: %s", r)
		}
	}
}

// A wrong or revoked credential is a clear error that names the
// credential's id and never its secret; an incomplete one makes no request.
func TestSweepCredentialErrors(t *testing.T) {
	fake := cloudsweeptest.New(t)
	bad := cloudOf(fake)
	bad.ApplicationCredentialSecret = "wrong-secret-value"
	_, err := cloudsweep.New(0).Sweep(context.Background(), bad, "k8s-abc", cloudsweep.What{LoadBalancers: true})
	if err == nil || !strings.Contains(err.Error(), cloudsweeptest.CredentialID) || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Errorf("bad credential: %v", err)
	}
	n := len(fake.Requests())
	incomplete := cloudOf(fake)
	incomplete.ApplicationCredentialID = ""
	if _, err := cloudsweep.New(0).Sweep(context.Background(), incomplete, "k8s-abc", cloudsweep.What{Volumes: true}); err == nil ||
		!strings.Contains(err.Error(), "incomplete") {
		t.Errorf("incomplete credential: %v", err)
	}
	if _, err := cloudsweep.New(0).Sweep(context.Background(), cloudOf(fake), "", cloudsweep.What{Volumes: true}); err == nil {
		t.Error("an empty cluster name was accepted: it would match every cluster's load balancers")
	}
	if got := len(fake.Requests()); got != n {
		t.Errorf("%d requests made with an incomplete credential or no cluster name", got-n)
	}
}
