package db_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// pyDBAPI drives Magnum 15.0.1's own dbapi (magnum.db.sqlalchemy.api) on
// the tables whose 15.0.1 model is a subset of the head schema.
const pyDBAPI = `
import sys, json
import magnum.conf
CONF = magnum.conf.CONF
CONF(['--config-file', sys.argv[1]], project='magnum')
from magnum.common import context
from magnum.db.sqlalchemy import api
conn = api.Connection()
ctx = context.make_admin_context(all_tenants=True)
op = sys.argv[2]
if op == 'read':
    ct_uuid, cluster_uuid, ng_uuid = sys.argv[3:6]
    ct = conn.get_cluster_template_by_uuid(ctx, ct_uuid)
    ng = conn.get_nodegroup_by_uuid(ctx, cluster_uuid, ng_uuid)
    svc = conn.get_magnum_service_by_host_and_binary('h1', 'magnum-conductor')
    q = conn.get_quota_by_project_id_resource('p1', 'Cluster')
    print(json.dumps({
        'ct_labels': ct.labels, 'ct_public': ct.public, 'ct_fip': ct.floating_ip_enabled, 'ct_server_type': ct.server_type,
        'ng_labels': ng.labels, 'ng_addresses': ng.node_addresses, 'ng_count': ng.node_count, 'ng_default': ng.is_default,
        'svc_count': svc.report_count, 'svc_seen': svc.last_seen_up is not None, 'svc_disabled': svc.disabled,
        'quota': q.hard_limit,
    }))
else:
    cluster_uuid = sys.argv[3]
    ct = conn.create_cluster_template({'name': 'py-ct', 'labels': {'a': 'b'}, 'public': True, 'coe': 'kubernetes',
                                       'project_id': 'p9', 'tags': None})
    ng = conn.create_nodegroup({'name': 'py-ng', 'cluster_id': cluster_uuid, 'project_id': 'p9', 'role': 'worker',
                                'node_count': 4, 'node_addresses': ['1.2.3.4'], 'labels': None})
    x = conn.create_x509keypair({'certificate': 'C', 'private_key': 'K', 'project_id': 'p9'})
    svc = conn.create_magnum_service({'host': 'py', 'binary': 'magnum-conductor'})
    conn.update_magnum_service(svc.id, {'report_count': 1})
    print(json.dumps({'ct': ct.uuid, 'ng': ng.uuid, 'x509': x.uuid}))
`

// TestInteropWithPythonDBAPI: rows the Go store writes read back the same
// through Magnum's Python dbapi, and the other way round.
func TestInteropWithPythonDBAPI(t *testing.T) {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/magnum/db/sqlalchemy/api.py"); err != nil {
		t.Fatalf("python3-magnum is required for the interop test (apt-get install -y python3-magnum python3-pymysql): %v", err)
	}
	_, url := dbtest.MySQL(t)
	ctx := adminCtx()
	s := dbtest.Migrated(t, url, db.Options{}, nil)

	conf := filepath.Join(t.TempDir(), "magnum.conf")
	must(t, os.WriteFile(conf, []byte("[database]\nconnection = "+url+"\n"), 0o600))
	python := func(args ...string) map[string]any {
		t.Helper()
		out, err := testkit.Output(testkit.ToolTimeout, "/usr/bin/python3", append([]string{"-c", pyDBAPI, conf}, args...)...)
		if err != nil {
			var stderr []byte
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("python dbapi %v: %v\n%s", args, err, stderr)
		}
		var res map[string]any
		must(t, json.Unmarshal(out, &res))
		return res
	}

	// Go writes, Python reads.
	ct := &objects.ClusterTemplate{Name: objects.Str("go-ct"), Coe: "kubernetes", Public: true,
		Labels: map[string]string{"kube_tag": "v1.30", "ü": "x"}}
	objects.Unset(ct, "floating_ip_enabled") // left to the column default, as Python leaves it
	must(t, s.CreateClusterTemplate(ctx, ct))
	c := cluster("c", "p1", objects.CreateComplete)
	c.ClusterTemplateID = ct.UUID
	must(t, s.CreateCluster(ctx, c))
	ng := nodegroup(c, "w", "worker", 3)
	ng.NodeAddresses = []string{"10.0.0.1", "10.0.0.2"}
	must(t, s.CreateNodeGroup(ctx, ng))
	for range 3 {
		_, err := s.ReportServiceUp(ctx, "h1", "magnum-conductor")
		must(t, err)
	}
	must(t, s.CreateQuota(ctx, &objects.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 7}))
	got := python("read", *ct.UUID, *c.UUID, ng.UUID)
	want := map[string]any{
		"ct_labels": map[string]any{"kube_tag": "v1.30", "ü": "x"}, "ct_public": true, "ct_fip": true, "ct_server_type": "vm",
		"ng_labels": map[string]any{}, "ng_addresses": []any{"10.0.0.1", "10.0.0.2"}, "ng_count": 3.0, "ng_default": true,
		"svc_count": 3.0, "svc_seen": true, "svc_disabled": false, "quota": 7.0,
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Fatalf("python read\n got %s\nwant %s", g, w)
	}

	// Python writes, Go reads.
	ids := python("write", *c.UUID)
	pct, err := s.GetClusterTemplateByUUID(ctx, ids["ct"].(string))
	must(t, err)
	if pct.Labels["a"] != "b" || !pct.Public || !pct.FloatingIPEnabled || pct.Hidden || pct.Tags != nil {
		t.Fatalf("python template read by Go: %+v", pct)
	}
	png, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ids["ng"].(string))
	must(t, err)
	if png.NodeCount != 4 || !slices.Equal(png.NodeAddresses, []string{"1.2.3.4"}) || png.Labels == nil || len(png.Labels) != 0 {
		t.Fatalf("python nodegroup read by Go (labels None must read as {}): %+v", png)
	}
	x, err := s.GetX509KeyPairByUUID(ctx, ids["x509"].(string))
	must(t, err)
	if objects.Deref(x.PrivateKey) != "K" {
		t.Fatalf("x509 %+v", x)
	}
	svc, err := s.GetMagnumServiceByHostAndBinary(ctx, "py", "magnum-conductor")
	must(t, err)
	if svc == nil || svc.ReportCount != 1 || svc.LastSeenUp == nil {
		t.Fatalf("python heartbeat row read by Go: %+v", svc)
	}
	up, err := s.ReportServiceUp(ctx, "py", "magnum-conductor")
	must(t, err)
	if up.ID != svc.ID || up.ReportCount != 2 {
		t.Fatalf("Go heartbeat on python row: %+v", up)
	}
}
