package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/internal/osredact"
	"github.com/openstack/magnum-conductor/internal/tlschain"
)

// authFlags are the Keystone settings, named as the openstack client
// names them: each --os-* flag, else its OS_* environment variable; with
// --os-cloud (OS_CLOUD) they override that cloud's entry in clouds.yaml.
type authFlags struct {
	cloud, authType, authURL                        string
	username, userID, password                      string
	projectName, projectID                          string
	userDomainName, userDomainID, projectDomainName string
	projectDomainID, defaultDomain                  string
	regionName, iface, cacert, token                string
	appCredID, appCredName, appCredSecret           string
	insecure                                        bool
}

// authSetting is one string setting: its flag, its environment variables
// (the first set one counts) and its help.
type authSetting struct {
	value *string
	flag  string
	envs  []string
	help  string
}

func (a *authFlags) settings() []authSetting {
	return []authSetting{
		{&a.cloud, "os-cloud", []string{"OS_CLOUD"}, "cloud of clouds.yaml to authenticate with (./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml, or OS_CLIENT_CONFIG_FILE)"},
		{&a.authType, "os-auth-type", []string{"OS_AUTH_TYPE"}, "password (v3password), token (v3token), v3applicationcredential, or none (no Keystone: the admin context); default: what the credentials given are"},
		{&a.authURL, "os-auth-url", []string{"OS_AUTH_URL"}, "Keystone URL (with or without /v3)"},
		{&a.username, "os-username", []string{"OS_USERNAME"}, "user name"},
		{&a.userID, "os-user-id", []string{"OS_USER_ID"}, "user ID"},
		{&a.password, "os-password", []string{"OS_PASSWORD"}, "password (prefer OS_PASSWORD or clouds.yaml: a flag shows in the process list)"},
		{&a.projectName, "os-project-name", []string{"OS_PROJECT_NAME", "OS_TENANT_NAME"}, "project name"},
		{&a.projectID, "os-project-id", []string{"OS_PROJECT_ID", "OS_TENANT_ID"}, "project ID"},
		{&a.userDomainName, "os-user-domain-name", []string{"OS_USER_DOMAIN_NAME"}, "domain name of the user"},
		{&a.userDomainID, "os-user-domain-id", []string{"OS_USER_DOMAIN_ID"}, "domain ID of the user"},
		{&a.projectDomainName, "os-project-domain-name", []string{"OS_PROJECT_DOMAIN_NAME"}, "domain name of the project"},
		{&a.projectDomainID, "os-project-domain-id", []string{"OS_PROJECT_DOMAIN_ID"}, "domain ID of the project"},
		{&a.defaultDomain, "os-default-domain", []string{"OS_DEFAULT_DOMAIN"}, "domain ID of the user and the project when neither names one (default: default)"},
		{&a.regionName, "os-region-name", []string{"OS_REGION_NAME"}, "region (accepted as openrc files set it; magnumctl reaches the conductor over RabbitMQ and selects no endpoint)"},
		{&a.iface, "os-interface", []string{"OS_INTERFACE", "OS_ENDPOINT_TYPE"}, "endpoint interface: public, internal or admin (accepted as openrc files set it; selects no endpoint)"},
		{&a.cacert, "os-cacert", []string{"OS_CACERT"}, "PEM file of the CAs Keystone's certificate is checked against"},
		{&a.token, "os-token", []string{"OS_TOKEN"}, "a Keystone token to authenticate with (OS_AUTH_TYPE=token)"},
		{&a.appCredID, "os-application-credential-id", []string{"OS_APPLICATION_CREDENTIAL_ID"}, "application credential ID"},
		{&a.appCredName, "os-application-credential-name", []string{"OS_APPLICATION_CREDENTIAL_NAME"}, "application credential name (with the user)"},
		{&a.appCredSecret, "os-application-credential-secret", []string{"OS_APPLICATION_CREDENTIAL_SECRET"}, "application credential secret"},
	}
}

func (a *authFlags) register(fs *pflag.FlagSet) {
	for _, s := range a.settings() {
		env := strings.Join(s.envs, ", ")
		fs.StringVar(s.value, s.flag, "", s.help+" [env "+env+"]")
	}
	fs.BoolVar(&a.insecure, "insecure", false, "do not check Keystone's certificate (as the openstack client's --insecure)")
}

// resolve fills each setting the command line left unset from its
// environment variable.
func (a *authFlags) resolve(fs *pflag.FlagSet, getenv func(string) string) {
	for _, s := range a.settings() {
		if fs.Changed(s.flag) {
			continue
		}
		for _, e := range s.envs {
			if v := getenv(e); v != "" {
				*s.value = v
				break
			}
		}
	}
	if !fs.Changed("insecure") {
		if v := strings.ToLower(getenv("OS_INSECURE")); v == "true" || v == "1" || v == "yes" {
			a.insecure = true
		}
	}
}

// Authentication methods.
const (
	methodPassword = "password"
	methodToken    = "token"
	methodAppCred  = "v3applicationcredential"
)

// credentials are the settings of one Keystone authentication, from the
// flags and the environment, or from clouds.yaml under them.
type credentials struct {
	authURL, method                                            string
	userID, username, userDomainID, userDomainName, password   string
	token                                                      string
	appCredID, appCredName, appCredSecret                      string
	projectID, projectName, projectDomainID, projectDomainName string
	tls                                                        *tls.Config
}

// plan returns the credentials to authenticate with, or nil when no
// Keystone authentication is configured (no cloud, no auth URL, no
// credentials): magnumctl then sends the admin context without a token.
func (a *authFlags) plan(getenv func(string) string) (*credentials, error) {
	authType := strings.ToLower(a.authType)
	switch authType {
	case "none", "noauth":
		return nil, nil
	case "", "password", "v3password":
		if authType != "" {
			authType = methodPassword
		}
	case "token", "v3token":
		authType = methodToken
	case "v3applicationcredential", "applicationcredential", "application_credential":
		authType = methodAppCred
	default:
		return nil, &usageError{fmt.Sprintf("--os-auth-type %q is not supported (password, token, v3applicationcredential or none)", a.authType)}
	}
	if a.iface != "" && !slices.Contains([]string{"public", "internal", "admin", "publicURL", "internalURL", "adminURL"}, a.iface) {
		return nil, &usageError{fmt.Sprintf("--os-interface %q is not public, internal or admin", a.iface)}
	}
	var c *credentials
	if a.cloud != "" {
		var err error
		if c, err = a.fromClouds(getenv); err != nil {
			return nil, err
		}
	} else {
		c = &credentials{
			authURL: a.authURL, userID: a.userID, username: a.username, userDomainID: a.userDomainID,
			userDomainName: a.userDomainName, password: a.password, token: a.token,
			appCredID: a.appCredID, appCredName: a.appCredName, appCredSecret: a.appCredSecret,
			projectID: a.projectID, projectName: a.projectName, projectDomainID: a.projectDomainID,
			projectDomainName: a.projectDomainName,
		}
		if c.authURL == "" && !c.anyCredential() {
			return nil, nil
		}
		tlsCfg, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		c.tls = tlsCfg
	}
	c.method = authType
	if err := c.complete(a.defaultDomain); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *credentials) anyCredential() bool {
	return c.username != "" || c.userID != "" || c.password != "" || c.token != "" || c.appCredID != "" ||
		c.appCredName != "" || c.appCredSecret != ""
}

func (a *authFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: a.insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // --insecure, as the openstack client honours it
	if a.cacert != "" {
		pool, err := tlschain.LoadCAFile(a.cacert)
		if err != nil {
			return nil, &usageError{"--os-cacert: " + err.Error()}
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// cloudsLocations is where clouds.yaml is looked for, as the openstack
// client looks: OS_CLIENT_CONFIG_FILE alone when set, else the current
// directory, the user's configuration directory and /etc/openstack.
func cloudsLocations(getenv func(string) string) []string {
	if p := getenv("OS_CLIENT_CONFIG_FILE"); p != "" {
		return []string{p}
	}
	var locs []string
	if cwd, err := os.Getwd(); err == nil {
		locs = append(locs, filepath.Join(cwd, "clouds.yaml"))
	}
	cfgHome := getenv("XDG_CONFIG_HOME")
	if cfgHome == "" {
		if home := getenv("HOME"); home != "" {
			cfgHome = filepath.Join(home, ".config")
		}
	}
	if cfgHome != "" {
		locs = append(locs, filepath.Join(cfgHome, "openstack", "clouds.yaml"))
	}
	return append(locs, "/etc/openstack/clouds.yaml")
}

// fromClouds reads the cloud of clouds.yaml (and secure.yaml beside it)
// with gophercloud's parser; the flags and environment variables set
// override its entries, as in the openstack client.
func (a *authFlags) fromClouds(getenv func(string) string) (*credentials, error) {
	opts := []clouds.ParseOption{
		clouds.WithCloudName(a.cloud), clouds.WithLocations(cloudsLocations(getenv)...),
		clouds.WithRegion(a.regionName), clouds.WithEndpointType(a.iface),
		clouds.WithIdentityEndpoint(a.authURL), clouds.WithUsername(a.username), clouds.WithUserID(a.userID),
		clouds.WithPassword(a.password), clouds.WithProjectName(a.projectName), clouds.WithProjectID(a.projectID),
		clouds.WithDomainID(a.userDomainID), clouds.WithDomainName(a.userDomainName), clouds.WithToken(a.token),
		clouds.WithApplicationCredentialID(a.appCredID), clouds.WithApplicationCredentialName(a.appCredName),
		clouds.WithApplicationCredentialSecret(a.appCredSecret),
	}
	if a.cacert != "" {
		opts = append(opts, clouds.WithCACertPath(a.cacert))
	}
	if a.insecure {
		opts = append(opts, clouds.WithInsecure(true))
	}
	ao, _, tlsCfg, err := clouds.Parse(opts...)
	if err != nil {
		var nf clouds.ErrFileNotFound
		if errors.As(err, &nf) {
			return nil, &usageError{fmt.Sprintf("--os-cloud %s: no clouds.yaml in %s", a.cloud, strings.Join(cloudsLocations(getenv), ", "))}
		}
		return nil, &usageError{fmt.Sprintf("--os-cloud %s: %v", a.cloud, err)}
	}
	if ao.Scope != nil && (ao.Scope.System || ao.Scope.TrustID != "") {
		return nil, &usageError{fmt.Sprintf("--os-cloud %s: a system or trust scope cannot make Magnum requests; name a project", a.cloud)}
	}
	c := &credentials{
		authURL: ao.IdentityEndpoint, userID: ao.UserID, username: ao.Username, userDomainID: ao.DomainID,
		userDomainName: ao.DomainName, password: ao.Password, token: ao.TokenID,
		appCredID: ao.ApplicationCredentialID, appCredName: ao.ApplicationCredentialName,
		appCredSecret: ao.ApplicationCredentialSecret, tls: tlsCfg,
	}
	if s := ao.Scope; s != nil {
		c.projectID, c.projectName, c.projectDomainID, c.projectDomainName = s.ProjectID, s.ProjectName, s.DomainID, s.DomainName
	}
	if c.projectID == "" && c.projectName == "" {
		c.projectID, c.projectName = ao.TenantID, ao.TenantName
	}
	// gophercloud's parser takes no project domain: the flags' and
	// environment's win here.
	if a.projectDomainID != "" || a.projectDomainName != "" {
		c.projectDomainID, c.projectDomainName = a.projectDomainID, a.projectDomainName
	}
	if c.tls != nil && c.tls.MinVersion == 0 {
		c.tls.MinVersion = tls.VersionTLS12
	}
	return c, nil
}

// complete checks that the credentials make one authentication, picks the
// method when none was named (application credential, else token, else
// password) and fills the default domain.
func (c *credentials) complete(defaultDomain string) error {
	if c.authURL == "" {
		return &usageError{"Keystone credentials are set but no auth URL: set OS_AUTH_URL or --os-auth-url"}
	}
	if c.method == "" {
		switch {
		case c.appCredSecret != "" || c.appCredID != "":
			c.method = methodAppCred
		case c.token != "" && c.password == "":
			c.method = methodToken
		default:
			c.method = methodPassword
		}
	}
	if defaultDomain == "" {
		defaultDomain = "default"
	}
	user := c.userID != "" || c.username != ""
	switch c.method {
	case methodPassword:
		if !user || c.password == "" {
			return &usageError{"password authentication needs a user (OS_USERNAME or OS_USER_ID) and OS_PASSWORD"}
		}
		if c.projectID == "" && c.projectName == "" {
			return &usageError{"Magnum requests are made for a project: set OS_PROJECT_NAME or OS_PROJECT_ID"}
		}
	case methodToken:
		if c.token == "" {
			return &usageError{"token authentication needs OS_TOKEN (--os-token)"}
		}
	case methodAppCred:
		if c.appCredSecret == "" || (c.appCredID == "" && (c.appCredName == "" || !user)) {
			return &usageError{"application credential authentication needs OS_APPLICATION_CREDENTIAL_SECRET and " +
				"OS_APPLICATION_CREDENTIAL_ID (or its name and the user)"}
		}
	}
	if c.username != "" && c.userID == "" && c.userDomainID == "" && c.userDomainName == "" {
		c.userDomainID = defaultDomain
	}
	if c.projectName != "" && c.projectID == "" && c.projectDomainID == "" && c.projectDomainName == "" {
		c.projectDomainID = defaultDomain
	}
	return nil
}

// identityEndpoint is the Identity v3 endpoint of authURL: as given when
// it names /v3, else with /v3 (keystoneauth's discovery, for the usual
// forms); a /v2.0 URL is read as its /v3, as magnum-api reads it.
func identityEndpoint(authURL string) string {
	u := strings.TrimSuffix(authURL, "/")
	u = strings.TrimSuffix(u, "/v2.0")
	if !strings.HasSuffix(u, "/v3") {
		u += "/v3"
	}
	return u
}

// authOptions is the gophercloud request for the credentials' method
// alone: nothing of another method is sent.
func (c *credentials) authOptions() gophercloud.AuthOptions {
	ao := gophercloud.AuthOptions{IdentityEndpoint: identityEndpoint(c.authURL) + "/"}
	var scope *gophercloud.AuthScope
	switch {
	case c.projectID != "":
		scope = &gophercloud.AuthScope{ProjectID: c.projectID}
	case c.projectName != "":
		scope = &gophercloud.AuthScope{ProjectName: c.projectName, DomainID: c.projectDomainID, DomainName: c.projectDomainName}
	}
	user := func() {
		ao.UserID = c.userID
		if c.userID == "" {
			ao.Username, ao.DomainID, ao.DomainName = c.username, c.userDomainID, c.userDomainName
		}
	}
	switch c.method {
	case methodPassword:
		user()
		ao.Password, ao.Scope = c.password, scope
	case methodToken:
		// Without a project the token is used as it is (validated for
		// its body); with one, it is exchanged for a token of that
		// project.
		ao.TokenID, ao.Scope = c.token, scope
	case methodAppCred:
		ao.ApplicationCredentialID, ao.ApplicationCredentialSecret = c.appCredID, c.appCredSecret
		if c.appCredID == "" {
			user()
			ao.ApplicationCredentialName = c.appCredName
		}
	}
	return ao
}

// describe names the credentials for an error message, without secrets.
func (c *credentials) describe() string {
	who := c.username
	if c.userID != "" {
		who = c.userID
	}
	project := c.projectName
	if c.projectID != "" {
		project = c.projectID
	}
	switch c.method {
	case methodToken:
		return "the token given"
	case methodAppCred:
		if c.appCredID != "" {
			return "application credential " + c.appCredID
		}
		return "application credential " + c.appCredName + " of " + who
	}
	return fmt.Sprintf("the password of %s in project %s", who, project)
}

// identity is what Keystone said about the token magnumctl obtained: what
// magnum-api's ContextHook takes from keystonemiddleware's headers and
// token info.
type identity struct {
	token, authURL                                 string
	tokenInfo                                      json.RawMessage
	userID, userName, userDomainID, userDomainName string
	projectID, projectName                         string
	roles                                          []string
}

// authenticate obtains a token with c from Keystone.
func authenticate(ctx context.Context, c *credentials, timeout time.Duration) (*identity, error) {
	ao := c.authOptions()
	endpoint := ao.IdentityEndpoint
	pc, err := openstack.NewClient(endpoint)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("--os-auth-url %s: %v", osredact.URL(c.authURL), err)}
	}
	pc.HTTPClient = http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: c.tls, Proxy: http.ProxyFromEnvironment}}
	if err := openstack.Authenticate(ctx, pc, ao); err != nil {
		what := "cannot authenticate"
		var verr *tls.CertificateVerificationError
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusUnauthorized):
			what = "Keystone refused " + c.describe()
		case errors.As(err, &verr):
			return nil, fmt.Errorf("cannot authenticate at %s: Keystone's certificate is not trusted: %w (OS_CACERT, --os-cacert)",
				osredact.URL(strings.TrimSuffix(endpoint, "/")), verr.Err)
		}
		return nil, fmt.Errorf("%s at %s: %s", what, osredact.URL(strings.TrimSuffix(endpoint, "/")), osredact.Describe(err))
	}
	var res gophercloud.Result
	var info struct {
		Token struct {
			User    tokens.User     `json:"user"`
			Project *tokens.Project `json:"project"`
			Roles   []tokens.Role   `json:"roles"`
		} `json:"token"`
	}
	switch r := pc.GetAuthResult().(type) {
	case tokens.CreateResult:
		res = r.Result
	case tokens.GetResult:
		res = r.Result
	default:
		return nil, fmt.Errorf("Keystone at %s gave no Identity v3 token", osredact.URL(endpoint)) //nolint:staticcheck // Keystone is a name
	}
	if err := res.ExtractInto(&info); err != nil {
		return nil, fmt.Errorf("Keystone's token: %w", err) //nolint:staticcheck // Keystone is a name
	}
	body, err := json.Marshal(res.Body)
	if err != nil {
		return nil, fmt.Errorf("Keystone's token: %w", err) //nolint:staticcheck // Keystone is a name
	}
	t := info.Token
	if t.Project == nil || t.Project.ID == "" {
		return nil, &usageError{"the Keystone token is not scoped to a project: Magnum requests are made for a project " +
			"(set OS_PROJECT_NAME or OS_PROJECT_ID)"}
	}
	id := &identity{
		token: pc.Token(), authURL: identityEndpoint(c.authURL), tokenInfo: body,
		userID: t.User.ID, userName: t.User.Name, userDomainID: t.User.Domain.ID, userDomainName: t.User.Domain.Name,
		projectID: t.Project.ID, projectName: t.Project.Name,
	}
	for _, r := range t.Roles {
		id.roles = append(id.roles, r.Name)
	}
	return id, nil
}

// context is the request context magnum-api's ContextHook builds for this
// identity: the token, magnum-api's auth_url, keystonemiddleware's token
// info (with the service catalogue), the user and project ids and names,
// the user's domain as domain_id/domain_name, and the roles; is_admin by
// Magnum's default policy (the admin role), and all_tenants with it, as
// magnum-api sets it for an admin's requests. allTenants false keeps an
// admin's request to its project.
func (id *identity) context(allTenants bool) *request.Context {
	admin := slices.Contains(id.roles, "admin")
	return &request.Context{
		AuthToken: id.token, AuthURL: id.authURL, AuthTokenInfo: id.tokenInfo,
		UserID: id.userID, UserName: id.userName, ProjectID: id.projectID, ProjectName: id.projectName,
		DomainID: id.userDomainID, DomainName: id.userDomainName, Roles: append([]string{}, id.roles...),
		IsAdmin: admin, AllTenants: admin && allTenants, RequestID: request.NewRequestID(),
	}
}
