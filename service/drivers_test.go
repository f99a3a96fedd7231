package service

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/test/testpki"
)

type exampleOpts struct {
	Endpoint string        `ini:"endpoint" default:"http://127.0.0.1:9999" help:"endpoint"`
	Timeout  time.Duration `ini:"timeout" unit:"s" default:"30" help:"timeout"`
}

// TestDriverFactoriesAreRegistered: every factory runs with the
// conductor's parts and its own option group; a nil driver is not
// registered, disabled_drivers drops one, and an error stops the start.
func TestDriverFactoriesAreRegistered(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "magnum.conf")
	if err := os.WriteFile(conf, []byte("[example_driver]\ntimeout = 5\n[drivers]\ndisabled_drivers = off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]string{conf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got exampleOpts
	example := func(_ context.Context, env DriverEnv) (drivers.Driver, error) {
		if env.Config != cfg || env.Log == nil || env.Certs == nil || env.Lookup == nil {
			return nil, errors.New("an incomplete environment")
		}
		if err := env.Options("example_driver", &got); err != nil {
			return nil, err
		}
		return simulated.New(simulated.Options{Name: "example", Distros: []string{"example"}}), nil
	}
	notConfigured := func(context.Context, DriverEnv) (drivers.Driver, error) { return nil, nil }
	off := func(context.Context, DriverEnv) (drivers.Driver, error) {
		return simulated.New(simulated.Options{Name: "off", Distros: []string{"off"}}), nil
	}
	st := startup{files: []string{conf}, drivers: []DriverFactory{example, notConfigured, off}}
	reg, err := buildDrivers(context.Background(), st, cfg, nil, emptyStore(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if names := reg.Names(); len(names) != 1 || names[0] != "example" {
		t.Errorf("registered %v", names)
	}
	if got.Timeout != 5*time.Second || got.Endpoint != "http://127.0.0.1:9999" {
		t.Errorf("the driver's options: %+v", got)
	}
	bad := errors.New("[example_driver]/endpoint: no scheme")
	st.drivers = []DriverFactory{func(context.Context, DriverEnv) (drivers.Driver, error) { return nil, bad }}
	if _, err := buildDrivers(context.Background(), st, cfg, nil, emptyStore(t), slog.New(slog.DiscardHandler)); !errors.Is(err, bad) {
		t.Errorf("a factory's error: %v", err)
	}
}

// TestKeystoneSessionWithTheServiceCredentials: the session a driver gets
// authenticates with [keystone_auth]'s password credentials.
func TestKeystoneSessionWithTheServiceCredentials(t *testing.T) {
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.SetService("svc-id", "magnum", "Default", "s3cret")
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[keystone_auth]\nauth_type = password\nauth_url = " +
		ks.AuthURL() + "\nusername = magnum\npassword = s3cret\nuser_domain_name = Default\n")}})
	if err != nil {
		t.Fatal(err)
	}
	k := keystoneOf(cfg)
	pc, err := k.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if pc.Token() == "" {
		t.Fatal("no token")
	}
	k.Password = "wrong"
	if _, err := k.Client(context.Background()); err == nil {
		t.Fatal("a wrong password authenticated")
	}
	if _, err := (Keystone{}).Client(context.Background()); !errors.Is(err, ErrNoServiceCredentials) {
		t.Fatalf("no credentials: %v", err)
	}
}

// TestKeystoneSessionTrustsTheCAFile: [keystone_auth] cafile is the roots
// of the session's TLS; another CA fails the handshake, and a missing or
// empty file is an error naming the path.
func TestKeystoneSessionTrustsTheCAFile(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	ks := keystonetest.NewTLS(ca.Server(t, "127.0.0.1").TLS(t))
	t.Cleanup(ks.Close)
	ks.SetService("svc-id", "magnum", "Default", "s3cret")
	k := Keystone{AuthURL: ks.AuthURL(), Username: "magnum", Password: "s3cret", UserDomainName: "Default", CAFile: ca.File}
	if pc, err := k.Client(context.Background()); err != nil || pc.Token() == "" {
		t.Fatalf("with the server's CA: %v", err)
	}
	k.CAFile = other.File
	if _, err := k.Client(context.Background()); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("with another CA: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		k.CAFile = f
		if _, err := k.Client(context.Background()); err == nil || !strings.Contains(err.Error(), "[keystone_auth] cafile") || !strings.Contains(err.Error(), f) {
			t.Errorf("cafile %s: %v", f, err)
		}
	}
}
