package config

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

const python = "/usr/bin/python3"

// specEntry is one option definition handed to testdata/oslo_values.py.
type specEntry struct {
	Group      string      `json:"group"`
	Name       string      `json:"name"`
	Kind       string      `json:"kind"`
	Syntax     string      `json:"syntax,omitempty"`
	Default    *string     `json:"default"`
	Min        *float64    `json:"min,omitempty"`
	Max        *float64    `json:"max,omitempty"`
	Choices    []string    `json:"choices,omitempty"`
	Deprecated [][2]string `json:"deprecated,omitempty"`
}

type osloResult struct {
	Fatal   string                     `json:"fatal"`
	Values  map[string]json.RawMessage `json:"values"`
	Errors  map[string]string          `json:"errors"`
	Missing []string                   `json:"missing"`
}

func kindName(k kind) string {
	return [...]string{kindString: "string", kindBool: "bool", kindInt: "int", kindFloat: "float", kindList: "list", kindMulti: "multi", kindDict: "dict"}[k]
}

// runOslo runs the Python reference on the compare files.
func runOslo(t *testing.T, mode string, defs []*optDef, args []string) osloResult {
	t.Helper()
	var spec []specEntry
	for _, d := range defs {
		e := specEntry{Group: d.group, Name: d.name, Kind: kindName(d.kind), Min: d.min, Max: d.max, Choices: d.choices}
		if d.syntax == "hostaddress" {
			e.Syntax = d.syntax
		}
		if d.hasDefault {
			def := d.def
			e.Default = &def
		}
		for _, dn := range d.deprecated {
			e.Deprecated = append(e.Deprecated, [2]string{dn.group, dn.name})
		}
		spec = append(spec, e)
	}
	specPath := filepath.Join(t.TempDir(), "spec.json")
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, append([]string{filepath.Join("testdata", "oslo_values.py"), mode, specPath}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // oslo's deprecation warnings; shown on failure
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oslo_values.py %s: %v\n%s", mode, err, stderr.String())
	}
	var res osloResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("oslo_values.py output %q: %v", out, err)
	}
	if res.Fatal != "" {
		t.Fatalf("oslo.config failed: %s", res.Fatal)
	}
	return res
}

// goValues resolves every option as oslo would see it (before the Go
// conversions to durations, and before host falls back to the hostname).
func goValues(t *testing.T, files, dirs []string) (map[string]any, map[string]error, []*optDef) {
	t.Helper()
	srcs, errs := readSources(files, dirs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r, defs, errs := newResolver(srcs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r.env = os.LookupEnv // as Load does
	values := map[string]any{}
	failures := map[string]error{}
	for _, d := range defs {
		key := d.group + "." + d.name
		v, err := r.get(d)
		if err != nil {
			failures[key] = err
			continue
		}
		if dv, ok := v.(dict); ok {
			v = dv.m
		}
		values[key] = v
	}
	return values, failures, defs
}

func jsonValue(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func requirePython(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the Python reference (several seconds)")
	}
	// In CI (.ci/services installs them) a missing reference is a failure.
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if _, err := os.Stat(python); err != nil {
		skip("no %s with oslo.config", python)
	}
	if _, err := testkit.CombinedOutput(testkit.ToolTimeout, python, "-c", "import oslo_config, magnum.conf"); err != nil {
		skip("oslo.config or magnum not importable: %v", err)
	}
}

var (
	compareFiles = []string{filepath.Join("testdata", "compare", "main.conf"), filepath.Join("testdata", "compare", "second.conf")}
	compareDirs  = []string{filepath.Join("testdata", "compare", "conf.d")}
)

func compareArgs() []string {
	var args []string
	for _, f := range compareFiles {
		args = append(args, "--config-file", f)
	}
	for _, d := range compareDirs {
		args = append(args, "--config-dir", d)
	}
	return args
}

// TestMatchesOsloConfig registers this package's option definitions with
// oslo.config itself, parses the same files with both, and compares every
// value: booleans, integers, floats, lists, dicts, multi-strings,
// interpolation, deprecated names and groups, continuation lines, quotes,
// file and directory order, and which options are invalid.
func TestMatchesOsloConfig(t *testing.T) {
	requirePython(t)
	values, failures, defs := goValues(t, compareFiles, compareDirs)
	res := runOslo(t, "spec", defs, compareArgs())
	compared := compareAll(t, values, failures, defs, res)
	if compared < len(defs)-2 {
		t.Errorf("compared only %d of %d options", compared, len(defs))
	}
	// The files must exercise what this test claims; guard against edits
	// that make the comparison vacuous.
	for key, want := range map[string]any{
		"oslo_messaging_notifications.driver": []any{"log", "messaging", "messagingv2", "routing", "noop", "test"},
		"kubernetes.health_polling_interval":  float64(120),
		"audit.namespace":                     "magnum-conductor-test-$x-False-30",
		"DEFAULT.transport_url":               "rabbit://user:pa$word@rabbit1:5672,user:pa$word@rabbit2:5672/magnum",
		"x509.allowed_extensions":             []any{"keyUsage", "extendedKeyUsage", "subjectAltName"},
		"capi_driver.flavor_label_defaults":   map[string]any{"boot_volume_size": "20", "boot_volume_type": "ssd", "a,b": "c"},
		"database.connection":                 "sqlite:///second.sqlite",
		"cluster_heat.create_timeout":         float64(30),
		"keystone_auth.username":              "magnum-svc",
		"keystone_auth.project_name":          "service",
		"keystone_auth.password":              "p@ss word",
	} {
		if got := jsonValue(t, values[key]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", key, got, want)
		}
	}
	var failed []string
	for k := range failures {
		failed = append(failed, k)
	}
	sort.Strings(failed)
	eq(t, failed, []string{"oslo_messaging_rabbit.rabbit_transient_queues_ttl", "x509.rsa_key_size"})
}

// compareAll compares every option's value (or failure) in Go and in
// oslo.config and returns how many were compared.
func compareAll(t *testing.T, values map[string]any, failures map[string]error, defs []*optDef, res osloResult) int {
	t.Helper()
	compared := 0
	for _, d := range defs {
		key := d.group + "." + d.name
		if d.syntax == "listen" {
			continue // normalised by us (loopback default), a plain string for oslo
		}
		pyErr, pyFailed := res.Errors[key]
		goErr, goFailed := failures[key]
		if pyFailed != goFailed {
			t.Errorf("%s: oslo error %q, Go error %v", key, pyErr, goErr)
			continue
		}
		if goFailed {
			compared++
			continue
		}
		var py any
		if err := json.Unmarshal(res.Values[key], &py); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got := jsonValue(t, values[key]); !reflect.DeepEqual(got, py) {
			t.Errorf("%s: Go %#v, oslo.config %#v", key, got, py)
		}
		compared++
	}
	return compared
}

// TestEnvironmentMatchesOsloConfig: OS_<GROUP>__<OPTION> variables win over
// the files in both, under the option's own name only (a deprecated name in
// the environment is not read), take part in interpolation, and replace an
// invalid value from a file.
func TestEnvironmentMatchesOsloConfig(t *testing.T) {
	requirePython(t)
	for k, v := range map[string]string{
		"OS_DEFAULT__DEBUG":       "false",
		"OS_DATABASE__CONNECTION": "mysql+pymysql://env:pw@db/magnum",
		"OS_CONDUCTOR__WORKERS":   "7",
		"OS_DEFAULT__LOGFILE":     "/tmp/deprecated-name.log",
		"OS_DEFAULT__PYBASEDIR":   "/srv/magnum",
		"OS_X509__RSA_KEY_SIZE":   "4096",
	} {
		t.Setenv(k, v)
	}
	values, failures, defs := goValues(t, compareFiles, compareDirs)
	res := runOslo(t, "spec", defs, compareArgs())
	if n := compareAll(t, values, failures, defs, res); n < len(defs)-2 {
		t.Errorf("compared only %d of %d options", n, len(defs))
	}
	for key, want := range map[string]any{
		"DEFAULT.debug":       false,
		"database.connection": "mysql+pymysql://env:pw@db/magnum",
		"conductor.workers":   float64(7),
		"DEFAULT.log_file":    "magnum-conductor.log",
		"DEFAULT.bindir":      "/srv/magnum/sbin", // $pybasedir/sbin in main.conf
		"x509.rsa_key_size":   float64(4096),
	} {
		if got := jsonValue(t, values[key]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", key, got, want)
		}
	}
	// A multi-string option from the environment is that one value.
	// (oslo.config 9 splits it into characters: driver = noop becomes
	// ['n', 'o', 'o', 'p']; not copied.)
	t.Setenv("OS_OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "noop")
	t.Setenv("OS_OSLO_MESSAGING_RABBIT__RABBIT_TRANSIENT_QUEUES_TTL", "1800") // the other bad value in the files
	cfg, err := Load(compareFiles, compareDirs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Notifications.Driver, []string{"noop"}) {
		t.Errorf("driver from the environment: %q", cfg.Notifications.Driver)
	}
	t.Setenv("OS_CONDUCTOR__WORKERS", "many")
	if _, err := Load(compareFiles, compareDirs); err == nil ||
		!strings.Contains(err.Error(), `environment variable OS_CONDUCTOR__WORKERS: [conductor] workers = "many"`) {
		t.Errorf("a bad value in the environment: %v", err)
	}
}

// TestDefinitionsMatchMagnum parses the same files with Magnum's real
// option registrations (magnum.conf, oslo.messaging, oslo.db,
// keystonemiddleware, keystoneauth, pycadf) and compares every option both
// define: this checks our defaults, types and deprecated names against the
// Python conductor's.
func TestDefinitionsMatchMagnum(t *testing.T) {
	requirePython(t)
	values, failures, defs := goValues(t, compareFiles, compareDirs)
	res := runOslo(t, "real", defs, compareArgs())
	// Options where the Go conductor deliberately validates more than Python.
	stricter := map[string]bool{}
	compared := 0
	for _, d := range defs {
		key := d.group + "." + d.name
		if _, ok := res.Values[key]; !ok {
			if _, ok := res.Errors[key]; !ok {
				continue // not a Magnum option (new in Go) or not registered by the conductor
			}
		}
		pyErr, pyFailed := res.Errors[key]
		goErr, goFailed := failures[key]
		if pyFailed != goFailed && !stricter[key] {
			t.Errorf("%s: oslo error %q, Go error %v", key, pyErr, goErr)
			continue
		}
		compared++
		if goFailed {
			continue
		}
		var py any
		if err := json.Unmarshal(res.Values[key], &py); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got := jsonValue(t, values[key]); !reflect.DeepEqual(got, py) {
			t.Errorf("%s: Go %#v, Magnum %#v", key, got, py)
		}
	}
	if compared < 80 {
		t.Errorf("compared only %d options with Magnum's definitions (missing: %v)", compared, res.Missing)
	}
	t.Logf("compared %d options; not in Magnum's conductor registration: %v", compared, res.Missing)
}

// TestInvalidValuesMatchOsloConfig checks that oslo.config and this package
// reject the same options in a file of bad values.
func TestInvalidValuesMatchOsloConfig(t *testing.T) {
	requirePython(t)
	files := []string{filepath.Join("testdata", "compare", "bad.conf")}
	values, failures, defs := goValues(t, files, nil)
	res := runOslo(t, "spec", defs, []string{"--config-file", files[0]})
	var goFailed, pyFailed []string
	for k := range failures {
		goFailed = append(goFailed, k)
	}
	for k := range res.Errors {
		pyFailed = append(pyFailed, k)
	}
	sort.Strings(goFailed)
	sort.Strings(pyFailed)
	want := []string{
		"DEFAULT.executor_thread_pool_size", "DEFAULT.host", "DEFAULT.periodic_enable",
		"capi_driver.flavor_label_defaults", "conductor.topic", "database.connection_debug",
		"kubernetes.health_poll_workers", "oslo_messaging_rabbit.rabbit_login_method", "oslo_messaging_rabbit.ssl",
		"periodic.coordination", "simulated_driver.operation_delay", "x509.allow_ca",
	}
	eq(t, goFailed, want)
	eq(t, pyFailed, want)
	// ${conductor.workers} interpolates None as "" in oslo, and so here.
	eq(t, values["audit.namespace"], any(""))
}
