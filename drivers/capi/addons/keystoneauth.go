package addons

import (
	"encoding/json"
	"fmt"
)

// KeystoneAuth is the k8s-keystone-auth add-on: the webhook that lets the
// users of the cluster's project in with a Keystone token (authentication)
// and decides what they may do by their Keystone roles (authorization),
// as Magnum's keystone_auth_enabled label does. It has no upstream chart,
// so its objects are built here.
//
// It runs on every control-plane node (hostNetwork, a DaemonSet) and
// listens on 127.0.0.1:8443 only: the API server of the same node calls
// https://127.0.0.1:8443/webhook (the webhook configuration and the API
// server flags are the ClusterClass's). It serves with the API server's
// own certificate (/etc/kubernetes/pki/apiserver.crt), which the API
// server does not verify for 127.0.0.1 (insecure-skip-tls-verify).
const KeystoneAuth = "k8s-keystone-auth"

const (
	// KeystoneAuthListen and KeystoneAuthPath are where the webhook serves;
	// the ClusterClass's webhook kubeconfig must name the same.
	KeystoneAuthListen = "127.0.0.1:8443"
	KeystoneAuthPath   = "/webhook"
	keystoneAuthPolicy = "k8s-keystone-auth-policy"
	keystoneAuthImage  = "registry.k8s.io/provider-os/k8s-keystone-auth"
)

// KeystoneAuthTags are the k8s-keystone-auth image tags per Kubernetes
// minor (cloud-provider-openstack releases follow the minor); the
// cloud_provider_tag label overrides.
var KeystoneAuthTags = map[string]string{
	"1.31": "v1.31.3", "1.32": "v1.32.0", "1.33": "v1.33.1", "1.34": "v1.34.1",
}

// keystoneAuthTag is the image tag for cl.
func keystoneAuthTag(cl Cluster) string {
	if t := cl.Labels.String("cloud_provider_tag"); t != "" {
		return t
	}
	_, minor, ok := minorOf(cl.KubeVersion)
	if !ok {
		return ""
	}
	best, pick := -1, ""
	oldest, first := 1<<30, ""
	for k, tag := range KeystoneAuthTags {
		_, m, ok := minorOf("v" + k + ".0")
		if !ok {
			continue
		}
		if m <= minor && m > best {
			best, pick = m, tag
		}
		if m < oldest {
			oldest, first = m, tag
		}
	}
	if pick == "" {
		return first
	}
	return pick
}

// KeystoneAuthPolicy is Magnum's default k8s-keystone-auth policy for the
// project: users with the Keystone role "member" in the cluster's project
// may list pods, services, deployments and persistent volume claims in
// the namespace default. Everything else is left to RBAC (the webhook
// authorizer comes after Node and RBAC): the cluster's admin grants more
// with RoleBindings to Keystone users (user names) or to the groups of
// their project (the project ID), or edits the policy ConfigMap.
func KeystoneAuthPolicy(projectID string) string {
	p := []map[string]any{{
		"resource": map[string]any{
			"verbs": []string{"list"}, "resources": []string{"pods", "services", "deployments", "pvc"},
			"version": "*", "namespace": "default",
		},
		"match": []map[string]any{
			{"type": "role", "values": []string{"member"}},
			{"type": "project", "values": []string{projectID}},
		},
	}}
	b, _ := json.Marshal(p)
	return string(b)
}

// keystoneAuthObjects are the k8s-keystone-auth objects of cl (all in
// kube-system).
func keystoneAuthObjects(cl Cluster) ([]Object, error) {
	if cl.Credential.AuthURL == "" {
		return nil, fmt.Errorf("addons: %s: the cluster's credential has no Keystone URL", KeystoneAuth)
	}
	tag := keystoneAuthTag(cl)
	if tag == "" {
		return nil, fmt.Errorf("addons: %s: no image tag for Kubernetes %s", KeystoneAuth, cl.KubeVersion)
	}
	const ns = "kube-system"
	labels := map[string]any{"k8s-app": KeystoneAuth}
	meta := func(name string, namespaced bool) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		if namespaced {
			m["namespace"] = ns
		}
		return m
	}
	args := []any{
		"--listen=" + KeystoneAuthListen,
		"--keystone-url=" + cl.Credential.AuthURL,
		"--policy-configmap-name=" + keystoneAuthPolicy,
		"--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
		"--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
	}
	mounts := []any{map[string]any{"name": "pki", "mountPath": "/etc/kubernetes/pki", "readOnly": true}}
	volumes := []any{map[string]any{"name": "pki", "hostPath": map[string]any{"path": "/etc/kubernetes/pki", "type": "Directory"}}}
	if cl.Credential.CACert != "" {
		// The cloud's CA, from the cloud-config Secret.
		args = append(args, "--keystone-ca-file=/etc/config/ca.crt")
		mounts = append(mounts, map[string]any{"name": "cloud-config", "mountPath": "/etc/config", "readOnly": true})
		volumes = append(volumes, map[string]any{"name": "cloud-config", "secret": map[string]any{
			"secretName": cloudConfigName, "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}})
	}
	return []Object{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(KeystoneAuth, true)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(KeystoneAuth, false),
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(KeystoneAuth, false),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": KeystoneAuth},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": KeystoneAuth, "namespace": ns}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(keystoneAuthPolicy, true),
			"data": map[string]any{"policies": KeystoneAuthPolicy(cl.ProjectID)}},
		{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(KeystoneAuth, true), "spec": map[string]any{
			"selector":       map[string]any{"matchLabels": labels},
			"updateStrategy": map[string]any{"type": "RollingUpdate"},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"serviceAccountName": KeystoneAuth,
					"hostNetwork":        true,
					"dnsPolicy":          "ClusterFirstWithHostNet",
					"priorityClassName":  "system-cluster-critical",
					"nodeSelector":       map[string]any{"node-role.kubernetes.io/control-plane": ""},
					"tolerations": []any{
						map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
						map[string]any{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"},
						map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
					},
					"securityContext": map[string]any{"runAsUser": int64(0)},
					"containers": []any{map[string]any{
						"name":         KeystoneAuth,
						"image":        keystoneAuthImage + ":" + tag,
						"args":         args,
						"volumeMounts": mounts,
						"resources":    map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
					}},
					"volumes": volumes,
				},
			},
		}},
	}, nil
}
