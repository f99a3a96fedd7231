package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/test/harness"
)

// ctl runs magnumctl against conf with env, failing the test when it
// does not exit with code.
func ctl(t *testing.T, conf string, env []string, code int, args ...string) harness.CTLResult {
	t.Helper()
	r := harness.RunCTL(bins, conf, env, args...)
	if r.Code != code {
		t.Fatalf("magnumctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// oneLine fails the test unless r's stderr is one line holding each of
// want.
func oneLine(t *testing.T, r harness.CTLResult, want ...string) {
	t.Helper()
	if strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "magnumctl: ") {
		t.Fatalf("stderr is not one line: %q", r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Fatalf("stderr %q lacks %q", r.Stderr, w)
		}
	}
}

// showJSON is magnumctl's JSON of a show command.
func showJSON(t *testing.T, conf string, env []string, args ...string) map[string]any {
	t.Helper()
	r := ctl(t, conf, env, 0, append([]string{"-o", "json"}, args...)...)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, r.Stdout)
	}
	return m
}

// waitLines are the statuses of the lines --wait printed
// ("<time>  +<elapsed>  STATUS[  reason]").
var waitLine = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  \+[0-9hms.]+  ([A-Z_]+)`)

func waitStatuses(out string) string {
	var s []string
	for _, m := range waitLine.FindAllStringSubmatch(out, -1) {
		s = append(s, m[1])
	}
	return strings.Join(s, " ")
}

// TestMagnumctlRefusalsAndExitCodes runs magnumctl against the conductor
// on the simulated driver as an operator would, checking that bad input is
// refused before anything is sent (exit 2, one line, no cluster_create
// reaching the conductor), that the conductor's refusals are printed
// (exit 1), that --wait exits 0 only on the operation's *_COMPLETE, 1 on
// *_FAILED with the reason, 3 when --wait-timeout passes, and shows each
// status with the time elapsed.
func TestMagnumctlRefusalsAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	metrics := harness.FreePort(t)
	conf := (&harness.Config{SimDelay: 1, MetricsListen: metrics}).Write(t, dir)
	harness.Start(t, bins, conf)

	// Templates: the openstack client's defaults, and every field the
	// drivers read.
	ctl(t, conf, nil, 0, "template", "create", "dev", "--os-distro", "simulated", "--image", "img", "--driver", "simulated")
	ct := showJSON(t, conf, nil, "template", "show", "dev")
	if ct["floating_ip_enabled"] != true || ct["master_lb_enabled"] != false || ct["flavor_id"] != "m1.medium" ||
		ct["dns_nameserver"] != "8.8.8.8" || ct["server_type"] != "vm" || ct["coe"] != "kubernetes" {
		t.Fatalf("default template: %v", ct)
	}
	ctl(t, conf, nil, 0, "template", "create", "full", "--coe", "kubernetes", "--image", "ubuntu-2204", "--external-network", "public",
		"--keypair", "kp", "--fixed-network", "net1", "--fixed-subnet", "sub1", "--network-driver", "calico", "--volume-driver", "cinder",
		"--driver", "simulated", "--dns-nameserver", "1.1.1.1", "--flavor", "m1.large", "--master-flavor", "m1.xlarge",
		"--docker-volume-size", "20", "--labels", "kube_tag=v1.33.4,boot_volume_size=40", "--labels", "csi=on",
		"--server-type", "vm", "--os-distro", "ubuntu", "--public", "--hidden", "--tags", "a,b", "--tags", "c",
		"--master-lb-enabled", "--floating-ip-disabled", "--http-proxy", "http://proxy:3128", "--tls-disabled")
	ct = showJSON(t, conf, nil, "template", "show", "full")
	want := map[string]any{"image_id": "ubuntu-2204", "external_network_id": "public", "keypair_id": "kp", "fixed_network": "net1",
		"fixed_subnet": "sub1", "network_driver": "calico", "volume_driver": "cinder", "driver": "simulated", "dns_nameserver": "1.1.1.1",
		"flavor_id": "m1.large", "master_flavor_id": "m1.xlarge", "docker_volume_size": float64(20), "server_type": "vm",
		"cluster_distro": "ubuntu", "public": true, "hidden": true, "tags": "a,b,c", "master_lb_enabled": true,
		"floating_ip_enabled": false, "http_proxy": "http://proxy:3128", "tls_disabled": true,
		"labels": map[string]any{"kube_tag": "v1.33.4", "boot_volume_size": "40", "csi": "on"}}
	for k, v := range want {
		if got, _ := json.Marshal(ct[k]); string(got) != string(mustMarshal(t, v)) {
			t.Errorf("template field %s = %s, want %s", k, got, mustMarshal(t, v))
		}
	}

	// Bad input: nothing sent.
	r := ctl(t, conf, nil, 2, "cluster", "create", "demo", "--cluster-template", "dev", "--node-count", "-1", "--wait")
	oneLine(t, r, "--node-count must be 0 or more, not -1")
	r = ctl(t, conf, nil, 2, "cluster", "create", "demo", "--cluster-template", "dev", "--labels", "kube_tag")
	oneLine(t, r, `"kube_tag" is not key=value`)
	r = ctl(t, conf, nil, 1, "cluster", "create", "demo", "--cluster-template", "nosuch")
	oneLine(t, r, "ClusterTemplateNotFound", "nosuch")
	r = ctl(t, conf, nil, 2, "cluster", "create", "demo", "--cluster-template", "dev", "--master-count", "3")
	oneLine(t, r, "master_count must be 1 when master_lb_enabled is False")
	if out := ctl(t, conf, nil, 0, "cluster", "list").Stdout; strings.Contains(out, "demo") {
		t.Fatalf("a refused create left a cluster:\n%s", out)
	}
	if body := httpGet(t, "http://"+metrics+"/metrics"); strings.Contains(body, `method="cluster_create"`) {
		t.Fatal("cluster_create reached the conductor for refused input")
	}

	// A create followed to CREATE_COMPLETE, with the time elapsed.
	r = ctl(t, conf, nil, 0, "cluster", "create", "demo", "--cluster-template", "dev", "--wait")
	if got := waitStatuses(r.Stdout); !regexp.MustCompile(`^(CREATE_IN_PROGRESS )?CREATE_COMPLETE$`).MatchString(got) ||
		!strings.Contains(r.Stdout, "CREATE_IN_PROGRESS") {
		t.Fatalf("create --wait printed %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 2, "cluster", "create", "demo", "--cluster-template", "dev")
	oneLine(t, r, "a cluster named demo already exists")
	r = ctl(t, conf, nil, 0, "cluster", "show", "demo")
	for _, f := range []string{"status_reason", "health_status_reason", "health_status"} {
		if !regexp.MustCompile(`(?m)^` + f + `\s`).MatchString(r.Stdout) {
			t.Errorf("cluster show lacks %s:\n%s", f, r.Stdout)
		}
	}

	// Updates and resizes: refusals, nothing to change, completion.
	r = ctl(t, conf, nil, 2, "cluster", "update", "demo", "--node-count", "-1")
	oneLine(t, r, "--node-count must be 0 or more")
	r = ctl(t, conf, nil, 2, "cluster", "resize", "demo", "-1")
	oneLine(t, r, "-1 is not a valid count")
	r = ctl(t, conf, nil, 0, "cluster", "update", "demo", "--node-count", "1", "--wait")
	if !strings.Contains(r.Stdout, "nothing to change") {
		t.Fatalf("update to the same count: %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 0, "cluster", "update", "demo", "--node-count", "3", "--wait")
	if got := waitStatuses(r.Stdout); got != "UPDATE_IN_PROGRESS UPDATE_COMPLETE" {
		t.Fatalf("update --wait printed %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 0, "cluster", "resize", "demo", "2", "--wait")
	if got := waitStatuses(r.Stdout); got != "UPDATE_IN_PROGRESS UPDATE_COMPLETE" {
		t.Fatalf("resize --wait printed %q", r.Stdout)
	}
	if ng := ctl(t, conf, nil, 0, "nodegroup", "list", "demo").Stdout; !regexp.MustCompile(`default-worker\s+worker\s+true\s+2\s`).MatchString(ng) {
		t.Fatalf("the resize is not in the nodegroup:\n%s", ng)
	}
	ctl(t, conf, nil, 0, "credential", "rotate", "demo")

	// Nodegroups, an upgrade, a CA rotation: --wait to their ends.
	r = ctl(t, conf, nil, 0, "nodegroup", "create", "demo", "ng1", "--node-count", "1", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasSuffix(got, "CREATE_COMPLETE") {
		t.Fatalf("nodegroup create --wait printed %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 2, "nodegroup", "create", "demo", "ng1")
	oneLine(t, r, "already has a nodegroup named ng1")
	r = ctl(t, conf, nil, 2, "nodegroup", "delete", "demo", "default-worker")
	oneLine(t, r, "is a default nodegroup")
	r = ctl(t, conf, nil, 0, "nodegroup", "delete", "demo", "ng1", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasPrefix(got, "DELETE_IN_PROGRESS") || !strings.HasSuffix(got, "DELETED") {
		t.Fatalf("nodegroup delete --wait printed %q", r.Stdout)
	}
	ctl(t, conf, nil, 0, "template", "create", "dev-next", "--os-distro", "simulated", "--image", "img", "--driver", "simulated",
		"--labels", "kube_tag=v1.34.1")
	r = ctl(t, conf, nil, 0, "cluster", "upgrade", "demo", "dev-next", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasSuffix(got, "UPDATE_COMPLETE") {
		t.Fatalf("upgrade --wait printed %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 0, "ca", "rotate", "demo", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasSuffix(got, "UPDATE_COMPLETE") {
		t.Fatalf("ca rotate --wait printed %q", r.Stdout)
	}

	// A create the driver fails: exit 1 with CREATE_FAILED and the reason.
	r = ctl(t, conf, nil, 1, "cluster", "create", "failing", "--cluster-template", "dev", "--labels", "sim_fail=create", "--wait")
	oneLine(t, r, "CREATE_FAILED", "simulated create failure")
	if !strings.Contains(r.Stdout, "CREATE_FAILED  simulated create failure") {
		t.Fatalf("the CREATE_FAILED line lacks its reason:\n%s", r.Stdout)
	}
	// A create the driver refuses at once: the conductor's error.
	r = ctl(t, conf, nil, 1, "cluster", "create", "refused", "--cluster-template", "dev", "--labels", "sim_fail_sync=create", "--wait")
	oneLine(t, r, "MagnumException", "simulated create failure (label sim_fail_sync)")
	// Deleting a failed cluster: exit 0 once it is gone.
	for _, name := range []string{"failing", "refused"} {
		r = ctl(t, conf, nil, 0, "cluster", "delete", name, "--wait")
		if got := waitStatuses(r.Stdout); !strings.HasSuffix(got, "DELETED") || strings.Contains(got, "FAILED") {
			t.Fatalf("delete --wait of %s printed %q", name, r.Stdout)
		}
	}

	// A create that does not end: --wait-timeout, exit 3; the conductor
	// refuses to update a cluster being created.
	r = ctl(t, conf, nil, 3, "cluster", "create", "slow", "--cluster-template", "dev", "--labels", "sim_hang=true",
		"--wait", "--wait-timeout", "3s")
	oneLine(t, r, "still CREATE_IN_PROGRESS after 3s", "goes on")
	r = ctl(t, conf, nil, 1, "cluster", "update", "slow", "--node-count", "2")
	oneLine(t, r, "NotSupported", "CREATE_IN_PROGRESS")

	r = ctl(t, conf, nil, 0, "cluster", "delete", "demo", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasPrefix(got, "DELETE_IN_PROGRESS") || !strings.HasSuffix(got, "DELETED") {
		t.Fatalf("delete --wait printed %q", r.Stdout)
	}
	r = ctl(t, conf, nil, 1, "cluster", "show", "demo")
	oneLine(t, r, "ClusterNotFound")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMagnumctlClusterConfig: cluster config writes the kubeconfig
// openstack coe cluster config writes: the cluster's API address, its CA,
// and an admin client certificate (system:masters) the conductor signed
// for a key made by magnumctl; the file is the owner's alone, kept unless
// --force, and the printed line points KUBECONFIG at it.
func TestMagnumctlClusterConfig(t *testing.T) {
	dir := t.TempDir()
	conf := (&harness.Config{SimDelay: 0}).Write(t, dir)
	harness.Start(t, bins, conf)
	ctl(t, conf, nil, 0, "template", "create", "dev", "--os-distro", "simulated", "--image", "img", "--driver", "simulated")
	ctl(t, conf, nil, 0, "cluster", "create", "demo", "--cluster-template", "dev", "--wait")
	cl := showJSON(t, conf, nil, "cluster", "show", "demo")
	caPEM := ctl(t, conf, nil, 0, "ca", "show", "demo").Stdout

	out := t.TempDir()
	r := ctl(t, conf, []string{"SHELL=/bin/bash"}, 0, "cluster", "config", "demo", "--dir", out, "--output-certs")
	path := filepath.Join(out, "config")
	if strings.TrimSpace(r.Stdout) != "export KUBECONFIG="+path {
		t.Fatalf("stdout %q", r.Stdout)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v, mode %v", err, st.Mode())
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kcl := kc.Clusters["demo"]
	user := kc.AuthInfos["admin"]
	if kc.CurrentContext != "default" || kcl == nil || user == nil || kcl.Server != cl["api_address"] || kcl.Server == "" ||
		strings.TrimSpace(string(kcl.CertificateAuthorityData)) != strings.TrimSpace(caPEM) {
		t.Fatalf("kubeconfig: current %q, cluster %+v, api_address %v", kc.CurrentContext, kcl, cl["api_address"])
	}
	pair, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
	if err != nil {
		t.Fatalf("the client certificate and key do not match: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(kcl.CertificateAuthorityData) {
		t.Fatal("no CA in the kubeconfig")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the client certificate is not the cluster CA's: %v", err)
	}
	if cert.Subject.CommonName != "admin" || strings.Join(cert.Subject.Organization, ",") != "system:masters" {
		t.Fatalf("client certificate subject %v", cert.Subject)
	}
	for _, f := range []string{"key.pem", "cert.pem", "ca.pem"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if blk, _ := pem.Decode(b); err != nil || blk == nil {
			t.Fatalf("%s: %v", f, err)
		}
	}

	r = ctl(t, conf, nil, 2, "cluster", "config", "demo", "--dir", out)
	oneLine(t, r, "exists", path)
	r = ctl(t, conf, []string{"SHELL=/bin/tcsh"}, 0, "cluster", "config", "demo", "--dir", out, "--force")
	if strings.TrimSpace(r.Stdout) != "setenv KUBECONFIG "+path {
		t.Fatalf("csh: stdout %q", r.Stdout)
	}
	if kc2, err := clientcmd.LoadFromFile(path); err != nil || string(kc2.AuthInfos["admin"].ClientKeyData) == string(user.ClientKeyData) {
		t.Fatalf("--force did not write a new key: %v", err)
	}
}

// e2eKeystone is the Keystone the auth tests use and what a user gives
// magnumctl to authenticate there. It is keystonetest's fake for now: the
// seam for test/openstack's real Keystone, which will give the same.
type e2eKeystone struct {
	authURL string
	// users' openrc-style environments: "demo" (member of project demo),
	// "other" (member of another project).
	env map[string][]string
}

func startKeystone(t *testing.T) *e2eKeystone {
	t.Helper()
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.SetCatalog([]any{map[string]any{"type": "container-infra", "name": "magnum", "id": "m1", "endpoints": []any{}}})
	k := &e2eKeystone{authURL: ks.AuthURL() + "/v3", env: map[string][]string{}}
	for _, u := range []struct{ name, project string }{{"demo", "demo"}, {"other", "elsewhere"}} {
		ks.AddUser(keystonetest.User{ID: "u-" + u.name, Name: u.name, DomainID: "default", DomainName: "Default",
			Password: u.name + "-Pa55", ProjectID: "p-" + u.project, ProjectName: u.project, ProjectDomainID: "default",
			ProjectDomainName: "Default", Roles: []string{"member"}})
		k.env[u.name] = []string{"OS_AUTH_URL=" + k.authURL, "OS_USERNAME=" + u.name, "OS_PASSWORD=" + u.name + "-Pa55",
			"OS_PROJECT_NAME=" + u.project, "OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default",
			"OS_REGION_NAME=RegionOne", "OS_INTERFACE=public", "OS_IDENTITY_API_VERSION=3"}
	}
	return k
}

// TestMagnumctlWithKeystone: with an openrc's variables (or a
// clouds.yaml cloud), magnumctl's requests are the user's: the cluster
// belongs to the token's project and user, other projects do not see it,
// the admin context without Keystone does; a wrong password is one line,
// without secrets, and nothing is sent.
func TestMagnumctlWithKeystone(t *testing.T) {
	ks := startKeystone(t)
	dir := t.TempDir()
	conf := (&harness.Config{SimDelay: 1}).Write(t, dir)
	harness.Start(t, bins, conf)
	demo := ks.env["demo"]

	ctl(t, conf, demo, 0, "template", "create", "dev", "--os-distro", "simulated", "--image", "img", "--driver", "simulated")
	r := ctl(t, conf, demo, 0, "cluster", "create", "demo", "--cluster-template", "dev", "--wait")
	if got := waitStatuses(r.Stdout); !strings.HasSuffix(got, "CREATE_COMPLETE") {
		t.Fatalf("create --wait printed %q", r.Stdout)
	}
	cl := showJSON(t, conf, nil, "cluster", "show", "demo") // the admin context, without Keystone
	if cl["project_id"] != "p-demo" || cl["user_id"] != "u-demo" {
		t.Fatalf("the cluster is project %v user %v, want the token's", cl["project_id"], cl["user_id"])
	}
	if out := ctl(t, conf, demo, 0, "cluster", "list").Stdout; !strings.Contains(out, "demo") {
		t.Fatalf("the user does not see its cluster:\n%s", out)
	}
	if out := ctl(t, conf, ks.env["other"], 0, "cluster", "list").Stdout; strings.Contains(out, "demo") {
		t.Fatalf("another project sees the cluster:\n%s", out)
	}
	r = ctl(t, conf, ks.env["other"], 1, "cluster", "show", "demo")
	oneLine(t, r, "ClusterNotFound")
	ctl(t, conf, demo, 0, "credential", "rotate", "demo")

	// The same user from clouds.yaml, the password from the environment.
	clouds := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(clouds, []byte("clouds:\n  test:\n    auth:\n      auth_url: "+ks.authURL+"\n      username: demo\n"+
		"      project_name: demo\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = ctl(t, conf, []string{"OS_CLIENT_CONFIG_FILE=" + clouds, "OS_PASSWORD=demo-Pa55"}, 0, "--os-cloud", "test", "cluster", "list")
	if !strings.Contains(r.Stdout, "demo") {
		t.Fatalf("clouds.yaml: the user does not see its cluster:\n%s", r.Stdout)
	}

	// A wrong password: one line, exit 1, no secret, nothing deleted.
	bad := append(append([]string(nil), demo...), "OS_PASSWORD=Wr0ng-pa55")
	r = ctl(t, conf, bad, 1, "cluster", "delete", "demo")
	oneLine(t, r, "Keystone refused the password of demo in project demo", "401")
	if strings.Contains(r.Stderr+r.Stdout, "Pa55") || strings.Contains(r.Stderr+r.Stdout, "pa55") {
		t.Fatalf("a password was printed: %q %q", r.Stdout, r.Stderr)
	}
	ctl(t, conf, demo, 0, "cluster", "delete", "demo", "--wait")
}
