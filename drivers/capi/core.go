package capi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Core resources, reached through the dynamic client: the typed clientset
// would link every Kubernetes API group (and its package initialisers) into
// the conductor, about 20 MiB of idle RSS for two resources.
var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrSecret    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// clientCore implements Core with the dynamic client.
type clientCore struct{ dyn dynamic.Interface }

// NewCore returns the client-go implementation of Core.
func NewCore(dyn dynamic.Interface) Core { return clientCore{dyn: dyn} }

func (c clientCore) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	u, err := toUnstructured(ns)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(gvrNamespace).Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("capi: apply namespace %s: %w", name, err)
	}
	return nil
}

func (c clientCore) ApplySecret(ctx context.Context, s *corev1.Secret) error {
	// Only the fields the driver owns go into the apply configuration.
	ac := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: s.Labels, Annotations: s.Annotations},
		Type:       s.Type, Data: s.Data}
	u, err := toUnstructured(ac)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(gvrSecret).Namespace(s.Namespace).Apply(ctx, s.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("capi: apply secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (c clientCore) ListSecrets(ctx context.Context, ns, selector string) ([]corev1.Secret, error) {
	l, err := c.dyn.Resource(gvrSecret).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("capi: list secrets in %s: %w", ns, err)
	}
	out := make([]corev1.Secret, len(l.Items))
	for i := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("capi: decode secret %s/%s: %w", ns, l.Items[i].GetName(), err)
		}
	}
	return out, nil
}

func (c clientCore) DeleteSecret(ctx context.Context, ns, name string) error {
	err := c.dyn.Resource(gvrSecret).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: delete secret %s/%s: %w", ns, name, err)
	}
	return nil
}
