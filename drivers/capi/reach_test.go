package capi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// cutter stands between the driver and the API server. While cut, every
// new request fails as a refused connection; cutting with closeOpen also
// ends the responses still being read (the informers' watches), as a
// management cluster that went away would. Without closeOpen the watches
// stay open and silent: a network that drops packets.
type cutter struct {
	cut  atomic.Bool
	mu   sync.Mutex
	open map[*cutBody]struct{}
}

type cutBody struct {
	io.ReadCloser
	c    *cutter
	once sync.Once
}

func (b *cutBody) Close() error {
	b.once.Do(func() {
		b.c.mu.Lock()
		delete(b.c.open, b)
		b.c.mu.Unlock()
	})
	return b.ReadCloser.Close()
}

func (c *cutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if c.cut.Load() {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		b := &cutBody{ReadCloser: resp.Body, c: c}
		c.mu.Lock()
		if c.open == nil {
			c.open = map[*cutBody]struct{}{}
		}
		c.open[b] = struct{}{}
		c.mu.Unlock()
		resp.Body = b
		return resp, nil
	})
}

func (c *cutter) set(cut, closeOpen bool) {
	c.cut.Store(cut)
	if !closeOpen {
		return
	}
	c.mu.Lock()
	bodies := make([]*cutBody, 0, len(c.open))
	for b := range c.open {
		bodies = append(bodies, b)
	}
	c.mu.Unlock()
	for _, b := range bodies {
		_ = b.Close()
	}
}

// inProgress creates a cluster that Cluster API has not reported on yet.
func inProgress(t *testing.T, e *env) (*objects.Cluster, *capi) {
	t.Helper()
	c := e.newCluster("reach", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	p := &capi{t: t, e: e, r: r, c: c}
	e.syncUntil(t, c, objects.CreateInProgress, "InfrastructureReady not reported yet")
	return c, p
}

// completes plays Cluster API finishing the create (through the test's own
// client, which the cutter does not touch).
func (p *capi) completes() {
	p.t.Helper()
	p.controlPlane(1, "v1.33.4")
	p.machine(p.r.Name+"-cp-0", "", "srv-cp-0", "10.0.0.10", true)
	p.machineDeployment("default-worker", 1)
	p.mdStatus("default-worker", 1, 1, 1, settledMDConds()...)
	p.machine(p.r.Name+"-w-0", "default-worker", "srv-w-0", "10.0.1.10", false)
	if _, err := p.e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Patch(context.Background(), p.r.Name, "application/merge-patch+json",
		[]byte(`{"spec":{"controlPlaneEndpoint":{"host":"203.0.113.7","port":6443}}}`), metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		p.t.Fatal(err)
	}
	p.kubeconfigSecret("https://203.0.113.7:6443")
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = healthyConds()
		st.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}
	})
}

// TestLostManagementClusterHoldsStatusUntilCachesAreFresh: the management
// cluster goes away while a create runs, Cluster API finishes the create
// meanwhile, and the create deadline passes. While it is away, status sync
// and health report the driver not ready (the conductor then leaves the
// cluster alone) instead of judging the stale cache; once it answers, the
// rebuilt caches show the finished create, and the cluster becomes
// CREATE_COMPLETE, not CREATE_FAILED on its deadline.
func TestLostManagementClusterHoldsStatusUntilCachesAreFresh(t *testing.T) {
	var cut cutter
	e := newEnvWith(t, Options{CreateTimeout: time.Hour, ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 2 * time.Second}, cut.wrap)
	c, p := inProgress(t, e)

	cut.set(true, true)
	eventually(t, "the driver notices", func() (bool, string) {
		err := e.updateStatus(context.Background(), c, e.nodeGroups(c))
		return errors.Is(err, drivers.ErrNotReady) && strings.Contains(fmtErr(err), "has not answered since"), fmtErr(err)
	})
	if _, err := e.d.Monitor(context.Background(), e.request(c)); !errors.Is(err, drivers.ErrNotReady) {
		t.Fatalf("Monitor while lost: %v, want ErrNotReady (health UNKNOWN)", err)
	}
	// An operation asked for now is refused before the conductor changes
	// anything, with a reason naming the outage (not a raw TLS timeout
	// after the cluster was claimed).
	admitErr := e.d.Admit(context.Background(), e.request(c))
	var refusal *exception.Error
	if !errors.As(admitErr, &refusal) || refusal.Class != "Conflict" || !errors.Is(admitErr, drivers.ErrNotReady) ||
		!strings.Contains(refusal.Message, "has not answered since") || !strings.Contains(refusal.Message, "left as it is") {
		t.Fatalf("Admit while lost: %v, want Conflict naming the outage", admitErr)
	}

	p.completes()
	later := time.Now().Add(2 * time.Hour)
	e.now.Store(&later)
	for range 3 {
		err := e.updateStatus(context.Background(), c, e.nodeGroups(c))
		if !errors.Is(err, drivers.ErrNotReady) {
			t.Fatalf("sync while lost: %v", err)
		}
		if c.Status != objects.CreateInProgress {
			t.Fatalf("sync while lost changed the status to %s: %q", c.Status, deref(c.StatusReason))
		}
	}

	cut.set(false, false)
	eventually(t, "CREATE_COMPLETE once the management cluster answers", func() (bool, string) {
		err := e.updateStatus(context.Background(), c, e.nodeGroups(c))
		if err != nil && !errors.Is(err, drivers.ErrNotReady) {
			t.Fatal(err)
		}
		if c.Status != objects.CreateInProgress && c.Status != objects.CreateComplete {
			t.Fatalf("status %s %q", c.Status, deref(c.StatusReason))
		}
		return err == nil && c.Status == objects.CreateComplete, fmtErr(err) + " " + c.Status
	})
	if deref(c.APIAddress) != "https://203.0.113.7:6443" {
		t.Errorf("api_address %q", deref(c.APIAddress))
	}
	if _, err := e.d.Monitor(context.Background(), e.request(c)); err != nil {
		t.Fatalf("Monitor after recovery: %v", err)
	}
	if err := e.d.Admit(context.Background(), e.request(c)); err != nil {
		t.Fatalf("Admit after recovery: %v", err)
	}
}

// TestDeadlineIsCheckedAgainstTheManagementCluster: the informers see no
// error (their watches hang, as behind a network that drops packets) and
// the periodic probe is far off, so the driver has not noticed the loss.
// A sync that would fail the cluster on its deadline asks the management
// cluster first, and does not fail it when that goes unanswered.
func TestDeadlineIsCheckedAgainstTheManagementCluster(t *testing.T) {
	var cut cutter
	e := newEnvWith(t, Options{CreateTimeout: time.Hour, ProbeInterval: time.Hour, ProbeTimeout: 2 * time.Second}, cut.wrap)
	c, _ := inProgress(t, e)

	cut.set(true, false)
	if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil || c.Status != objects.CreateInProgress {
		t.Fatalf("before the deadline the cache is read as usual: %v, %s", err, c.Status)
	}
	later := time.Now().Add(2 * time.Hour)
	e.now.Store(&later)
	err := e.updateStatus(context.Background(), c, e.nodeGroups(c))
	if !errors.Is(err, drivers.ErrNotReady) || !strings.Contains(err.Error(), "a deadline passed") {
		t.Fatalf("past the deadline with the management cluster away: %v", err)
	}
	if c.Status != objects.CreateInProgress {
		t.Fatalf("status %s %q, want CREATE_IN_PROGRESS left as it was", c.Status, deref(c.StatusReason))
	}
	if e.d.lost.Load() == nil {
		t.Fatal("the failed check did not mark the management cluster lost")
	}

	// With the management cluster back, the same sync fails the cluster
	// on its deadline, as before.
	cut.set(false, false)
	e.d.kickProbe(nil) // the next periodic probe, without waiting an hour
	eventually(t, "the driver recovers", func() (bool, string) {
		err := e.d.current()
		return err == nil, fmtErr(err)
	})
	e.syncUntil(t, c, objects.CreateFailed, "timed out")
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
