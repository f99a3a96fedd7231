package conductor

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// Summary row sign_certificate, get_ca_certificate.

func TestSignCertificateDefaultsToKubernetesCA(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	cert := &objects.Certificate{CSR: objects.Str("CSR"), ClusterUUID: c.UUID}
	got, err := e.h.SignCertificate(e.ctx, c, cert)
	if err != nil {
		t.Fatal(err)
	}
	if objects.Deref(got.PEM) != "signed(CSR)by(kubernetes)" {
		t.Errorf("pem %q", objects.Deref(got.PEM))
	}
	cert = &objects.Certificate{CSR: objects.Str("CSR2"), CACertType: objects.Str("etcd")}
	if got, err = e.h.SignCertificate(e.ctx, c, cert); err != nil || objects.Deref(got.PEM) != "signed(CSR2)by(etcd)" {
		t.Errorf("etcd: %v %v", got, err)
	}
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNotes()
}

func TestSignCertificateWithoutCSRFails(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	_, err := e.h.SignCertificate(e.ctx, c, &objects.Certificate{})
	wantClass(t, err, "InvalidParameterValue", "")
}

func TestGetCACertificateBuildsCertificateFromCluster(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	got, err := e.h.GetCACertificate(e.ctx, c, objects.Str("front-proxy"))
	if err != nil {
		t.Fatal(err)
	}
	if objects.Deref(got.PEM) != "PEM of front-proxy CA ca-old" || objects.Deref(got.ClusterUUID) != *c.UUID ||
		objects.Deref(got.ProjectID) != testProject || objects.Deref(got.UserID) != testUser {
		t.Errorf("certificate %+v", got)
	}
}

// Summary row rotate_ca_certificate.

func TestRotateCACertificateReplacesRefsAndDeletesOldCerts(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	got, err := e.h.RotateCACertificate(e.ctx, c)
	if err != nil || got == nil {
		t.Fatalf("%v %v", got, err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	row := e.cluster(*c.UUID)
	if objects.Deref(row.CACertRef) != "ca-1" || objects.Deref(row.MagnumCertRef) != "client-1" ||
		objects.Deref(row.EtcdCACertRef) != "etcd-1" || objects.Deref(row.FrontProxyCACertRef) != "fp-1" {
		t.Errorf("refs not replaced: %v %v %v %v", row.CACertRef, row.MagnumCertRef, row.EtcdCACertRef, row.FrontProxyCACertRef)
	}
	if want := []string{"ca-old", "client-old", "etcd-old", "fp-old"}; !slices.Equal(e.certs.deleted, want) {
		t.Errorf("deleted %v, want %v", e.certs.deleted, want)
	}
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE")
	if calls := e.drv.Calls(); !slices.Equal(calls, []string{"rotate_ca_certificate"}) {
		t.Errorf("driver calls %v, want the roll-out of the new CAs", calls)
	}
}

func TestRotateCACertificateRefusedOutsideGuard(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateInProgress, 1)
	_, err := e.h.RotateCACertificate(e.ctx, c)
	wantClass(t, err, "NotSupported", `Updating a cluster when status is "UPDATE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "seeded")
	e.wantNotes("ERROR magnum.cluster.update/failure status=UPDATE_IN_PROGRESS")
	if len(e.certs.deleted) != 0 || e.certs.n != 0 {
		t.Errorf("certificates touched: generated %d, deleted %v", e.certs.n, e.certs.deleted)
	}
}

// Magnum claims the cluster first and leaves it UPDATE_FAILED, which then
// blocks its upgrades; here the refusal comes before the claim and the
// cluster stays as it was (a failure notification, as for a guard's
// refusal).
func TestRotateCACertificateUnsupportedDriverLeavesTheClusterAsItWas(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.plain, objects.CreateComplete, 1)
	_, err := e.h.RotateCACertificate(e.ctx, c)
	wantClass(t, err, "NotSupported", "'rotate_ca_certificate' is not supported by this driver.")
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	if objects.Deref(e.cluster(*c.UUID).CACertRef) != "ca-old" || e.certs.n != 0 {
		t.Error("certificates changed although the driver cannot roll them out")
	}
	e.wantNotes("ERROR magnum.cluster.update/failure status=CREATE_COMPLETE")
	// An upgrade is not blocked by the refused rotation.
	if _, err := e.h.ClusterUpgrade(e.ctx, e.cluster(*c.UUID), e.template("plain-os"), 1, e.nodegroup(c, "default-worker"), false); err != nil {
		t.Errorf("upgrade after the refused rotation: %v", err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
}

func TestRotateCACertificateDriverFailureKeepsOldCerts(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["rotate_ca_certificate"] = errors.New("cannot reach the cluster")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := e.h.RotateCACertificate(e.ctx, c); err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "cannot reach the cluster")
	if row := e.cluster(*c.UUID); objects.Deref(row.CACertRef) != "ca-old" || objects.Deref(row.MagnumCertRef) != "client-old" {
		t.Errorf("refs %v %v, want the old ones", row.CACertRef, row.MagnumCertRef)
	}
	if want := []string{"ca-1", "client-1", "etcd-1", "fp-1"}; !slices.Equal(e.certs.deleted, want) {
		t.Errorf("deleted %v, want the unused new certificates %v", e.certs.deleted, want)
	}
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
}

func TestRotateCACertificateGenerationFailureEndsUpdateFailed(t *testing.T) {
	e := newEnv(t)
	e.certs.failGen = exception.ClassCertificatesToClusterFailed.New(map[string]any{"cluster_uuid": "c"})
	c := e.seed(e.ct, objects.CreateComplete, 1)
	_, err := e.h.RotateCACertificate(e.ctx, c)
	wantClass(t, err, "CertificatesToClusterFailed", "")
	e.wantStatus(*c.UUID, objects.UpdateFailed, "Failed to create certificates for Cluster: c")
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

// Summary row credential_rotate.

func TestCredentialRotateCallsDriverWithoutStatusChange(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateFailed, 1)
	if err := e.h.CredentialRotate(e.ctx, c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.drv.Calls(), []string{"rotate_credential"}) {
		t.Errorf("driver calls %v", e.drv.Calls())
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "seeded")
	e.wantNotes()
}

func TestCredentialRotateRefusedOutsideGuard(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateInProgress, 1)
	err := e.h.CredentialRotate(e.ctx, c)
	wantClass(t, err, "NotSupported", `credential_rotate when cluster status is "CREATE_IN_PROGRESS" is not supported.`)
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestCredentialRotateUnsupportedDriver(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.plain, objects.CreateComplete, 1)
	err := e.h.CredentialRotate(e.ctx, c)
	wantClass(t, err, "NotSupported", "Credential rotation is not supported by driver.")
	e.drv.fail["rotate_credential"] = exception.NotImplemented("later")
	c2 := e.seed(e.ct, objects.CreateComplete, 1)
	err = e.h.CredentialRotate(e.ctx, c2)
	wantClass(t, err, "NotSupported", "Credential rotation is not supported by driver.")
	e.wantStatus(*c2.UUID, objects.CreateComplete, "seeded")
}

// Summary rows federation_*, ping_conductor.

func TestFederationOperationsAreNotImplemented(t *testing.T) {
	e := newEnv(t)
	for name, err := range map[string]error{
		"create": e.h.FederationCreate(e.ctx, &objects.Federation{}, nil),
		"update": e.h.FederationUpdate(e.ctx, &objects.Federation{}, false),
		"delete": e.h.FederationDelete(e.ctx, newUUID()),
	} {
		var ee *exception.Error
		if !errors.As(err, &ee) || ee.Module != exception.ModuleBuiltins || ee.Class != "NotImplementedError" ||
			ee.Message != "This feature is not yet implemented." {
			t.Errorf("federation_%s: %#v", name, err)
		}
	}
}

func TestPingConductorAnswersTrue(t *testing.T) {
	e := newEnv(t)
	if !e.h.PingConductor(e.ctx) {
		t.Error("ping answered false")
	}
}

// TestRotateCACertificateKeepsBothSetsUntilTheRotationIsRecorded: once the
// driver accepted the new CAs they are the cluster's; when the database is
// away at that moment, neither set is deleted, the new references are
// recorded as soon as it answers, and only then the old certificates go.
func TestRotateCACertificateKeepsBothSetsUntilTheRotationIsRecorded(t *testing.T) {
	e := newEnv(t)
	flaky := &flakyStore{Store: e.store}
	h := *e.h
	h.store = flaky
	e.drv.onCall = func(string) { flaky.failNext(3) }
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := h.RotateCACertificate(e.ctx, c); err == nil {
		t.Fatal("no error while the database is away")
	}
	e.certs.mu.Lock()
	deleted := slices.Clone(e.certs.deleted)
	e.certs.mu.Unlock()
	if len(deleted) != 0 {
		t.Fatalf("deleted %v before the new references were recorded", deleted)
	}
	h.WaitRetries()
	row := e.cluster(*c.UUID)
	if row.Status != objects.UpdateInProgress || objects.Deref(row.CACertRef) != "ca-1" || objects.Deref(row.MagnumCertRef) != "client-1" {
		t.Fatalf("row %s with refs %v %v, want UPDATE_IN_PROGRESS with the new ones", row.Status, objects.Deref(row.CACertRef),
			objects.Deref(row.MagnumCertRef))
	}
	e.certs.mu.Lock()
	deleted = slices.Clone(e.certs.deleted)
	e.certs.mu.Unlock()
	if !slices.Equal(deleted, []string{"ca-old", "client-old", "etcd-old", "fp-old"}) {
		t.Fatalf("deleted %v, want the old set once the new one is recorded", deleted)
	}
}

// TestRotateCACertificateGivenUpOnKeepsTheNewCerts: a driver call given up
// on at the deadline may still roll the new CAs out, so they are not
// deleted; the row keeps the old references.
func TestRotateCACertificateGivenUpOnKeepsTheNewCerts(t *testing.T) {
	e := newEnv(t)
	e.drv.hang["rotate_ca_certificate"] = true
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	if _, err := e.h.RotateCACertificate(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
	e.certs.mu.Lock()
	deleted := slices.Clone(e.certs.deleted)
	e.certs.mu.Unlock()
	if len(deleted) != 0 {
		t.Fatalf("deleted %v, want the new certificates kept", deleted)
	}
	row := e.cluster(*c.UUID)
	if row.Status != objects.UpdateFailed || objects.Deref(row.CACertRef) != "ca-old" {
		t.Fatalf("row %s with CA ref %v, want UPDATE_FAILED with the old one", row.Status, objects.Deref(row.CACertRef))
	}
}
