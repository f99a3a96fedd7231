package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/test/testpki"
)

// envOf is an environment holding only m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// planOf parses args as magnumctl's auth flags over env and plans the
// authentication.
func planOf(t *testing.T, env map[string]string, args ...string) (*credentials, error) {
	t.Helper()
	var a authFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	a.resolve(fs, envOf(env))
	return a.plan(envOf(env))
}

var openrc = map[string]string{
	"OS_AUTH_URL": "https://keystone.example:5000/v3", "OS_USERNAME": "demo", "OS_PASSWORD": "pa55word",
	"OS_PROJECT_NAME": "demo", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_ID": "default",
	"OS_REGION_NAME": "RegionOne", "OS_INTERFACE": "public", "OS_IDENTITY_API_VERSION": "3",
}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
		} else {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}

// TestAuthPlanFromEnvironmentAndFlags: an openrc's variables make a
// password authentication scoped to the project; flags win over the
// environment; what is not configured at all means no Keystone; what is
// half configured is a usage error naming what is missing.
func TestAuthPlanFromEnvironmentAndFlags(t *testing.T) {
	c, err := planOf(t, openrc)
	if err != nil || c == nil {
		t.Fatalf("openrc: %v %v", c, err)
	}
	ao := c.authOptions()
	if c.method != methodPassword || ao.IdentityEndpoint != "https://keystone.example:5000/v3/" || ao.Username != "demo" ||
		ao.DomainName != "Default" || ao.Password != "pa55word" || ao.TokenID != "" || ao.Scope == nil ||
		ao.Scope.ProjectName != "demo" || ao.Scope.DomainID != "default" {
		t.Fatalf("openrc: method %s, options %+v scope %+v", c.method, ao, ao.Scope)
	}

	c, err = planOf(t, openrc, "--os-project-name", "other", "--os-username", "admin")
	if err != nil || c.projectName != "other" || c.username != "admin" {
		t.Fatalf("flags over the environment: %+v %v", c, err)
	}

	c, err = planOf(t, with(openrc, "OS_PROJECT_NAME", "", "OS_TENANT_NAME", "legacy", "OS_PROJECT_DOMAIN_ID", "",
		"OS_USER_DOMAIN_NAME", ""))
	if err != nil || c.projectName != "legacy" || c.projectDomainID != "default" || c.userDomainID != "default" {
		t.Fatalf("OS_TENANT_NAME and the default domain: %+v %v", c, err)
	}

	if c, err := planOf(t, nil); c != nil || err != nil {
		t.Fatalf("no settings: %+v %v, want no Keystone", c, err)
	}
	if c, err := planOf(t, with(openrc, "OS_AUTH_TYPE", "none")); c != nil || err != nil {
		t.Fatalf("OS_AUTH_TYPE=none: %+v %v, want no Keystone", c, err)
	}

	c, err = planOf(t, map[string]string{"OS_AUTH_URL": "http://ks:5000", "OS_TOKEN": "gAAAA-tok"})
	if err != nil || c.method != methodToken || c.authOptions().Scope != nil || c.authOptions().TokenID != "gAAAA-tok" ||
		c.authOptions().IdentityEndpoint != "http://ks:5000/v3/" {
		t.Fatalf("a token alone is used as it is: %+v %v", c, err)
	}
	c, err = planOf(t, map[string]string{"OS_AUTH_URL": "http://ks:5000/v2.0/", "OS_AUTH_TYPE": "v3token", "OS_TOKEN": "t",
		"OS_PROJECT_ID": "p1", "OS_PASSWORD": "ignored"})
	if ao := c.authOptions(); err != nil || ao.Scope == nil || ao.Scope.ProjectID != "p1" || ao.Password != "" ||
		ao.IdentityEndpoint != "http://ks:5000/v3/" {
		t.Fatalf("a token with a project is rescoped, and nothing else is sent: %+v %v", c, err)
	}
	c, err = planOf(t, map[string]string{"OS_AUTH_URL": "http://ks:5000", "OS_APPLICATION_CREDENTIAL_ID": "ac1",
		"OS_APPLICATION_CREDENTIAL_SECRET": "s3", "OS_PROJECT_NAME": "demo"})
	if ao := c.authOptions(); err != nil || c.method != methodAppCred || ao.Scope != nil || ao.ApplicationCredentialID != "ac1" ||
		ao.ApplicationCredentialSecret != "s3" || ao.Username != "" {
		t.Fatalf("an application credential takes no scope: %+v %v", c, err)
	}

	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"credentials without URL", with(openrc, "OS_AUTH_URL", ""), nil, "no auth URL"},
		{"URL without credentials", map[string]string{"OS_AUTH_URL": "http://ks"}, nil, "needs a user"},
		{"password without project", with(openrc, "OS_PROJECT_NAME", ""), nil, "made for a project"},
		{"unknown auth type", with(openrc, "OS_AUTH_TYPE", "kerberos"), nil, `"kerberos" is not supported`},
		{"token type without token", with(openrc, "OS_AUTH_TYPE", "token"), nil, "needs OS_TOKEN"},
		{"secret without credential", map[string]string{"OS_AUTH_URL": "http://ks", "OS_APPLICATION_CREDENTIAL_SECRET": "s"}, nil, "OS_APPLICATION_CREDENTIAL_ID"},
		{"bad interface", openrc, []string{"--os-interface", "private"}, `"private" is not public, internal or admin`},
		{"missing CA file", openrc, []string{"--os-cacert", "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := planOf(t, tt.env, tt.args...)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a usage error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "pa55word") {
				t.Fatalf("the password is in the error: %v", err)
			}
		})
	}
}

const cloudsYAML = `clouds:
  devstack:
    auth:
      auth_url: http://keystone.test/identity
      username: demo
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: public
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: http://keystone.test:5000/v3
      application_credential_id: ac-1
      application_credential_secret: ac-secret
`

const secureYAML = `clouds:
  devstack:
    auth:
      password: from-secure-yaml
`

// TestCloudsYAMLIsFoundAndReadAsTheOpenstackClientReadsIt: --os-cloud
// (or OS_CLOUD) reads clouds.yaml from OS_CLIENT_CONFIG_FILE, else the
// current directory, else ~/.config/openstack (XDG_CONFIG_HOME); the
// password may come from secure.yaml beside it; flags and OS_* variables
// override the cloud's entries.
func TestCloudsYAMLIsFoundAndReadAsTheOpenstackClientReadsIt(t *testing.T) {
	t.Setenv("OS_CACERT", "") // gophercloud's parser reads it from the process
	t.Setenv("OS_CLOUD", "")
	write := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"clouds.yaml": cloudsYAML, "secure.yaml": secureYAML} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(t *testing.T, c *credentials, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		ao := c.authOptions()
		if c.method != methodPassword || ao.IdentityEndpoint != "http://keystone.test/identity/v3/" || ao.Username != "demo" ||
			ao.DomainName != "Default" || ao.Password != "from-secure-yaml" || ao.Scope == nil || ao.Scope.ProjectName != "demo" ||
			ao.Scope.DomainName != "Default" {
			t.Fatalf("method %s options %+v scope %+v", c.method, ao, ao.Scope)
		}
	}

	t.Run("OS_CLIENT_CONFIG_FILE", func(t *testing.T) {
		dir := t.TempDir()
		write(dir)
		c, err := planOf(t, map[string]string{"OS_CLIENT_CONFIG_FILE": filepath.Join(dir, "clouds.yaml"), "OS_CLOUD": "devstack"})
		check(t, c, err)
	})
	t.Run("current directory", func(t *testing.T) {
		dir := t.TempDir()
		write(dir)
		t.Chdir(dir)
		c, err := planOf(t, map[string]string{"HOME": t.TempDir()}, "--os-cloud", "devstack")
		check(t, c, err)
	})
	t.Run("user configuration directory", func(t *testing.T) {
		home := t.TempDir()
		write(filepath.Join(home, ".config", "openstack"))
		t.Chdir(t.TempDir())
		c, err := planOf(t, map[string]string{"HOME": home}, "--os-cloud", "devstack")
		check(t, c, err)
		xdg := t.TempDir()
		write(filepath.Join(xdg, "openstack"))
		c, err = planOf(t, map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": xdg}, "--os-cloud", "devstack")
		check(t, c, err)
	})
	t.Run("overrides and the other cloud", func(t *testing.T) {
		dir := t.TempDir()
		write(dir)
		file := filepath.Join(dir, "clouds.yaml")
		c, err := planOf(t, map[string]string{"OS_CLIENT_CONFIG_FILE": file, "OS_PASSWORD": "from-env"},
			"--os-cloud", "devstack", "--os-project-name", "other", "--os-project-domain-id", "d2")
		if err != nil || c.password != "from-env" || c.projectName != "other" || c.projectDomainID != "d2" || c.projectDomainName != "" {
			t.Fatalf("overrides: %+v %v", c, err)
		}
		c, err = planOf(t, map[string]string{"OS_CLIENT_CONFIG_FILE": file}, "--os-cloud", "appcred")
		if ao := c.authOptions(); err != nil || c.method != methodAppCred || ao.ApplicationCredentialID != "ac-1" ||
			ao.ApplicationCredentialSecret != "ac-secret" || ao.Scope != nil {
			t.Fatalf("application credential cloud: %+v %v", c, err)
		}
		_, err = planOf(t, map[string]string{"OS_CLIENT_CONFIG_FILE": file}, "--os-cloud", "nosuch")
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), `cloud "nosuch" not found`) {
			t.Fatalf("unknown cloud: %v", err)
		}
	})
	t.Run("no clouds.yaml", func(t *testing.T) {
		home := t.TempDir()
		t.Chdir(t.TempDir())
		_, err := planOf(t, map[string]string{"HOME": home}, "--os-cloud", "devstack")
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), filepath.Join(home, ".config", "openstack", "clouds.yaml")) ||
			!strings.Contains(err.Error(), "/etc/openstack/clouds.yaml") {
			t.Fatalf("no file: %v", err)
		}
	})
}

func TestIdentityEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://ks:5000": "http://ks:5000/v3", "http://ks:5000/": "http://ks:5000/v3", "http://ks:5000/v3": "http://ks:5000/v3",
		"http://ks:5000/v3/": "http://ks:5000/v3", "http://ks:5000/v2.0": "http://ks:5000/v3", "https://h/identity": "https://h/identity/v3",
	} {
		if got := identityEndpoint(in); got != want {
			t.Errorf("identityEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// testKeystone is a Keystone with the user demo (member of project demo)
// and a catalogue.
func testKeystone(t *testing.T) *keystonetest.Server {
	t.Helper()
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.AddUser(keystonetest.User{ID: "u-demo", Name: "demo", DomainID: "default", DomainName: "Default", Password: "pa55word",
		ProjectID: "p-demo", ProjectName: "demo", ProjectDomainID: "default", ProjectDomainName: "Default",
		Roles: []string{"member", "reader"}})
	ks.SetCatalog([]any{map[string]any{"type": "container-infra", "name": "magnum", "id": "svc1",
		"endpoints": []any{map[string]any{"id": "e1", "interface": "public", "region": "RegionOne", "url": "http://magnum.test:9511/v1"}}}})
	return ks
}

func demoEnv(ks *keystonetest.Server) map[string]string {
	return map[string]string{"OS_AUTH_URL": ks.AuthURL() + "/v3", "OS_USERNAME": "demo", "OS_PASSWORD": "pa55word",
		"OS_PROJECT_NAME": "demo", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default"}
}

// TestAuthenticateEachWay: a password, a token (rescoped to a project,
// or used as it is), an application credential each give the identity of
// the demo user in its project with its roles and the catalogue; a wrong
// password and an unscoped token are one-line errors without secrets.
func TestAuthenticateEachWay(t *testing.T) {
	ks := testKeystone(t)
	login := func(env map[string]string) (*identity, error) {
		t.Helper()
		c, err := planOf(t, env)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return authenticate(ctx, c, 10*time.Second)
	}
	check := func(t *testing.T, id *identity, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if who, ok := ks.TokenUser(id.token); !ok || who != "u-demo" {
			t.Fatalf("token %q is not one Keystone issued to u-demo", id.token)
		}
		if id.userID != "u-demo" || id.userName != "demo" || id.userDomainID != "default" || id.userDomainName != "Default" ||
			id.projectID != "p-demo" || id.projectName != "demo" || strings.Join(id.roles, ",") != "member,reader" ||
			id.authURL != ks.AuthURL()+"/v3" {
			t.Fatalf("identity %+v", id)
		}
		var info struct {
			Token struct {
				Catalog []struct {
					Type string `json:"type"`
				} `json:"catalog"`
				Project struct {
					ID string `json:"id"`
				} `json:"project"`
			} `json:"token"`
		}
		if err := json.Unmarshal(id.tokenInfo, &info); err != nil || len(info.Token.Catalog) != 1 ||
			info.Token.Catalog[0].Type != "container-infra" || info.Token.Project.ID != "p-demo" {
			t.Fatalf("token info %s: %v", id.tokenInfo, err)
		}
	}

	pw, err := login(demoEnv(ks))
	check(t, pw, err)

	t.Run("token rescoped", func(t *testing.T) {
		id, err := login(map[string]string{"OS_AUTH_URL": ks.AuthURL(), "OS_AUTH_TYPE": "token", "OS_TOKEN": pw.token,
			"OS_PROJECT_ID": "p-demo"})
		check(t, id, err)
		if id.token == pw.token {
			t.Fatal("the token was not exchanged for one of the project")
		}
	})
	t.Run("token as it is", func(t *testing.T) {
		id, err := login(map[string]string{"OS_AUTH_URL": ks.AuthURL(), "OS_TOKEN": pw.token})
		check(t, id, err)
		if id.token != pw.token {
			t.Fatal("the token given was not the one used")
		}
	})
	t.Run("application credential", func(t *testing.T) {
		body := `{"application_credential": {"name": "magnumctl-test"}}`
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost,
			ks.AuthURL()+"/v3/users/u-demo/application_credentials", strings.NewReader(body))
		req.Header.Set("X-Auth-Token", pw.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ac struct {
			AC struct{ ID, Secret string } `json:"application_credential"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ac)
		_ = resp.Body.Close()
		if err != nil || ac.AC.ID == "" {
			t.Fatalf("creating the application credential: %v %+v", err, ac)
		}
		id, err := login(map[string]string{"OS_AUTH_URL": ks.AuthURL(), "OS_APPLICATION_CREDENTIAL_ID": ac.AC.ID,
			"OS_APPLICATION_CREDENTIAL_SECRET": ac.AC.Secret})
		check(t, id, err)
	})
	t.Run("wrong password", func(t *testing.T) {
		_, err := login(with(demoEnv(ks), "OS_PASSWORD", "wrong-pa55"))
		if err == nil || !strings.Contains(err.Error(), "Keystone refused the password of demo in project demo") ||
			!strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-pa55") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unscoped token", func(t *testing.T) {
		c := &credentials{authURL: ks.AuthURL(), method: methodPassword, username: "demo", userDomainName: "Default", password: "pa55word"}
		unscoped := c.authOptions()
		pc, err := unscopedToken(unscoped)
		if err != nil {
			t.Fatal(err)
		}
		_, err = login(map[string]string{"OS_AUTH_URL": ks.AuthURL(), "OS_TOKEN": pc})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not scoped to a project") {
			t.Fatalf("got %v", err)
		}
	})
}

// unscopedToken returns an unscoped token of ao's user (a password
// authentication without scope).
func unscopedToken(ao gophercloud.AuthOptions) (string, error) {
	body, _ := json.Marshal(map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"password"},
		"password": map[string]any{"user": map[string]any{"name": ao.Username, "password": ao.Password,
			"domain": map[string]any{"name": ao.DomainName}}}}}})
	resp, err := http.Post(strings.TrimSuffix(ao.IdentityEndpoint, "/")+"/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", errors.New(resp.Status)
	}
	return resp.Header.Get("X-Subject-Token"), nil
}

// TestKeystoneOverTLSTrustsOSCACERT: OS_CACERT is the roots Keystone's
// certificate is checked against; another CA fails the handshake, with an
// error naming no secret; --insecure skips the check.
func TestKeystoneOverTLSTrustsOSCACERT(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	ks := keystonetest.NewTLS(ca.Server(t, "127.0.0.1").TLS(t))
	t.Cleanup(ks.Close)
	ks.AddUser(keystonetest.User{ID: "u-demo", Name: "demo", DomainID: "default", DomainName: "Default", Password: "pa55word",
		ProjectID: "p-demo", ProjectName: "demo", ProjectDomainID: "default", ProjectDomainName: "Default", Roles: []string{"member"}})
	login := func(env map[string]string, args ...string) (*identity, error) {
		t.Helper()
		c, err := planOf(t, env, args...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return authenticate(ctx, c, 10*time.Second)
	}
	env := with(demoEnv(ks), "OS_CACERT", ca.File)
	if id, err := login(env); err != nil || id.projectID != "p-demo" {
		t.Fatalf("with the server's CA: %+v %v", id, err)
	}
	_, err := login(with(env, "OS_CACERT", other.File))
	if err == nil || !strings.Contains(err.Error(), "cannot authenticate at "+ks.AuthURL()+"/v3: Keystone's certificate is not trusted") ||
		!strings.Contains(err.Error(), "unknown authority") || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("with another CA: %v", err)
	}
	if _, err := login(with(env, "OS_CACERT", other.File), "--insecure"); err != nil {
		t.Fatalf("--insecure: %v", err)
	}
}
