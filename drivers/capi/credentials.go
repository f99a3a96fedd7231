package capi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

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
	r, ok := refOf(c)
	if !ok {
		return fmt.Errorf("capi: cluster %s has no stack_id", deref(c.UUID))
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
