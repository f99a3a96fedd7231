package keystone

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/testpki"
)

const (
	clusterUUID   = "5d12f6fd-a196-4bf0-ae4c-1f639a523a52"
	ownerID       = "u-owner"
	ownerToken    = "owner-token-5ecret"
	otherID       = "u-other"
	otherToken    = "other-token-5ecret"
	servicePass   = "service-pa55word"
	serviceID     = "u-magnum"
	serviceName   = "magnum"
	serviceDomain = "Default"
)

// These tests run the issuer against keystonetest, a fake Keystone: the
// same scenarios run against the real Keystone in keystone_real_test.go
// (TestRealOpenStack*). The fake stays for what Keystone cannot be made to
// do on demand (5xx, a hang past the timeout, TLS with a test CA) and to
// pin the request paths; the lifecycle cases here are kept beside the real
// ones (their removal was not asked of the real tests' first run).
type fixture struct {
	ks   *keystonetest.Server
	iss  *Issuer
	logs *testkit.SyncBuffer
}

func newFixture(t *testing.T, mutate func(*Options)) *fixture {
	t.Helper()
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.AddUserToken(ownerID, ownerToken)
	ks.AddUserToken(otherID, otherToken)
	ks.SetService(serviceID, serviceName, serviceDomain, servicePass)
	opts := Options{
		AuthURL: ks.AuthURL() + "/v3",
		Timeout: 2 * time.Second,
		Service: ServiceCredentials{AuthURL: ks.AuthURL(), Username: serviceName, Password: servicePass,
			UserDomainName: serviceDomain, ProjectName: "service", ProjectDomainName: serviceDomain},
	}
	if mutate != nil {
		mutate(&opts)
	}
	logs := &testkit.SyncBuffer{}
	iss, err := New(opts, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ks: ks, iss: iss, logs: logs}
}

func userCtx(userID, token, authURL string) context.Context {
	return request.With(context.Background(), &request.Context{
		UserID: userID, ProjectID: "p1", AuthToken: token, AuthURL: authURL, RequestID: "req-ks-test",
	})
}

func testCluster() *objects.Cluster {
	return &objects.Cluster{UUID: objects.Str(clusterUUID), Name: objects.Str("k8s-prod"), UserID: objects.Str(ownerID)}
}

func isAuthFailure(err error) bool {
	return errors.Is(err, exception.ClassAuthorizationFailure.New(nil))
}

func TestIssueVerifyRevokeLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	ctx := userCtx(ownerID, ownerToken, f.ks.AuthURL()+"/v3/")
	c := testCluster()

	cred, err := f.iss.Issue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	creds := f.ks.Creds()
	if len(creds) != 1 {
		t.Fatalf("want 1 credential in Keystone, got %d", len(creds))
	}
	ac := creds[0]
	if ac.ID != cred.ID || ac.Secret != cred.Secret || ac.UserID != ownerID {
		t.Fatalf("returned %+v, Keystone holds %+v", cred, ac)
	}
	if !strings.HasPrefix(ac.Name, "magnum-"+clusterUUID+"-") {
		t.Fatalf("name %q", ac.Name)
	}
	if !strings.Contains(ac.Description, "k8s-prod") || !strings.Contains(ac.Description, clusterUUID) {
		t.Fatalf("description %q does not name the cluster", ac.Description)
	}
	if ac.Unrestricted || ac.ExpiresAt != nil {
		t.Fatalf("want restricted and no expiry, got unrestricted=%v expires_at=%v", ac.Unrestricted, ac.ExpiresAt)
	}
	if cred.AuthURL != f.ks.AuthURL()+"/v3/" {
		t.Fatalf("auth URL %q is not the request's", cred.AuthURL)
	}

	if err := f.iss.Verify(ctx, cred); err != nil {
		t.Fatalf("verify: %v", err)
	}
	bad := cred
	bad.Secret = "wrong"
	if err := f.iss.Verify(ctx, bad); !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("verify with a wrong secret: %v", err)
	}

	// A second issue (rotation) must not collide on the name.
	cred2, err := f.iss.Issue(ctx, c)
	if err != nil || cred2.ID == cred.ID {
		t.Fatalf("second issue: %v", err)
	}

	if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
		t.Fatal(err)
	}
	if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
		t.Fatalf("revoking an unknown id: %v", err)
	}
	if got := f.ks.Creds(); len(got) != 1 || got[0].ID != cred2.ID {
		t.Fatalf("after revoke Keystone holds %+v", got)
	}
	for _, r := range f.ks.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v3/auth/tokens" {
			continue
		}
		if !strings.HasPrefix(r.Path, "/v3/users/"+ownerID+"/application_credentials") {
			t.Fatalf("unexpected request %s %s", r.Method, r.Path)
		}
	}
}

func TestIssueUsesConfiguredAuthURLWhenContextHasNone(t *testing.T) {
	f := newFixture(t, nil)
	cred, err := f.iss.Issue(userCtx(ownerID, ownerToken, ""), testCluster())
	if err != nil {
		t.Fatal(err)
	}
	if cred.AuthURL != f.ks.AuthURL()+"/v3" {
		t.Fatalf("auth URL %q", cred.AuthURL)
	}
}

func TestIssueErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     func(ks *keystonetest.Server) context.Context
		setup   func(ks *keystonetest.Server)
		timeout time.Duration
		want    string
	}{
		{name: "no token", ctx: func(*keystonetest.Server) context.Context { return context.Background() },
			want: "no user token"},
		{name: "401 unknown token", ctx: func(ks *keystonetest.Server) context.Context {
			return userCtx(ownerID, "expired-token-5ecret", ks.AuthURL())
		}, want: "returned HTTP 401"},
		{name: "403 other user", ctx: func(ks *keystonetest.Server) context.Context {
			return userCtx(ownerID, otherToken, ks.AuthURL())
		}, want: "returned HTTP 403"},
		{name: "503", ctx: func(ks *keystonetest.Server) context.Context { return userCtx(ownerID, ownerToken, ks.AuthURL()) },
			setup: func(ks *keystonetest.Server) {
				ks.Fail(http.MethodPost, "/v3/users/", http.StatusServiceUnavailable, 1)
			},
			want: "returned HTTP 503"},
		{name: "timeout", ctx: func(ks *keystonetest.Server) context.Context { return userCtx(ownerID, ownerToken, ks.AuthURL()) },
			setup: func(ks *keystonetest.Server) { ks.SetDelay(5 * time.Second) }, timeout: 200 * time.Millisecond,
			want: "timed out"},
		{name: "bad url", ctx: func(*keystonetest.Server) context.Context { return userCtx(ownerID, ownerToken, "not a url") },
			want: "invalid Keystone URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				if tc.timeout > 0 {
					o.Timeout = tc.timeout
				}
			})
			if tc.setup != nil {
				tc.setup(f.ks)
			}
			start := time.Now()
			_, err := f.iss.Issue(tc.ctx(f.ks), testCluster())
			if !isAuthFailure(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "keystone connection failed") {
				t.Fatalf("got %v, want AuthorizationFailure containing %q", err, tc.want)
			}
			if tc.timeout > 0 && time.Since(start) > 2*time.Second {
				t.Fatalf("timeout not honoured: %v", time.Since(start))
			}
			for _, s := range []string{ownerToken, otherToken, "expired-token-5ecret", servicePass} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error leaks a secret: %v", err)
				}
			}
			if len(f.ks.Creds()) != 0 {
				t.Fatal("a credential was created")
			}
		})
	}
}

func TestVerifyTimeoutAndServerError(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Timeout = 200 * time.Millisecond })
	cred, err := f.iss.Issue(userCtx(ownerID, ownerToken, ""), testCluster())
	if err != nil {
		t.Fatal(err)
	}
	f.ks.Fail(http.MethodPost, "/v3/auth/tokens", http.StatusInternalServerError, 1)
	if err := f.iss.Verify(context.Background(), cred); !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("5xx: %v", err)
	}
	f.ks.SetDelay(3 * time.Second)
	if err := f.iss.Verify(context.Background(), cred); !isAuthFailure(err) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("timeout: %v", err)
	}
}

func TestRevokeWithoutTokenUsesServiceCredentials(t *testing.T) {
	f := newFixture(t, nil)
	c := testCluster()
	cred, err := f.iss.Issue(userCtx(ownerID, ownerToken, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	// Periodic tasks run with the admin context: no token.
	admin := request.With(context.Background(), request.Admin())
	if err := f.iss.Revoke(admin, c, cred.Ref()); err != nil {
		t.Fatal(err)
	}
	if len(f.ks.Creds()) != 0 {
		t.Fatal("credential not deleted")
	}
	var sawPassword bool
	for _, r := range f.ks.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v3/auth/tokens" {
			sawPassword = true
		}
	}
	if !sawPassword {
		t.Fatal("no service authentication")
	}
}

func TestRevokeByAnotherUserFallsBackToServiceCredentials(t *testing.T) {
	f := newFixture(t, nil)
	c := testCluster()
	cred, err := f.iss.Issue(userCtx(ownerID, ownerToken, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	// Another project member deletes the cluster: the credential is not
	// theirs (404 under their user), so the owner's is deleted as the service.
	if err := f.iss.Revoke(userCtx(otherID, otherToken, ""), c, cred.Ref()); err != nil {
		t.Fatal(err)
	}
	if len(f.ks.Creds()) != 0 {
		t.Fatal("credential not deleted")
	}
}

func TestRevokeErrors(t *testing.T) {
	t.Run("no token and no service credentials", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Service = ServiceCredentials{} })
		err := f.iss.Revoke(context.Background(), testCluster(), capi.CredentialRef{ID: "abc"})
		if !isAuthFailure(err) || !strings.Contains(err.Error(), "no user token") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("service password rejected", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Service.Password = "wrong-pa55" })
		err := f.iss.Revoke(context.Background(), testCluster(), capi.CredentialRef{ID: "abc"})
		if !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "wrong-pa55") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("5xx on delete", func(t *testing.T) {
		f := newFixture(t, nil)
		f.ks.Fail(http.MethodDelete, "/v3/users/", http.StatusBadGateway, -1)
		err := f.iss.Revoke(userCtx(ownerID, ownerToken, ""), testCluster(), capi.CredentialRef{ID: "abc"})
		if !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 502") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("expired user token falls back to the service", func(t *testing.T) {
		f := newFixture(t, nil)
		c := testCluster()
		cred, err := f.iss.Issue(userCtx(ownerID, ownerToken, ""), c)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.iss.Revoke(userCtx(ownerID, "expired-token-5ecret", ""), c, cred.Ref()); err != nil || len(f.ks.Creds()) != 0 {
			t.Fatalf("got %v, %d credentials left", err, len(f.ks.Creds()))
		}
	})
	t.Run("empty id is a no-op", func(t *testing.T) {
		f := newFixture(t, nil)
		if err := f.iss.Revoke(context.Background(), testCluster(), capi.CredentialRef{ID: ""}); err != nil || len(f.ks.Requests()) != 0 {
			t.Fatalf("got %v, %d requests", err, len(f.ks.Requests()))
		}
	})
}

func TestNoSecretInLogsOrErrors(t *testing.T) {
	f := newFixture(t, nil)
	ctx := userCtx(ownerID, ownerToken, "")
	c := testCluster()
	var errs []error
	cred, err := f.iss.Issue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	errs = append(errs, f.iss.Verify(ctx, cred))
	bad := cred
	bad.Secret = "bad-secret-5ecret"
	errs = append(errs, f.iss.Verify(ctx, bad))
	_, err = f.iss.Issue(userCtx(ownerID, "expired-token-5ecret", ""), c)
	errs = append(errs, err)
	errs = append(errs, f.iss.Revoke(request.With(context.Background(), request.Admin()), c, cred.Ref()))
	f.ks.Fail("", "/v3/", http.StatusInternalServerError, -1)
	errs = append(errs, f.iss.Revoke(request.With(context.Background(), request.Admin()), c, capi.CredentialRef{ID: "x"}))

	out := f.logs.String()
	if !strings.Contains(out, "created application credential") || !strings.Contains(out, "deleted application credential") {
		t.Fatalf("expected log lines missing:\n%s", out)
	}
	var all strings.Builder
	all.WriteString(out)
	for _, e := range errs {
		if e != nil {
			all.WriteString(e.Error())
		}
	}
	for _, s := range []string{cred.Secret, ownerToken, "expired-token-5ecret", "bad-secret-5ecret", servicePass, "gAAAA"} {
		if strings.Contains(all.String(), s) {
			t.Fatalf("secret %q leaked:\n%s", s, all.String())
		}
	}
}

func TestIdentityEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://ks:5000":             "http://ks:5000/v3/",
		"http://ks:5000/":            "http://ks:5000/v3/",
		"http://ks:5000/v3":          "http://ks:5000/v3/",
		"https://x/identity/v3/":     "https://x/identity/v3/",
		"https://u:p@x/identity?a=b": "https://x/identity/v3/",
	} {
		got, err := identityEndpoint(in)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := identityEndpoint(""); err == nil {
		t.Error("empty URL accepted")
	}
}

var _ capi.CredentialIssuer = (*Issuer)(nil)

// TestRevokeOfACredentialIssuedByAnotherMember: a project member other
// than the owner rotated the cluster's credential, so it belongs to that
// member. Revoking it, with the owner's token or with none, deletes it
// under that member (with the service credentials): before the member was
// recorded, the owner's 404 read as "already gone" and it stayed.
func TestRevokeOfACredentialIssuedByAnotherMember(t *testing.T) {
	for name, ctx := range map[string]context.Context{
		"owner's request":       userCtx(ownerID, ownerToken, ""),
		"no user token (admin)": request.With(context.Background(), request.Admin()),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			c := testCluster()
			cred, err := f.iss.Issue(userCtx(otherID, otherToken, ""), c)
			if err != nil {
				t.Fatal(err)
			}
			if cred.UserID != otherID {
				t.Fatalf("credential user %q, want the issuing member %q", cred.UserID, otherID)
			}
			if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
				t.Fatal(err)
			}
			if left := f.ks.Creds(); len(left) != 0 {
				t.Fatalf("%d credential(s) of the member not deleted", len(left))
			}
		})
	}
}

// TestCAFileIsTheTLSRoots: Options.CAFile is what the issuer trusts
// towards an HTTPS Keystone; another CA fails the handshake, and a missing
// or empty file fails New with an error naming the path.
func TestCAFileIsTheTLSRoots(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	ks := keystonetest.NewTLS(ca.Server(t, "127.0.0.1").TLS(t))
	t.Cleanup(ks.Close)
	ks.AddUserToken(ownerID, ownerToken)
	ctx := userCtx(ownerID, ownerToken, "")
	issue := func(caFile string) error {
		iss, err := New(Options{AuthURL: ks.AuthURL(), Timeout: 2 * time.Second, CAFile: caFile}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		_, err = iss.Issue(ctx, testCluster())
		return err
	}
	if err := issue(ca.File); err != nil {
		t.Fatalf("with the server's CA: %v", err)
	}
	// The issuer's errors name the transport error by its type (osredact).
	if err := issue(other.File); err == nil || !strings.Contains(err.Error(), "tls.CertificateVerificationError") {
		t.Fatalf("with another CA: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		if _, err := New(Options{AuthURL: ks.AuthURL(), CAFile: f}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("CA file %s: %v", f, err)
		}
	}
}
