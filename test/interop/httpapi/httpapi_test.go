// Package httpapi is the drop-in test at the level operators and users see:
// Debian's magnum-api (its WSGI application, controllers, policy and
// validation, with every object method sent to the conductor, as the
// magnum-api binary runs, and the Go conductor's driver package apihost/
// on its path) serves the Magnum REST API over HTTP, once in front of our
// conductor and once in front of the Python conductor of the same release,
// for each release (15.0.1 on the host, 23.0.0 in the sid chroot).
// One scenario of HTTP requests (templates, quotas, a cluster's whole life,
// nodegroups, resize, upgrade, certificates, stats, mservices and the
// errors) runs against both, and every response must carry the same status
// code and the same body, apart from ids, times and what the two drivers
// report differently. The outcomes are also checked one by one, so that two
// conductors wrong in the same way still fail.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

var bins *harness.Binaries

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bins)) }

// step is one request of the scenario: the response's status code and its
// body without the volatile fields.
type step struct {
	Name string
	Code int
	Body string
}

// volatile are the fields whose values differ between any two runs (ids,
// times, the host, certificates), or between the two drivers (the
// simulated driver reports addresses, versions and reasons, and records
// the new template on upgrade, as the CAPI driver does; the Python
// zero-delay driver does none of that).
var volatile = map[string]bool{
	"id": true, "uuid": true, "created_at": true, "updated_at": true, "links": true,
	"host": true, "report_count": true, "stack_id": true, "status_reason": true,
	"api_address": true, "coe_version": true, "container_version": true, "node_addresses": true,
	"master_addresses": true, "cluster_template_id": true, "cluster_id": true, "bay_uuid": true,
	"cluster_uuid": true, "pem": true, "csr": true, "version": true, "request_id": true,
}

// uuidRE matches the ids inside messages.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func normalize(v any) any {
	switch x := v.(type) {
	case string:
		return uuidRE.ReplaceAllString(x, "<uuid>")
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !volatile[k] {
				out[k] = normalize(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// api is a magnum-api client with the headers keystonemiddleware's
// auth_token would have set for an admin of project p-http (or, inside
// asMember, for a member of project p-other).
type api struct {
	t      *testing.T
	base   string
	steps  []step
	resp   map[string]response // by step name
	member bool
}

// asMember runs f as u-other, a member (not an admin) of project p-other.
func (a *api) asMember(f func()) {
	a.member = true
	defer func() { a.member = false }()
	f()
}

// response is one decoded answer.
type response struct {
	code int
	body map[string]any
	raw  []byte
}

func (r response) str(keys ...string) string {
	var v any = r.body
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

func (a *api) do(method, path string, body any) response {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	user, project, roles := "u-http", "p-http", "admin"
	if a.member {
		user, project, roles = "u-other", "p-other", "member,reader"
	}
	for k, v := range map[string]string{
		"X-User-Id": user, "X-Project-Id": project, "X-User-Domain-Id": "default",
		"X-Roles": roles, "OpenStack-API-Version": "container-infra latest",
		"Content-Type": "application/json", "Accept": "application/json",
	} {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	r := response{code: resp.StatusCode, raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			a.t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, raw)
		}
	}
	return r
}

// record runs one request and keeps its normalized outcome as step name.
func (a *api) record(name, method, path string, body any) response {
	a.t.Helper()
	r := a.do(method, path, body)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalize(r.body)); err != nil {
		a.t.Fatal(err)
	}
	b := bytes.TrimSpace(buf.Bytes())
	a.steps = append(a.steps, step{Name: name, Code: r.code, Body: string(b)})
	a.t.Logf("%s: %s %s → %d %s", name, method, path, r.code, b)
	if a.resp == nil {
		a.resp = map[string]response{}
	}
	a.resp[name] = r
	return r
}

// wait polls GET path until pick(response) is want, and records it as step
// name. Both conductors poll their drivers every 10 s: after a minute the
// scenario stops.
func (a *api) wait(name, path string, pick func(response) string, want string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got string
	if err := testkit.Await(ctx, 500*time.Millisecond, fmt.Sprintf("%s: GET %s saying %s", name, path, want), func() (bool, string) {
		r := a.do(http.MethodGet, path, nil)
		got = pick(r)
		return got == want, fmt.Sprintf("%s: %s", got, r.raw)
	}); err != nil {
		a.t.Fatal(err)
	}
	a.steps = append(a.steps, step{Name: name, Body: got})
	a.t.Logf("%s: %s", name, got)
}

func status(r response) string {
	if r.code == http.StatusNotFound {
		return "GONE"
	}
	return r.str("status")
}

func nodeCount(r response) string {
	return fmt.Sprintf("%s/%v", r.str("status"), r.body["node_count"])
}

// scenario drives one magnum-api of release r through the whole REST
// surface the conductor serves.
func scenario(a *api, r pyrelease.Release, csrPEM []byte) {
	template := func(name, kubeTag string) map[string]any {
		return map[string]any{"name": name, "image_id": "simulated", "coe": "kubernetes",
			"server_type": "vm", "external_network_id": "public", "keypair_id": "kp",
			"flavor_id": "m1.small", "master_flavor_id": "m1.medium",
			"labels": map[string]string{"kube_tag": kubeTag}}
	}
	a.record("mservices", "GET", "/v1/mservices", nil)
	a.record("template_create", "POST", "/v1/clustertemplates", template("t1", "v1.33.1"))
	a.record("template_create_second", "POST", "/v1/clustertemplates", template("t2", "v1.34.0"))
	a.record("template_get", "GET", "/v1/clustertemplates/t1", nil)
	a.record("template_list", "GET", "/v1/clustertemplates?sort_key=name", nil)
	a.record("template_patch", "PATCH", "/v1/clustertemplates/t2",
		[]map[string]any{{"op": "replace", "path": "/dns_nameserver", "value": "192.0.2.53"}})
	a.record("template_missing", "GET", "/v1/clustertemplates/nope", nil)

	a.record("quota_create", "POST", "/v1/quotas", map[string]any{"project_id": "p-http", "resource": "Cluster", "hard_limit": 1})
	a.record("quota_get", "GET", "/v1/quotas/p-http/Cluster", nil)
	a.record("cluster_create", "POST", "/v1/clusters",
		map[string]any{"name": "c1", "cluster_template_id": "t1", "master_count": 1, "node_count": 2})
	a.record("cluster_create_over_quota", "POST", "/v1/clusters",
		map[string]any{"name": "c2", "cluster_template_id": "t1", "master_count": 1, "node_count": 1})
	a.record("quota_update", "PATCH", "/v1/quotas/p-http/Cluster", map[string]any{"project_id": "p-http", "resource": "Cluster", "hard_limit": 5})
	a.record("quota_list", "GET", "/v1/quotas?all_tenants=True", nil)
	a.record("cluster_create_missing_template", "POST", "/v1/clusters",
		map[string]any{"name": "c3", "cluster_template_id": "nope", "master_count": 1, "node_count": 1})
	a.wait("wait_create_complete", "/v1/clusters/c1", status, "CREATE_COMPLETE")
	a.record("cluster_get", "GET", "/v1/clusters/c1", nil)
	a.record("cluster_list", "GET", "/v1/clusters", nil)
	a.record("cluster_missing", "GET", "/v1/clusters/nope", nil)
	if r == pyrelease.Magnum15 {
		// The bay and baymodel view of the same rows (15.0.1 still serves
		// it; 2026.2 does not).
		a.record("bay_list", "GET", "/v1/bays", nil)
		a.record("bay_get", "GET", "/v1/bays/c1", nil)
		a.record("baymodel_get", "GET", "/v1/baymodels/t1", nil)
	}
	// Another project sees none of p-http's rows: the conductor filters
	// every query by the caller's project.
	a.asMember(func() {
		a.record("other_cluster_get", "GET", "/v1/clusters/c1", nil)
		a.record("other_cluster_list", "GET", "/v1/clusters", nil)
		a.record("other_template_list", "GET", "/v1/clustertemplates", nil)
		a.record("other_nodegroup_list", "GET", "/v1/clusters/c1/nodegroups", nil)
		a.record("other_cluster_delete", "DELETE", "/v1/clusters/c1", nil)
		a.record("other_ca_get", "GET", "/v1/certificates/c1", nil)
	})
	a.record("ca_get", "GET", "/v1/certificates/c1", nil)
	a.record("ca_sign", "POST", "/v1/certificates", map[string]any{"cluster_uuid": "c1", "csr": string(csrPEM)})
	a.record("stats", "GET", "/v1/stats", nil)
	a.record("ca_rotate", "PATCH", "/v1/certificates/c1", nil)
	a.wait("wait_ca_rotated", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	a.record("ca_get_after_rotate", "GET", "/v1/certificates/c1", nil)
	a.record("template_delete_referenced", "DELETE", "/v1/clustertemplates/t1", nil)

	a.record("cluster_scale", "PATCH", "/v1/clusters/c1",
		[]map[string]any{{"op": "replace", "path": "/node_count", "value": 3}})
	a.wait("wait_scale_complete", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	// Listed only now: before the first status sync of an operation, the
	// default nodegroups' status depends on whether a sync caught the
	// cluster inside its create (on both conductors).
	a.record("nodegroup_list", "GET", "/v1/clusters/c1/nodegroups", nil)
	a.record("worker_after_scale", "GET", "/v1/clusters/c1/nodegroups/default-worker", nil)

	a.record("nodegroup_create", "POST", "/v1/clusters/c1/nodegroups",
		map[string]any{"name": "np1", "node_count": 2, "flavor_id": "m1.large"})
	a.wait("wait_nodegroup_created", "/v1/clusters/c1/nodegroups/np1", status, "CREATE_COMPLETE")
	a.wait("wait_cluster_after_nodegroup", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	a.record("nodegroup_duplicate", "POST", "/v1/clusters/c1/nodegroups",
		map[string]any{"name": "np1", "node_count": 1})
	a.record("nodegroup_patch", "PATCH", "/v1/clusters/c1/nodegroups/np1",
		[]map[string]any{{"op": "replace", "path": "/max_node_count", "value": 5}})
	a.wait("wait_nodegroup_updated", "/v1/clusters/c1/nodegroups/np1", status, "UPDATE_COMPLETE")
	a.wait("wait_cluster_after_nodegroup_update", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	a.record("nodegroup_get", "GET", "/v1/clusters/c1/nodegroups/np1", nil)
	a.record("cluster_resize", "POST", "/v1/clusters/c1/actions/resize", map[string]any{"node_count": 1, "nodegroup": "np1"})
	a.wait("wait_resize_complete", "/v1/clusters/c1/nodegroups/np1", nodeCount, "UPDATE_COMPLETE/1")
	a.wait("wait_cluster_after_resize", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	a.record("nodegroup_delete", "DELETE", "/v1/clusters/c1/nodegroups/np1", nil)
	a.wait("wait_nodegroup_deleted", "/v1/clusters/c1/nodegroups/np1", status, "GONE")
	a.wait("wait_cluster_after_nodegroup_delete", "/v1/clusters/c1", status, "UPDATE_COMPLETE")

	a.record("cluster_upgrade", "POST", "/v1/clusters/c1/actions/upgrade",
		map[string]any{"cluster_template": "t2", "max_batch_size": 1, "nodegroup": "default-worker"})
	a.wait("wait_upgrade_complete", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	a.record("stats_after", "GET", "/v1/stats", nil)

	a.record("cluster_delete", "DELETE", "/v1/clusters/c1", nil)
	a.wait("wait_deleted", "/v1/clusters/c1", status, "GONE")
	a.record("cluster_list_empty", "GET", "/v1/clusters", nil)
	a.record("template_delete", "DELETE", "/v1/clustertemplates/t1", nil)
	a.record("template_delete_second", "DELETE", "/v1/clustertemplates/t2", nil)
	a.record("quota_delete", "DELETE", "/v1/quotas/p-http/Cluster", nil)
}

func TestMagnumAPIOverHTTPMatchesPythonConductor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts magnum-api and the Python conductor")
	}
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) { testHTTPAPI(t, r) })
	}
}

// pair is our conductor and the release's Python conductor, each behind
// its own magnum-api of the release.
type pair struct {
	oursHost  string
	conductor *harness.Process
	oursURL   string
	pyURL     string
}

// startPair starts both conductors (ours on MariaDB at our head with the
// simulated driver at zero delay; Python's on MariaDB at its own head) and
// a magnum-api of release r in front of each.
func startPair(t *testing.T, r pyrelease.Release, o harness.APIOptions) pair {
	t.Helper()
	r.Require(t)
	_, dbURL := dbtest.MySQL(t)
	oursCfg := &harness.Config{Database: dbURL, SimDelay: 0, Extra: harness.DriversSection}
	oursConf := oursCfg.Write(t, t.TempDir())
	if out, err := exec.Command(bins.DBManage, "--config-file", oursConf, "upgrade").CombinedOutput(); err != nil {
		t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
	}
	conductor := harness.Start(t, bins, oursConf)
	pyConf := harness.StartPythonConductor(t, r, bins, t.TempDir())
	return pair{
		oursHost: oursCfg.Host, conductor: conductor,
		oursURL: harness.StartPythonAPI(t, r, oursConf, o),
		pyURL:   harness.StartPythonAPI(t, r, pyConf, o),
	}
}

func testHTTPAPI(t *testing.T, r pyrelease.Release) {
	csrPEM, csrKey := newCSR(t)
	p := startPair(t, r, harness.APIOptions{})
	ours := &api{base: p.oursURL}
	py := &api{base: p.pyURL}
	t.Run("scenario", func(t *testing.T) {
		t.Run("ours", func(t *testing.T) {
			t.Parallel()
			ours.t = t
			scenario(ours, r, csrPEM)
		})
		t.Run("python", func(t *testing.T) {
			t.Parallel()
			py.t = t
			scenario(py, r, csrPEM)
		})
	})
	if t.Failed() {
		return
	}
	if len(ours.steps) != len(py.steps) {
		t.Fatalf("ours ran %d steps, python %d", len(ours.steps), len(py.steps))
	}
	for i, o := range ours.steps {
		p := py.steps[i]
		if o != p {
			t.Errorf("%s:\n  ours   %d %s\n  python %d %s", o.Name, o.Code, o.Body, p.Code, p.Body)
		}
	}
	checkOutcomes(t, r, ours.steps)
	for _, side := range []*api{ours, py} {
		checkCertificates(t, side.resp["ca_get"], side.resp["ca_sign"], side.resp["ca_get_after_rotate"], csrKey)
	}
	if got := ours.resp["mservices"].raw; !bytes.Contains(got, []byte(`"host": "`+p.oursHost+`"`)) {
		t.Errorf("mservices should list our conductor's host %s: %s", p.oursHost, got)
	}
	if strings.Contains(p.conductor.Log(), " ERROR ") {
		t.Errorf("our conductor logged errors:\n%s", p.conductor.Log())
	}
}

// checkOutcomes holds our answers to what Magnum's API documents.
func checkOutcomes(t *testing.T, r pyrelease.Release, steps []step) {
	t.Helper()
	by := map[string]step{}
	for _, s := range steps {
		by[s.Name] = s
	}
	codes := map[string]int{
		"mservices": 200, "template_create": 201, "template_patch": 200, "template_missing": 404,
		"quota_create": 201, "cluster_create": 202, "cluster_create_over_quota": 403, "quota_update": 202,
		"cluster_create_missing_template": 404, "cluster_get": 200, "cluster_missing": 404,
		"bay_list": 200, "bay_get": 200, "baymodel_get": 200,
		"other_cluster_get": 404, "other_cluster_list": 200, "other_template_list": 200,
		"other_nodegroup_list": 404, "other_cluster_delete": 404, "other_ca_get": 404,
		"ca_get": 200, "ca_sign": 201, "stats": 200, "ca_rotate": 202, "ca_get_after_rotate": 200,
		"template_delete_referenced": 400,
		"cluster_scale":              202, "nodegroup_create": 202, "nodegroup_duplicate": 409, "nodegroup_patch": 202,
		"cluster_resize": 202, "nodegroup_delete": 204, "cluster_upgrade": 202, "cluster_delete": 204,
		"template_delete": 204, "quota_delete": 204,
	}
	if r != pyrelease.Magnum15 {
		for _, name := range []string{"bay_list", "bay_get", "baymodel_get"} {
			delete(codes, name)
		}
	}
	for name, code := range codes {
		if by[name].Code != code {
			t.Errorf("%s: HTTP %d, want %d: %s", name, by[name].Code, code, by[name].Body)
		}
	}
	for name, want := range map[string]string{
		"wait_create_complete": "CREATE_COMPLETE", "wait_ca_rotated": "UPDATE_COMPLETE",
		"wait_scale_complete":    "UPDATE_COMPLETE",
		"wait_nodegroup_created": "CREATE_COMPLETE",
		"wait_nodegroup_updated": "UPDATE_COMPLETE", "wait_resize_complete": "UPDATE_COMPLETE/1",
		"wait_nodegroup_deleted": "GONE", "wait_upgrade_complete": "UPDATE_COMPLETE", "wait_deleted": "GONE",
		"stats": `{"clusters":1,"nodes":3}`, "stats_after": `{"clusters":1,"nodes":4}`,
		"cluster_list_empty": `{"clusters":[]}`, "other_cluster_list": `{"clusters":[]}`,
		"other_template_list": `{"clustertemplates":[]}`,
		"mservices":           `{"mservices":[{"binary":"magnum-conductor","disabled":false,"disabled_reason":null,"state":"up"}]}`,
	} {
		if by[name].Body != want {
			t.Errorf("%s = %s, want %s", name, by[name].Body, want)
		}
	}
	for name, want := range map[string]string{
		"template_missing":                "ClusterTemplate nope could not be found.",
		"cluster_missing":                 "Cluster nope could not be found.",
		"other_cluster_get":               "Cluster c1 could not be found.",
		"other_cluster_delete":            "Cluster c1 could not be found.",
		"cluster_create_missing_template": "ClusterTemplate nope could not be found.",
		"cluster_create_over_quota":       "You have reached the maximum clusters per project, 1.",
		"template_delete_referenced":      "ClusterTemplate <uuid> is referenced by one or multiple clusters.",
		"nodegroup_duplicate":             "A node group with name np1 already exists in the cluster",
	} {
		if !strings.Contains(by[name].Body, want) {
			t.Errorf("%s: %s, want an error saying %q", name, by[name].Body, want)
		}
	}
}

// checkCertificates: GET /v1/certificates/c1 gives the cluster's CA,
// POST /v1/certificates gives the CSR's key a client certificate signed by
// that CA, for the CSR's subject, and after PATCH /v1/certificates/c1 the
// cluster has a new CA.
func checkCertificates(t *testing.T, caResp, signResp, rotatedResp response, key *rsa.PrivateKey) {
	t.Helper()
	ca := parseCert(t, "ca_get", caResp.str("pem"))
	if ca == nil {
		return
	}
	if !ca.IsCA {
		t.Errorf("ca_get: the certificate is not a CA: %s", ca.Subject)
	}
	cert := parseCert(t, "ca_sign", signResp.str("pem"))
	if cert == nil {
		return
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		t.Errorf("ca_sign: the certificate is not signed by the cluster's CA: %v", err)
	}
	if pub, ok := cert.PublicKey.(*rsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		t.Errorf("ca_sign: the certificate is not for the CSR's key")
	}
	if cert.Subject.CommonName != "http-user" {
		t.Errorf("ca_sign: subject %s, want CN=http-user", cert.Subject)
	}
	rotated := parseCert(t, "ca_get_after_rotate", rotatedResp.str("pem"))
	if rotated == nil {
		return
	}
	if rotated.Equal(ca) || !rotated.IsCA {
		t.Errorf("ca_get_after_rotate: the CA did not change (serial %s)", rotated.SerialNumber)
	}
	if cert.CheckSignatureFrom(rotated) == nil {
		t.Errorf("ca_get_after_rotate: the new CA verifies the old CA's certificate")
	}
}

func parseCert(t *testing.T, step, s string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		t.Errorf("%s: no PEM certificate in the answer: %q", step, s)
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Errorf("%s: %v", step, err)
		return nil
	}
	return cert
}

// newCSR is a certificate request for a kubectl user.
func newCSR(t *testing.T) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "http-user", Organization: []string{"system:masters"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), key
}
