package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/harness"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

// cliIdentity is who the CLI's requests are from (run_api.py sets these
// identity headers, as keystonemiddleware would for the CLI's token).
const cliIdentity = "u-cli:p-cli:admin"

// cli runs `openstack coe ...` of one release against one magnum-api.
type cli struct {
	t     *testing.T
	r     pyrelease.Release
	api   *api // for polling
	steps []step
}

// run runs the command and keeps its exit code and its normalized output
// (stdout as JSON when it is JSON, else its text; stderr's last line on
// failure) as step name.
func (c *cli) run(name string, args ...string) (int, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// magnumclient sends "OpenStack-API-Version: container-infra latest"
	// by itself.
	argv := append([]string{"--os-auth-type", "none", "--os-endpoint", c.api.base + "/v1", "coe"}, args...)
	cmd := c.r.Command(ctx, "/usr/bin/openstack", argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("%s: openstack coe %s: %v", name, strings.Join(args, " "), err)
	}
	out := normalizeCLI(stdout.String())
	if code != 0 {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		out += " | " + uuidRE.ReplaceAllString(lines[len(lines)-1], "<uuid>")
	}
	c.steps = append(c.steps, step{Name: name, Code: code, Body: out})
	c.t.Logf("%s: openstack coe %s → %d %s", name, strings.Join(args, " "), code, out)
	return code, out
}

// pemRE matches a PEM block.
var pemRE = regexp.MustCompile(`(?s)-----BEGIN ([A-Z ]+)-----.*?-----END [A-Z ]+-----`)

// normalizeCLI is the CLI's output without what differs between any two
// runs: JSON (also after a first line of text, as `cluster template create
// -f json` prints it) normalized as the HTTP answers are, ids in text
// replaced, PEM blocks reduced to their type.
func normalizeCLI(stdout string) string {
	out := strings.TrimSpace(stdout)
	head, rest := "", out
	if !strings.HasPrefix(out, "{") && !strings.HasPrefix(out, "[") {
		if i := strings.IndexAny(out, "{["); i > 0 && out[i-1] == '\n' {
			head, rest = strings.TrimSpace(out[:i]), out[i:]
		}
	}
	var v any
	if json.Unmarshal([]byte(rest), &v) == nil {
		b, _ := json.Marshal(normalize(v))
		out = strings.TrimSpace(head + "\n" + string(b))
	}
	out = pemRE.ReplaceAllString(out, "<PEM $1>")
	return uuidRE.ReplaceAllString(out, "<uuid>")
}

// cliScenario is what a user types: templates, a cluster's life, resize,
// nodegroups, upgrade, CA, services and the errors. The waits poll over
// HTTP as the user would poll `cluster show`.
func cliScenario(c *cli) {
	tmpl := func(name, tag string) []string {
		return []string{"cluster", "template", "create", name, "--coe", "kubernetes", "--image", "simulated",
			"--external-network", "public", "--keypair", "kp", "--flavor", "m1.small", "--master-flavor", "m1.medium",
			"--driver", "simulated", "--labels", "kube_tag=" + tag, "-f", "json"}
	}
	a := c.api
	c.run("template_create", tmpl("t1", "v1.33.1")...)
	c.run("template_create_second", tmpl("t2", "v1.34.0")...)
	c.run("template_show", "cluster", "template", "show", "t1", "-f", "json")
	c.run("template_list", "cluster", "template", "list", "-f", "json")
	c.run("template_show_missing", "cluster", "template", "show", "nope")
	c.run("cluster_create", "cluster", "create", "c1", "--cluster-template", "t1", "--master-count", "1", "--node-count", "2")
	c.run("cluster_create_missing_template", "cluster", "create", "c2", "--cluster-template", "nope")
	a.wait("wait_create_complete", "/v1/clusters/c1", status, "CREATE_COMPLETE")
	c.run("cluster_show", "cluster", "show", "c1", "-f", "json")
	c.run("cluster_list", "cluster", "list", "-f", "json")
	c.run("cluster_show_missing", "cluster", "show", "nope")
	c.run("ca_show", "ca", "show", "c1")
	c.run("service_list", "service", "list", "-f", "json", "-c", "binary", "-c", "state")
	c.run("template_delete_referenced", "cluster", "template", "delete", "t1")

	c.run("cluster_resize", "cluster", "resize", "c1", "3")
	a.wait("wait_resize_complete", "/v1/clusters/c1/nodegroups/default-worker", nodeCount, "UPDATE_COMPLETE/3")
	a.wait("wait_cluster_after_resize", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	c.run("nodegroup_list", "nodegroup", "list", "c1", "-f", "json")
	c.run("nodegroup_create", "nodegroup", "create", "c1", "np1", "--node-count", "1", "--flavor", "m1.large")
	a.wait("wait_nodegroup_created", "/v1/clusters/c1/nodegroups/np1", status, "CREATE_COMPLETE")
	a.wait("wait_cluster_after_nodegroup", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	c.run("nodegroup_show", "nodegroup", "show", "c1", "np1", "-f", "json")
	c.run("nodegroup_create_duplicate", "nodegroup", "create", "c1", "np1", "--node-count", "1")
	c.run("nodegroup_delete", "nodegroup", "delete", "c1", "np1")
	a.wait("wait_nodegroup_deleted", "/v1/clusters/c1/nodegroups/np1", status, "GONE")
	a.wait("wait_cluster_after_nodegroup_delete", "/v1/clusters/c1", status, "UPDATE_COMPLETE")

	c.run("cluster_upgrade", "cluster", "upgrade", "c1", "t2", "--nodegroup", "default-worker")
	// What the cluster shows after an upgrade is the driver's to say (the
	// simulated driver records the new template, the zero-delay one does
	// not): only the status is compared.
	a.wait("wait_upgrade_complete", "/v1/clusters/c1", status, "UPDATE_COMPLETE")
	c.run("cluster_delete", "cluster", "delete", "c1")
	a.wait("wait_deleted", "/v1/clusters/c1", status, "GONE")
	c.run("cluster_list_empty", "cluster", "list", "-f", "json")
	c.run("template_delete", "cluster", "template", "delete", "t1", "t2")
}

// TestOpenStackCLIMatchesPythonConductor runs what users type,
// `openstack coe ...` (python3-openstackclient with python3-magnumclient
// 5.0.0), against magnum-api 23.0.0 in front of our conductor and in front
// of Magnum 23.0.0's own, and requires the same exit code and output at
// every step, apart from ids, times and what the drivers report
// differently; the outcomes are also checked one by one.
func TestOpenStackCLIMatchesPythonConductor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts magnum-api, the Python conductor and the CLI")
	}
	r := pyrelease.Magnum23
	p := startPair(t, r, harness.APIOptions{Identity: cliIdentity})
	ours := &cli{r: r, api: &api{base: p.oursURL}}
	py := &cli{r: r, api: &api{base: p.pyURL}}
	t.Run("scenario", func(t *testing.T) {
		for _, side := range []struct {
			name string
			c    *cli
		}{{"ours", ours}, {"python", py}} {
			t.Run(side.name, func(t *testing.T) {
				t.Parallel()
				side.c.t, side.c.api.t = t, t
				cliScenario(side.c)
			})
		}
	})
	if t.Failed() {
		return
	}
	oursSteps, pySteps := append(ours.steps, ours.api.steps...), append(py.steps, py.api.steps...)
	if len(oursSteps) != len(pySteps) {
		t.Fatalf("ours ran %d steps, python %d", len(oursSteps), len(pySteps))
	}
	for i, o := range oursSteps {
		if p := pySteps[i]; o != p {
			t.Errorf("%s:\n  ours   %d %s\n  python %d %s", o.Name, o.Code, o.Body, p.Code, p.Body)
		}
	}
	by := map[string]step{}
	for _, s := range oursSteps {
		by[s.Name] = s
	}
	for name, want := range map[string]string{
		"template_show_missing":           "ClusterTemplate nope could not be found",
		"cluster_create_missing_template": "ClusterTemplate nope could not be found",
		"cluster_show_missing":            "Cluster nope could not be found",
		"nodegroup_create_duplicate":      "A node group with name np1 already exists",
	} {
		if s := by[name]; s.Code == 0 || !strings.Contains(s.Body, want) {
			t.Errorf("%s: exit %d %s, want a failure saying %q", name, s.Code, s.Body, want)
		}
	}
	// magnumclient reports a failed delete on stdout and exits 0.
	if s, want := by["template_delete_referenced"], "Delete for cluster template t1 failed: ClusterTemplate <uuid> is referenced by one or multiple clusters (HTTP 400)"; !strings.Contains(s.Body, want) {
		t.Errorf("template_delete_referenced: exit %d %s, want %q", s.Code, s.Body, want)
	}
	for name, want := range map[string]string{
		"cluster_create":     "Request to create cluster <uuid> accepted",
		"ca_show":            "<PEM CERTIFICATE>",
		"service_list":       `[{"binary":"magnum-conductor","state":"up"}]`,
		"cluster_list_empty": "[]",
	} {
		if s := by[name]; s.Code != 0 || !strings.Contains(s.Body, want) {
			t.Errorf("%s: exit %d %s, want %q", name, s.Code, s.Body, want)
		}
	}
	for _, name := range []string{"template_create", "template_show", "cluster_show", "nodegroup_list", "nodegroup_show",
		"cluster_resize", "nodegroup_create", "nodegroup_delete", "cluster_upgrade", "cluster_delete", "template_delete"} {
		if s := by[name]; s.Code != 0 {
			t.Errorf("%s: exit %d %s", name, s.Code, s.Body)
		}
	}
	if s := by["template_show"]; !strings.Contains(s.Body, `"driver":"simulated"`) {
		t.Errorf("template_show should show driver simulated: %s", s.Body)
	}
}

func TestNormalizeCLI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Request to create cluster 5f0c1e2a-9b7d-4c3e-8a1f-2b3c4d5e6f70 accepted",
			"Request to create cluster <uuid> accepted"},
		{"Request to create cluster template t2 accepted\n{\"uuid\": \"x\", \"name\": \"t2\", \"created_at\": \"now\"}",
			"Request to create cluster template t2 accepted\n{\"name\":\"t2\"}"},
		{"[{\"name\": \"c1\", \"uuid\": \"u\"}]", "[{\"name\":\"c1\"}]"},
		{"-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n", "<PEM CERTIFICATE>"},
	} {
		if got := normalizeCLI(tc.in); got != tc.want {
			t.Errorf("normalizeCLI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
