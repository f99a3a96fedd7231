package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
)

// clusterConfigCmd is "openstack coe cluster config": a kubeconfig for the
// cluster's API with the cluster's CA and an admin client certificate the
// conductor signs for a key made here (python-magnumclient's
// ConfigCluster and config_cluster).
func clusterConfigCmd(g *globals) *cobra.Command {
	var dir string
	var force, outputCerts bool
	c := &cobra.Command{
		Use:   "config CLUSTER [--dir DIR] [--force]",
		Short: "Write a kubeconfig for the cluster, as openstack coe cluster config does",
		Long: `Write DIR/config (mode 0600), a kubeconfig for the cluster's API address with the
cluster's CA (get_ca_certificate) and a client certificate for "admin" in
"system:masters", signed by the cluster's CA (sign_certificate) for an RSA key
made here; the key never leaves this machine. Prints the line that points
KUBECONFIG at the file. An existing file is kept unless --force.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return usagef("--dir %s: %v", dir, err)
			}
			if st, err := os.Stat(abs); err != nil || !st.IsDir() {
				return usagef("--dir %s is not a directory", dir)
			}
			files := []string{filepath.Join(abs, "config")}
			if outputCerts {
				for _, k := range []string{"key", "cert", "ca"} {
					files = append(files, filepath.Join(abs, k+".pem"))
				}
			}
			if !force {
				for _, f := range files {
					if _, err := os.Lstat(f); err == nil {
						return usagef("file %s exists, aborting (--force overwrites it)", f)
					} else if !errors.Is(err, fs.ErrNotExist) {
						return usagef("%v", err)
					}
				}
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				if objects.Deref(cl.APIAddress) == "" {
					_, _ = fmt.Fprintf(g.errOut, "magnumctl: warning: the API address of %s is not known yet\n", clusterLabel(cl))
				}
				ct, err := getTemplate(ctx, s, objects.Deref(cl.ClusterTemplateID))
				if err != nil {
					return err
				}
				if ct.Coe != "kubernetes" {
					return usagef("%s is a %s cluster: magnumctl writes kubeconfigs only", clusterLabel(cl), ct.Coe)
				}
				var certs map[string]string
				if !ct.TLSDisabled {
					if certs, err = clusterCredentials(ctx, g, s, cl); err != nil {
						return err
					}
				}
				if err := writeFile(files[0], kubeconfig(cl, certs), 0o600); err != nil {
					return err
				}
				if outputCerts && certs != nil {
					for i, k := range []string{"key", "cert", "ca"} {
						if err := writeFile(files[1+i], certs[k], 0o600); err != nil {
							return err
						}
					}
				}
				line := "export KUBECONFIG=" + files[0]
				if strings.Contains(g.getenv("SHELL"), "csh") {
					line = "setenv KUBECONFIG " + files[0]
				}
				_, err = fmt.Fprintln(g.out, line)
				return err
			})(cmd, a)
		},
	}
	c.Flags().StringVar(&dir, "dir", ".", "directory to write the config (and certificates) to")
	c.Flags().BoolVar(&force, "force", false, "overwrite files that exist")
	c.Flags().BoolVar(&outputCerts, "output-certs", false, "also write key.pem, cert.pem and ca.pem")
	return c
}

// clusterCredentials returns the cluster's CA ("ca") and, for a key made
// here ("key"), the client certificate the conductor signs ("cert"), all
// PEM.
func clusterCredentials(ctx context.Context, g *globals, s *session, cl *objects.Cluster) (map[string]string, error) {
	var raw json.RawMessage
	if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) (err error) {
		raw, err = s.api.GetCACertificate(ctx, p[0], nil)
		return err
	}); err != nil {
		return nil, err
	}
	ca, err := objects.DecodeAs[*objects.Certificate](raw)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
	}, key)
	if err != nil {
		return nil, err
	}
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))
	if err := s.send([]objects.Object{cl, certificateFor(g, cl, csr)}, func(p []json.RawMessage) (err error) {
		raw, err = s.api.SignCertificate(ctx, p[0], p[1])
		return err
	}); err != nil {
		return nil, err
	}
	signed, err := objects.DecodeAs[*objects.Certificate](raw)
	if err != nil {
		return nil, err
	}
	if objects.Deref(ca.PEM) == "" || objects.Deref(signed.PEM) == "" {
		return nil, fmt.Errorf("the conductor returned no certificate for %s", clusterLabel(cl))
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return map[string]string{"ca": objects.Deref(ca.PEM), "cert": objects.Deref(signed.PEM), "key": string(keyPEM)}, nil
}

// kubeconfig is the file python-magnumclient writes: without TLS (certs
// nil) the server alone; with it, the CA and the admin client certificate
// and key.
func kubeconfig(cl *objects.Cluster, certs map[string]string) string {
	name, server := objects.Deref(cl.Name), objects.Deref(cl.APIAddress)
	if certs == nil {
		return fmt.Sprintf("apiVersion: v1\nclusters:\n- cluster:\n    server: %[2]s\n  name: %[1]s\ncontexts:\n- context:\n"+
			"    cluster: %[1]s\n    user: %[1]s\n  name: %[1]s\ncurrent-context: %[1]s\nkind: Config\npreferences: {}\n"+
			"users:\n- name: %[1]s\n", name, server)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return fmt.Sprintf("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %[3]s\n    server: %[2]s\n"+
		"  name: %[1]s\ncontexts:\n- context:\n    cluster: %[1]s\n    user: admin\n  name: default\n"+
		"current-context: default\nkind: Config\npreferences: {}\nusers:\n- name: admin\n  user:\n"+
		"    client-certificate-data: %[4]s\n    client-key-data: %[5]s\n",
		name, server, b64(certs["ca"]), b64(certs["cert"]), b64(certs["key"]))
}

// writeFile replaces path with data, readable by its owner alone: the
// new content goes to a temporary file in the same directory first.
func writeFile(path, data string, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
