package capi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// credentialRefOf is the credential a cloud-credentials Secret names ("" id
// when it names none).
func credentialRefOf(s corev1.Secret) CredentialRef {
	return CredentialRef{ID: s.Annotations[annotationCredentialID], UserID: s.Annotations[annotationCredentialUserID]}
}

// RotateCredential implements drivers.CredentialRotator: issue a new
// credential, write it to a new Secret, point the cluster at it, verify it,
// then revoke and delete the old one. Any failure before the switch-over
// is complete rolls back to the old Secret.
func (d *Driver) RotateCredential(ctx context.Context, req drivers.ClusterRequest) error {
	if err := d.usable(); err != nil {
		return err
	}
	c := req.Cluster
	r, err := mustRef(c)
	if err != nil {
		return err
	}
	current, err := d.liveCluster(ctx, r)
	if err != nil {
		return fmt.Errorf("capi: read Cluster %s: %w", r, err)
	}
	oldName := variableString(current, "identityRefName")
	if oldName == "" {
		oldName = credentialSecretName(r.Name)
	}
	oldSecrets, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err != nil {
		return err
	}
	cred, err := d.deps.Credentials.Issue(ctx, c)
	if err != nil {
		return fmt.Errorf("capi: issue cloud credential: %w", err)
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	newName := credentialSecretName(r.Name) + "-" + hex.EncodeToString(suffix)
	undo := func(cause error) error {
		errs := []error{cause}
		if err := d.reapply(ctx, req, nil, applyOptions{identityRef: oldName}); err != nil {
			errs = append(errs, fmt.Errorf("restore identity %s: %w", oldName, err))
		}
		errs = append(errs, d.deps.Core.DeleteSecret(ctx, r.Namespace, newName), d.deps.Credentials.Revoke(ctx, c, cred.Ref()))
		return errors.Join(errs...)
	}
	if err := d.deps.Credentials.Verify(ctx, cred); err != nil {
		return errors.Join(fmt.Errorf("capi: new credential does not authenticate: %w", err), d.deps.Credentials.Revoke(ctx, c, cred.Ref()))
	}
	if err := d.deps.Core.ApplySecret(ctx, d.credentialSecret(c, r, newName, cred)); err != nil {
		return errors.Join(err, d.deps.Credentials.Revoke(ctx, c, cred.Ref()))
	}
	if err := d.reapply(ctx, req, nil, applyOptions{identityRef: newName}); err != nil {
		return undo(err)
	}
	var errs []error
	for _, s := range oldSecrets {
		if s.Name == newName {
			continue
		}
		if ref := credentialRefOf(s); ref.ID != "" {
			if err := d.deps.Credentials.Revoke(ctx, c, ref); err != nil {
				errs = append(errs, fmt.Errorf("revoke old credential: %w", err))
				continue
			}
		}
		errs = append(errs, d.deps.Core.DeleteSecret(ctx, r.Namespace, s.Name))
	}
	d.log.Info("cloud credential rotated", append(d.logAttrs(ctx, c), "secret", newName)...)
	return errors.Join(errs...)
}

func credentialSecretName(name string) string { return name + "-cloud-credentials" }

// ensureCredential writes the cluster's cloud-credentials Secret with a
// new credential, unless one already names a credential: a create called
// again (a lost reply, a resumed operation) must not issue a second one,
// whose predecessor no Secret would name any more, never to be revoked.
func (d *Driver) ensureCredential(ctx context.Context, c *objects.Cluster, r ref, log *slog.Logger) error {
	existing, err := d.deps.Core.ListSecrets(ctx, r.Namespace, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if err != nil {
		return err
	}
	for _, s := range existing {
		if credentialRefOf(s).ID != "" {
			return nil
		}
	}
	cred, err := d.deps.Credentials.Issue(ctx, c)
	if err != nil {
		return fmt.Errorf("capi: issue cloud credential: %w", err)
	}
	if err := d.deps.Core.ApplySecret(ctx, d.credentialSecret(c, r, credentialSecretName(r.Name), cred)); err != nil {
		// No Secret names the credential, so the clean-up at deletion
		// would never find it: revoke it now.
		if rerr := d.deps.Credentials.Revoke(context.WithoutCancel(ctx), c, cred.Ref()); rerr != nil {
			log.Error("cannot revoke the cloud credential whose Secret was not written", "credential_id", cred.ID,
				"error", rerr.Error())
		}
		return err
	}
	return nil
}

// credentialSecret renders the CAPO identity Secret (clouds.yaml, cloud
// "openstack", application credential).
func (d *Driver) credentialSecret(c *objects.Cluster, r ref, name string, cred Credential) *corev1.Secret {
	var b strings.Builder
	b.WriteString("clouds:\n  openstack:\n    auth:\n")
	fmt.Fprintf(&b, "      auth_url: %q\n      application_credential_id: %q\n      application_credential_secret: %q\n",
		cred.AuthURL, cred.ID, cred.Secret)
	fmt.Fprintf(&b, "    auth_type: v3applicationcredential\n    interface: %q\n    identity_api_version: 3\n", d.opts.CloudInterface)
	if d.opts.CloudRegion != "" {
		fmt.Fprintf(&b, "    region_name: %q\n", d.opts.CloudRegion)
	}
	data := map[string][]byte{"clouds.yaml": []byte(b.String())}
	if d.opts.CloudCACert != "" {
		data["cacert"] = []byte(d.opts.CloudCACert)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels:      mapWith(ownerLabels(c), map[string]string{clusterv1.ClusterNameLabel: r.Name, LabelSecretKind: "cloud-credentials"}),
			Annotations: credentialAnnotations(cred)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// credentialAnnotations record on its Secret which credential it holds and
// whose it is, so that it is revoked under that user.
func credentialAnnotations(cred Credential) map[string]string {
	a := map[string]string{annotationCredentialID: cred.ID}
	if cred.UserID != "" {
		a[annotationCredentialUserID] = cred.UserID
	}
	return a
}

// RotateCACertificate implements drivers.CARotator: Cluster API cannot
// roll out new cluster CAs (cluster-api#7721).
func (d *Driver) RotateCACertificate(context.Context, drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, exception.ClassNotSupported.WithMessage(
		"Rotating the cluster CA is not supported by the Cluster API driver: Cluster API cannot roll out new cluster CAs.",
		map[string]any{"operation": "rotate_ca_certificate"})
}
