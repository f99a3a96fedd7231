package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// keystoneauthLoad is keystoneauth's load_auth_from_conf_options on
// [keystone_auth] of the file given, with the options registered as
// Magnum's conductor has them (keystonemiddleware registers the auth
// options of [keystone_authtoken] too); it prints the password plugin's
// values and the session's cafile.
const keystoneauthLoad = `
import json, sys
from oslo_config import cfg
from keystoneauth1 import loading
conf = cfg.ConfigOpts()
loading.register_auth_conf_options(conf, 'keystone_auth')
loading.register_session_conf_options(conf, 'keystone_auth')
loading.register_auth_conf_options(conf, 'keystone_authtoken')
conf(['--config-file', sys.argv[1]], project='magnum', default_config_files=[])
auth = loading.load_auth_from_conf_options(conf, 'keystone_auth')
v = vars(auth)
print(json.dumps({'auth_url': v.get('auth_url') or '', 'username': v.get('_username') or '',
    'password': v.get('_password') or '', 'project_name': v.get('_project_name') or '',
    'user_domain_name': v.get('_user_domain_name') or '', 'project_domain_id': v.get('_project_domain_id') or '',
    'cafile': conf.keystone_auth.cafile or ''}))
`

// TestAuthSectionMatchesKeystoneauth: [keystone_auth] auth_section takes the
// auth plugin's options from the section it names, and keeps the session
// options of [keystone_auth], as keystoneauth reads them.
func TestAuthSectionMatchesKeystoneauth(t *testing.T) {
	requirePython(t)
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, []byte(`[keystone_auth]
auth_section = keystone_authtoken
cafile = /etc/ssl/ks.pem
username = not-this-one
project_name = nor-this-one

[keystone_authtoken]
auth_type = password
auth_url = http://ks:5000/v3
username = magnum
password = s3cret
project_name = service
user_domain_name = Default
project_domain_id = default
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := testkit.Output(testkit.ToolTimeout, python, "-c", keystoneauthLoad, conf)
	if err != nil {
		t.Fatalf("keystoneauth: %v", err)
	}
	var want map[string]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("keystoneauth printed %s: %v", out, err)
	}
	cfg, err := Load([]string{conf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.KeystoneAuth
	got := map[string]string{"auth_url": k.AuthURL, "username": k.Username, "password": k.Password,
		"project_name": k.ProjectName, "user_domain_name": k.UserDomainName, "project_domain_id": k.ProjectDomainID,
		"cafile": k.Cafile}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s: ours %q, keystoneauth %q", key, got[key], w)
		}
	}
	if want["username"] != "magnum" || want["cafile"] != "/etc/ssl/ks.pem" {
		t.Fatalf("the reference did not read what the test means: %v", want)
	}
}
