package capi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// foreignStackIDs are stack_ids this driver never writes, with what the
// refusal must name: both Cluster API anchors' shapes, Heat's, and
// garbage that merely contains a slash.
var foreignStackIDs = map[string]string{
	"kube-ab12c":                           "magnum-cluster-api",
	"prod-web-7k2mq4xz3abc":                "magnum-capi-helm",
	"b3b5a1c4-6f0e-4a55-9d1b-2f1e0c9d8a7b": "Heat",
	"../etc":                               "no known driver",
	"ns/":                                  "no known driver",
	"/name":                                "no known driver",
	"a/b/c":                                "no known driver",
	"Upper/case":                           "no known driver",
	"ns/name with space":                   "no known driver",
}

func TestParseRefTakesOnlyThisDriversShape(t *testing.T) {
	for _, ok := range []string{"magnum-0123abcd/prod-web-5d12f6fd", "a/b", "ns/name.with.dots"} {
		if _, got := parseRef(ok); !got {
			t.Errorf("parseRef(%q) refused", ok)
		}
	}
	for id := range foreignStackIDs {
		if r, got := parseRef(id); got {
			t.Errorf("parseRef(%q) = %v, want refused", id, r)
		}
	}
	if err := notManaged(&objects.Cluster{UUID: ptr("u")}); err != nil {
		t.Errorf("no stack_id (not applied yet) is this driver's: %v", err)
	}
	if err := notManaged(&objects.Cluster{UUID: ptr("u"), StackID: ptr("ns/name")}); err != nil {
		t.Errorf("ns/name is this driver's: %v", err)
	}
}

// A row whose stack_id is not this driver's is never reported gone,
// failed or healthy from the absence of a Cluster at the driver's place,
// and every operation on it is refused before anything is written; the
// same operations on a row of this driver's go ahead.
func TestForeignClusterIsNeverReportedGoneAndIsRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for stackID, owner := range foreignStackIDs {
		t.Run(stackID, func(t *testing.T) {
			c := e.newCluster("foreign", nil, &objects.NodeGroup{Name: "w", NodeCount: 2})
			c.StackID, c.Status = ptr(stackID), objects.CreateComplete
			before := e.requests.Load()

			err := e.d.Admit(ctx, e.request(c))
			var ee *exception.Error
			if !errors.As(err, &ee) || ee.Class != "NotSupported" || !errors.Is(err, drivers.ErrNotManaged) {
				t.Fatalf("Admit: %v, want NotSupported wrapping ErrNotManaged", err)
			}
			for _, want := range []string{deref(c.UUID), stackID, owner, "adopted"} {
				if !strings.Contains(ee.Message, want) {
					t.Errorf("refusal %q does not name %q", ee.Message, want)
				}
			}

			// The driver's own entry points refuse too (a resumed
			// operation does not pass through Admit).
			if _, err := e.d.DeleteCluster(ctx, e.request(c)); !errors.Is(err, drivers.ErrNotManaged) {
				t.Errorf("DeleteCluster: %v, want ErrNotManaged (never 'nothing to delete')", err)
			}
			if err := e.create(ctx, c, 60); !errors.Is(err, drivers.ErrNotManaged) {
				t.Errorf("CreateCluster: %v, want ErrNotManaged (no second cluster beside it)", err)
			}
			if err := e.resize(ctx, c, 3, nil, e.nodeGroups(c)[1]); !errors.Is(err, drivers.ErrNotManaged) {
				t.Errorf("ResizeCluster: %v, want ErrNotManaged", err)
			}
			if err := e.d.RotateCredential(ctx, e.request(c)); !errors.Is(err, drivers.ErrNotManaged) {
				t.Errorf("RotateCredential: %v, want ErrNotManaged", err)
			}
			if _, err := e.d.Monitor(ctx, e.request(c)); !errors.Is(err, drivers.ErrNotManaged) {
				t.Errorf("Monitor: %v, want ErrNotManaged (no health from absence)", err)
			}
			// Status sync: settled or being deleted, the row is left as
			// it is; with no Cluster at our place it would otherwise read
			// as gone (DELETE_COMPLETE) or failed.
			for _, status := range []string{objects.CreateComplete, objects.DeleteInProgress, objects.UpdateInProgress} {
				c.Status = status
				ngs := e.nodeGroups(c)
				if err := e.updateStatus(ctx, c, ngs); !errors.Is(err, drivers.ErrNotManaged) {
					t.Errorf("status sync of a %s row: %v, want ErrNotManaged", status, err)
				}
				if c.Status != status {
					t.Errorf("status sync moved a foreign %s row to %s", status, c.Status)
				}
			}
			if n := e.requests.Load() - before; n != 0 {
				t.Errorf("%d requests to the management cluster for a cluster the driver does not manage", n)
			}
			if lines := e.logs.lines("not managed by it", deref(c.UUID)); len(lines) != 1 {
				t.Errorf("%d 'not managed' lines for the cluster, want one (logged once): %q", len(lines), lines)
			}
		})
	}

	// A row of this driver's shape is admitted, and one not applied yet
	// (no stack_id) too.
	own := e.newCluster("own", nil)
	own.StackID = ptr("magnum-" + e.project + "/own-1234")
	if err := e.d.Admit(ctx, e.request(own)); err != nil {
		t.Errorf("Admit of this driver's row: %v", err)
	}
	own.StackID = nil
	if err := e.d.Admit(ctx, e.request(own)); err != nil {
		t.Errorf("Admit of a row not applied yet: %v", err)
	}
}
