package capi

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestClientCoreAppliesAndCleansUpSecrets exercises the client-go Core over
// the fake clientset (the test API server serves no Secrets).
func TestClientCoreAppliesAndCleansUpSecrets(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	core := NewCore(cs)
	if err := core.EnsureNamespace(ctx, "magnum-p", map[string]string{LabelProjectID: "p"}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "magnum-p", metav1.GetOptions{})
	if err != nil || ns.Labels[LabelProjectID] != "p" {
		t.Fatalf("namespace: %v %v", ns, err)
	}
	for _, name := range []string{"a-ca", "a-etcd"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "magnum-p", Labels: map[string]string{LabelClusterUUID: "a"}},
			Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
		if err := core.ApplySecret(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b-ca", Namespace: "magnum-p", Labels: map[string]string{LabelClusterUUID: "b"}}}
	if err := core.ApplySecret(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := core.ListSecrets(ctx, "magnum-p", LabelClusterUUID+"=a")
	if err != nil || len(got) != 2 || string(got[0].Data["tls.key"]) != "k" || got[0].Type != "cluster.x-k8s.io/secret" {
		t.Fatalf("list = %v, %v", got, err)
	}
	for _, s := range got {
		if err := core.DeleteSecret(ctx, "magnum-p", s.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := core.DeleteSecret(ctx, "magnum-p", "a-ca"); err != nil {
		t.Errorf("deleting a missing secret: %v", err)
	}
	if left, _ := core.ListSecrets(ctx, "magnum-p", ""); len(left) != 1 || left[0].Name != "b-ca" {
		t.Errorf("left = %v", left)
	}
}
