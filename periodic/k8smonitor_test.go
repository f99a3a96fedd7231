package periodic_test

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/periodic"
)

func k8sCluster(api string, labels map[string]string) *objects.Cluster {
	return &objects.Cluster{UUID: objects.Str("9f1c2b7e-0000-4000-8000-000000000001"), Name: objects.Str("k8s"),
		APIAddress: objects.Str(api), FloatingIPEnabled: true, Labels: labels,
		CACertRef: objects.Str("ca-1"), MagnumCertRef: objects.Str("client-1")}
}

func TestKubernetesMonitorMapsHealthAsMagnum(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	// Short timeouts where the case is about a server that does not answer;
	// generous ones where it answers, so that a loaded CI machine's slow TLS
	// handshake is not taken for a dead API server.
	short := periodic.KubernetesMonitorOptions{ConnectTimeout: 300 * time.Millisecond, RequestTimeout: 700 * time.Millisecond}
	generous := periodic.KubernetesMonitorOptions{ConnectTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second}
	for _, tc := range []struct {
		name       string
		api        func(t *testing.T) string
		cluster    func(api string) *objects.Cluster
		wantStatus string
		wantReason map[string]string
		wantErr    bool
	}{
		{name: "healthy", api: func(t *testing.T) string {
			return fakeAPIServer(t, pki, k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": "True", "n1": "True"}))).URL
		}, wantStatus: objects.Healthy, wantReason: map[string]string{"api": "ok", "n0.Ready": "True", "n1.Ready": "True"}},
		{name: "node not ready", api: func(t *testing.T) string {
			return fakeAPIServer(t, pki, k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": "True", "n1": "False"}))).URL
		}, wantStatus: objects.Unhealthy, wantReason: map[string]string{"api": "ok", "n0.Ready": "True", "n1.Ready": "False"}},
		{name: "node without Ready condition", api: func(t *testing.T) string {
			return fakeAPIServer(t, pki, k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": ""}))).URL
		}, wantStatus: objects.Unhealthy, wantReason: map[string]string{"api": "ok", "n0.Ready": "False"}},
		{name: "healthz not ok", api: func(t *testing.T) string {
			return fakeAPIServer(t, pki, k8sHandler(500, "[-]etcd failed: reason withheld", 200, nodesJSON(nil))).URL
		}, wantStatus: objects.Unhealthy, wantReason: map[string]string{"api": "[-]etcd failed: reason withheld"}},
		{name: "nodes refused after healthz", api: func(t *testing.T) string {
			return fakeAPIServer(t, pki, k8sHandler(200, "ok", 403, `{"kind":"Status"}`)).URL
		}, wantStatus: objects.Unhealthy, wantReason: map[string]string{}},
		{name: "not accessible", api: func(t *testing.T) string { return "https://192.0.2.1:6443" },
			cluster: func(api string) *objects.Cluster {
				c := k8sCluster(api, nil)
				c.FloatingIPEnabled = false
				return c
			}, wantStatus: objects.Unknown, wantReason: map[string]string{"api": "The cluster k8s is not accessible."}},
		{name: "master lb label decides", api: func(t *testing.T) string { return "https://192.0.2.1:6443" },
			cluster: func(api string) *objects.Cluster {
				c := k8sCluster(api, map[string]string{"master_lb_floating_ip_enabled": "false"})
				c.MasterLBEnabled = true
				return c
			}, wantStatus: objects.Unknown, wantReason: map[string]string{"api": "The cluster k8s is not accessible."}},
		{name: "auto healer", api: func(t *testing.T) string { return "https://192.0.2.1:6443" },
			cluster: func(api string) *objects.Cluster {
				return k8sCluster(api, map[string]string{"auto_healing_enabled": "True", "auto_healing_controller": "magnum-auto-healer"})
			}, wantStatus: ""},
		{name: "slow", api: func(t *testing.T) string { return fakeAPIServer(t, pki, slowHandler()).URL }, wantErr: true},
		{name: "black hole", api: func(t *testing.T) string { return newBlackHole(t).URL() }, wantErr: true},
		{name: "wrong server certificate", api: func(t *testing.T) string {
			return fakeAPIServer(t, other, k8sHandler(200, "ok", 200, nodesJSON(nil))).URL
		}, wantErr: true},
		{name: "no api address", api: func(t *testing.T) string { return "" }, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := tc.api(t)
			c := k8sCluster(api, nil)
			if tc.cluster != nil {
				c = tc.cluster(api)
			}
			creds := &credentials{pki: pki}
			opts := generous
			if tc.wantErr {
				opts = short
			}
			mon, err := periodic.NewKubernetesMonitors(creds, opts).Monitor(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			h, err := mon.PollHealth(context.Background())
			if elapsed := time.Since(start); tc.wantErr && elapsed > 3*time.Second {
				t.Fatalf("poll took %v: timeouts not honoured", elapsed)
			}
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != tc.wantStatus || (tc.wantReason != nil && !maps.Equal(h.Reason, tc.wantReason)) {
				t.Fatalf("got %s %v, want %s %v", h.Status, h.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestKubernetesMonitorCachesCredentialsPerCertificateRefs(t *testing.T) {
	pki := newTestPKI(t)
	srv := fakeAPIServer(t, pki, k8sHandler(http.StatusOK, "ok", http.StatusOK, nodesJSON(map[string]string{"n0": "True"})))
	creds := &credentials{pki: pki}
	f := periodic.NewKubernetesMonitors(creds, periodic.KubernetesMonitorOptions{})
	c := k8sCluster(srv.URL, nil)
	for range 3 {
		mon, _ := f.Monitor(context.Background(), c)
		if h, err := mon.PollHealth(context.Background()); err != nil || h.Status != objects.Healthy {
			t.Fatalf("%v %v", h, err)
		}
	}
	if n := creds.reads.Load(); n != 1 {
		t.Fatalf("credentials read %d times, want 1", n)
	}
	c.CACertRef = objects.Str("ca-2") // rotated
	mon, _ := f.Monitor(context.Background(), c)
	if _, err := mon.PollHealth(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := creds.reads.Load(); n != 2 {
		t.Fatalf("credentials read %d times after rotation, want 2", n)
	}
}
