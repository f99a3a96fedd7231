package keystone

// The issuer against the real Keystone of the tests' OpenStack control
// plane (test/openstack): issue, verify, rotation, revoke by the owner, by
// another member of the project, with no token (service credentials), with
// a revoked token, and the errors Keystone itself gives. The fake-based
// tests in keystone_test.go stay for what Keystone cannot be made to do
// (answer 5xx, hang past the timeout, serve TLS with a CA of the test's)
// and for the request paths the issuer must use.

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/openstack"
)

type realFixture struct {
	cloud   *openstack.Cloud
	project *openstack.Project
	iss     *Issuer
	logs    *testkit.SyncBuffer
}

// newRealFixture is a project with its user, and an issuer whose service
// credentials ([keystone_auth]) are the cloud admin's, as Magnum's service
// user holds the admin role on a cloud.
func newRealFixture(t *testing.T) *realFixture {
	t.Helper()
	c := openstack.Need(t)
	p := c.NewProject(t, "ksissuer")
	logs := &testkit.SyncBuffer{}
	iss, err := New(Options{
		AuthURL: c.AuthURL,
		Timeout: 30 * time.Second,
		Service: ServiceCredentials{AuthURL: c.AuthURL, Username: c.Admin.Username, Password: c.Admin.Password,
			UserDomainName: c.Admin.UserDomainName, ProjectName: c.Admin.ProjectName, ProjectDomainName: c.Admin.ProjectDomainName},
	}, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return &realFixture{cloud: c, project: p, iss: iss, logs: logs}
}

func (f *realFixture) cluster(userID string) *objects.Cluster {
	return &objects.Cluster{UUID: objects.Str(clusterUUID), Name: objects.Str("k8s-prod"), UserID: objects.Str(userID)}
}

func realUserCtx(c *openstack.Cloud, projectID, userID string, p *gophercloud.ProviderClient) context.Context {
	return request.With(context.Background(), &request.Context{
		UserID: userID, ProjectID: projectID, AuthToken: p.Token(), AuthURL: c.AuthURL, RequestID: "req-ks-real",
	})
}

// credentials lists, as the cloud admin, the application credentials of
// userID in Keystone.
func (f *realFixture) credentials(t *testing.T, userID string) []applicationcredentials.ApplicationCredential {
	t.Helper()
	idc, err := gos.NewIdentityV3(f.cloud.AdminProvider(t), f.cloud.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := applicationcredentials.List(idc, userID, applicationcredentials.ListOpts{}).AllPages(context.Background())
	if err != nil {
		t.Fatalf("list the application credentials of %s: %v", userID, err)
	}
	acs, err := applicationcredentials.ExtractApplicationCredentials(pages)
	if err != nil {
		t.Fatal(err)
	}
	return acs
}

// TestRealOpenStackIssueVerifyRotateRevoke: the credential Keystone holds
// is the one returned, named and described after the cluster, restricted
// and without expiry, scoped to the user's project; it authenticates and a
// wrong secret does not (401); a rotation issues a second one next to it;
// revoking the first leaves the second, which still authenticates, and a
// second revoke of the first is not an error.
func TestRealOpenStackIssueVerifyRotateRevoke(t *testing.T) {
	t.Parallel()
	f := newRealFixture(t)
	p := f.project
	ctx := realUserCtx(f.cloud, p.ID, p.UserID, p.Provider)
	c := f.cluster(p.UserID)

	cred, err := f.iss.Issue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	acs := f.credentials(t, p.UserID)
	if len(acs) != 1 || acs[0].ID != cred.ID || cred.UserID != p.UserID || cred.AuthURL != f.cloud.AuthURL {
		t.Fatalf("issued %+v; Keystone holds %d credentials: %+v", cred.Ref(), len(acs), acs)
	}
	ac := acs[0]
	if !strings.HasPrefix(ac.Name, "magnum-"+clusterUUID+"-") || !strings.Contains(ac.Description, "k8s-prod") ||
		!strings.Contains(ac.Description, clusterUUID) {
		t.Errorf("name %q, description %q: want them after the cluster", ac.Name, ac.Description)
	}
	if ac.Unrestricted || !ac.ExpiresAt.IsZero() || ac.ProjectID != p.ID {
		t.Errorf("unrestricted=%v expires_at=%v project=%s; want restricted, no expiry, project %s", ac.Unrestricted, ac.ExpiresAt, ac.ProjectID, p.ID)
	}

	if err := f.iss.Verify(ctx, cred); err != nil {
		t.Fatalf("verify: %v", err)
	}
	bad := cred
	bad.Secret = "wrong-secret-5ecret"
	if err := f.iss.Verify(ctx, bad); !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("verify with a wrong secret: %v", err)
	}

	cred2, err := f.iss.Issue(ctx, c)
	if err != nil || cred2.ID == cred.ID {
		t.Fatalf("rotation: %v (same id: %v)", err, cred2.ID == cred.ID)
	}
	if n := len(f.credentials(t, p.UserID)); n != 2 {
		t.Fatalf("after the rotation Keystone holds %d credentials, want 2", n)
	}
	if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
		t.Fatal(err)
	}
	if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
		t.Fatalf("revoking a credential already gone: %v", err)
	}
	if acs := f.credentials(t, p.UserID); len(acs) != 1 || acs[0].ID != cred2.ID {
		t.Fatalf("after the revoke Keystone holds %+v, want only %s", acs, cred2.ID)
	}
	// Keystone answers 404 to a deleted credential's authentication.
	if err := f.iss.Verify(ctx, cred); !isAuthFailure(err) || !strings.Contains(err.Error(), "does not authenticate") {
		t.Errorf("a revoked credential verifies: %v", err)
	}
	if err := f.iss.Verify(ctx, cred2); err != nil {
		t.Errorf("the rotated credential does not verify: %v", err)
	}

	out := f.logs.String()
	if !strings.Contains(out, "created application credential") || !strings.Contains(out, "deleted application credential") {
		t.Errorf("log lines missing:\n%s", out)
	}
	for _, s := range []string{cred.Secret, cred2.Secret, p.Provider.Token(), p.Password, f.cloud.Admin.Password} {
		if strings.Contains(out, s) {
			t.Fatalf("a secret is in the issuer's log")
		}
	}
}

// TestRealOpenStackRevokeWithoutTokenOrWithARevokedOne: the periodic tasks
// revoke with no user token, and a user's token may have been revoked
// since the request: both delete the owner's credential with the service
// credentials.
func TestRealOpenStackRevokeWithoutTokenOrWithARevokedOne(t *testing.T) {
	t.Parallel()
	f := newRealFixture(t)
	p := f.project
	c := f.cluster(p.UserID)
	ctx := realUserCtx(f.cloud, p.ID, p.UserID, p.Provider)
	cred, err := f.iss.Issue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.iss.Revoke(request.With(context.Background(), request.Admin()), c, cred.Ref()); err != nil {
		t.Fatalf("revoke with the admin context: %v", err)
	}
	if acs := f.credentials(t, p.UserID); len(acs) != 0 {
		t.Fatalf("the credential is still in Keystone: %+v", acs)
	}

	// A token of the user, revoked (DELETE /v3/auth/tokens), then used.
	u := p.Cloud()
	prov, err := gos.AuthenticatedClient(context.Background(), p.AuthOptions())
	if err != nil {
		t.Fatal(err)
	}
	cred, err = f.iss.Issue(realUserCtx(u, p.ID, p.UserID, prov), c)
	if err != nil {
		t.Fatal(err)
	}
	idc, err := gos.NewIdentityV3(p.Provider, u.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	if err := tokens.Revoke(context.Background(), idc, prov.Token()).Err; err != nil {
		t.Fatalf("revoke the user's token: %v", err)
	}
	revoked := request.With(context.Background(), &request.Context{
		UserID: p.UserID, ProjectID: p.ID, AuthToken: prov.Token(), AuthURL: u.AuthURL,
	})
	if err := f.iss.Revoke(revoked, c, cred.Ref()); err != nil {
		t.Fatalf("revoke with a revoked token: %v", err)
	}
	if acs := f.credentials(t, p.UserID); len(acs) != 0 {
		t.Fatalf("the credential is still in Keystone: %+v", acs)
	}
}

// TestRealOpenStackRevokeAcrossMembers: another member of the project
// deletes the owner's cluster (the credential is not under their user:
// the service credentials delete it as the owner's), and a credential a
// member rotated is deleted under that member when the owner, or the
// admin context, revokes it.
func TestRealOpenStackRevokeAcrossMembers(t *testing.T) {
	t.Parallel()
	f := newRealFixture(t)
	p := f.project
	other := p.AddUser(t)
	ownerCtx := realUserCtx(f.cloud, p.ID, p.UserID, p.Provider)
	otherCtx := realUserCtx(f.cloud, p.ID, other.ID, other.Provider)
	c := f.cluster(p.UserID)

	cred, err := f.iss.Issue(ownerCtx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.iss.Revoke(otherCtx, c, cred.Ref()); err != nil {
		t.Fatalf("revoke by another member: %v", err)
	}
	if acs := f.credentials(t, p.UserID); len(acs) != 0 {
		t.Fatalf("the owner's credential is still in Keystone: %+v", acs)
	}

	for name, ctx := range map[string]context.Context{
		"owner's request":       ownerCtx,
		"no user token (admin)": request.With(context.Background(), request.Admin()),
	} {
		cred, err := f.iss.Issue(otherCtx, c)
		if err != nil {
			t.Fatal(err)
		}
		if cred.UserID != other.ID {
			t.Fatalf("credential user %s, want the issuing member %s", cred.UserID, other.ID)
		}
		if err := f.iss.Revoke(ctx, c, cred.Ref()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if acs := f.credentials(t, other.ID); len(acs) != 0 {
			t.Fatalf("%s: the member's credential is still in Keystone: %+v", name, acs)
		}
	}
}

// TestRealOpenStackIssueErrors: what Keystone itself refuses: an unknown
// token (401), another user's token creating for the owner (403), a
// service password Keystone rejects (401); the error names the status and
// never the secret, and nothing is created.
func TestRealOpenStackIssueErrors(t *testing.T) {
	t.Parallel()
	f := newRealFixture(t)
	p := f.project
	other := p.AddUser(t)
	c := f.cluster(p.UserID)
	for name, tc := range map[string]struct {
		ctx  context.Context
		want string
	}{
		"unknown token": {request.With(context.Background(), &request.Context{
			UserID: p.UserID, ProjectID: p.ID, AuthToken: "gAAAAAunknown-token-5ecret", AuthURL: f.cloud.AuthURL,
		}), "returned HTTP 401"},
		"another user's token": {request.With(context.Background(), &request.Context{
			UserID: p.UserID, ProjectID: p.ID, AuthToken: other.Provider.Token(), AuthURL: f.cloud.AuthURL,
		}), "returned HTTP 403"},
	} {
		_, err := f.iss.Issue(tc.ctx, c)
		if !isAuthFailure(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want AuthorizationFailure with %q", name, err, tc.want)
		} else if strings.Contains(err.Error(), "5ecret") || strings.Contains(err.Error(), other.Provider.Token()) {
			t.Errorf("%s: the error holds the token", name)
		}
	}
	if n := len(f.credentials(t, p.UserID)) + len(f.credentials(t, other.ID)); n != 0 {
		t.Fatalf("%d credentials created by refused requests", n)
	}

	wrong, err := New(Options{AuthURL: f.cloud.AuthURL, Service: ServiceCredentials{AuthURL: f.cloud.AuthURL,
		Username: f.cloud.Admin.Username, Password: "wrong-pa55-5ecret", UserDomainName: "Default",
		ProjectName: "admin", ProjectDomainName: "Default"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	err = wrong.Revoke(request.With(context.Background(), request.Admin()), c, capi.CredentialRef{ID: "abc", UserID: p.UserID})
	if !isAuthFailure(err) || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "wrong-pa55") {
		t.Fatalf("service password rejected: %v", err)
	}
}
