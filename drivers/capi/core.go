package capi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// clientCore implements Core with a typed clientset.
type clientCore struct{ cs kubernetes.Interface }

// NewCore returns the client-go implementation of Core.
func NewCore(cs kubernetes.Interface) Core { return clientCore{cs: cs} }

func (c clientCore) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	ac := corev1ac.Namespace(name).WithLabels(labels)
	_, err := c.cs.CoreV1().Namespaces().Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("capi: apply namespace %s: %w", name, err)
	}
	return nil
}

func (c clientCore) ApplySecret(ctx context.Context, s *corev1.Secret) error {
	ac := corev1ac.Secret(s.Name, s.Namespace).WithLabels(s.Labels).WithAnnotations(s.Annotations).
		WithType(s.Type).WithData(s.Data)
	_, err := c.cs.CoreV1().Secrets(s.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("capi: apply secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (c clientCore) ListSecrets(ctx context.Context, ns, selector string) ([]corev1.Secret, error) {
	l, err := c.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("capi: list secrets in %s: %w", ns, err)
	}
	return l.Items, nil
}

func (c clientCore) DeleteSecret(ctx context.Context, ns, name string) error {
	err := c.cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: delete secret %s/%s: %w", ns, name, err)
	}
	return nil
}
