package capi

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// TestClientCoreAppliesAndCleansUpSecrets exercises the client-go Core
// against the test kube-apiserver: server-side apply of a namespace and of
// Secrets, label-selected lists, deletes, and the API server's own rules
// (no Secret in a namespace that does not exist).
func TestClientCoreAppliesAndCleansUpSecrets(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dyn: dyn}
	core := NewCore(dyn)
	ns := "magnum-core-" + randHex(6)

	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}, Data: map[string][]byte{"k": []byte("v")}}
	if err := core.ApplySecret(ctx, orphan); err == nil || !apierrors.IsNotFound(err) {
		t.Errorf("secret in a missing namespace: err = %v, want NotFound", err)
	}

	if err := core.EnsureNamespace(ctx, ns, map[string]string{LabelProjectID: "p"}); err != nil {
		t.Fatal(err)
	}
	if got := e.namespace(t, ns); got == nil || got.Labels[LabelProjectID] != "p" || !appliedBy(got, FieldManager) {
		t.Fatalf("namespace: %+v", got)
	}
	// Applying again is harmless and takes the new labels.
	if err := core.EnsureNamespace(ctx, ns, map[string]string{LabelProjectID: "q"}); err != nil {
		t.Fatal(err)
	}
	if got := e.namespace(t, ns); got.Labels[LabelProjectID] != "q" {
		t.Errorf("namespace labels after re-apply: %v", got.Labels)
	}

	for _, name := range []string{"a-ca", "a-etcd"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelClusterUUID: "a"},
			Annotations: map[string]string{annotationCredentialID: "id-" + name}},
			Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
		if err := core.ApplySecret(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// A second apply replaces the data the driver owns.
	again := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a-ca", Namespace: ns, Labels: map[string]string{LabelClusterUUID: "a"}},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"tls.crt": []byte("c2"), "tls.key": []byte("k2")}}
	if err := core.ApplySecret(ctx, again); err != nil {
		t.Fatal(err)
	}
	if s := e.secret(t, ns, "a-ca"); s == nil || string(s.Data["tls.crt"]) != "c2" || len(s.Annotations) != 0 || !appliedBy(s, FieldManager) {
		t.Errorf("a-ca after re-apply: %+v", s)
	}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b-ca", Namespace: ns, Labels: map[string]string{LabelClusterUUID: "b"}}}
	if err := core.ApplySecret(ctx, other); err != nil {
		t.Fatal(err)
	}
	// A type is immutable: the API server refuses to change it.
	if err := core.ApplySecret(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b-ca", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing a Secret's type: err = %v", err)
	}

	got, err := core.ListSecrets(ctx, ns, LabelClusterUUID+"=a")
	if err != nil || len(got) != 2 || got[0].Name != "a-ca" || string(got[0].Data["tls.key"]) != "k2" || got[0].Type != "cluster.x-k8s.io/secret" ||
		got[1].Name != "a-etcd" || got[1].Annotations[annotationCredentialID] != "id-a-etcd" {
		t.Fatalf("list = %+v, %v", got, err)
	}
	for _, s := range got {
		if err := core.DeleteSecret(ctx, ns, s.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := core.DeleteSecret(ctx, ns, "a-ca"); err != nil {
		t.Errorf("deleting a missing secret: %v", err)
	}
	if left := e.secretNames(t, ns, ""); strings.Join(left, ",") != "b-ca" {
		t.Errorf("left = %v", left)
	}
	if _, err := core.ListSecrets(ctx, ns, "not a selector!"); err == nil {
		t.Error("a bad selector was accepted")
	}
}
