package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
)

func caCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "ca", Short: "Cluster certificate authorities"}

	var caType string
	show := &cobra.Command{
		Use: "show CLUSTER", Short: "Print a cluster CA certificate (get_ca_certificate)", Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			var t *string
			if caType != "" {
				t = &caType
			}
			var raw json.RawMessage
			if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) (err error) {
				raw, err = s.api.GetCACertificate(ctx, p[0], t)
				return err
			}); err != nil {
				return err
			}
			return g.printCert(raw)
		}),
	}
	show.Flags().StringVar(&caType, "type", "", "which CA: empty (Kubernetes), etcd or front_proxy")

	var csrFile, signType string
	sign := &cobra.Command{
		Use: "sign CLUSTER", Short: "Sign a CSR with a cluster CA (sign_certificate)", Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			csr, err := os.ReadFile(csrFile)
			if err != nil {
				return &usageError{fmt.Sprintf("--csr: %v", err)}
			}
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			cert := certificateFor(g, cl, string(csr))
			if signType != "" {
				cert.CACertType = objects.Str(signType)
			}
			var raw json.RawMessage
			if err := s.send([]objects.Object{cl, cert}, func(p []json.RawMessage) (err error) {
				raw, err = s.api.SignCertificate(ctx, p[0], p[1])
				return err
			}); err != nil {
				return err
			}
			return g.printCert(raw)
		}),
	}
	sign.Flags().StringVar(&csrFile, "csr", "", "PEM file of the certificate signing request")
	sign.Flags().StringVar(&signType, "type", "", "which CA signs: empty (Kubernetes), etcd or front_proxy")
	_ = sign.MarkFlagRequired("csr")

	var rw waitFlags
	rotate := &cobra.Command{
		Use: "rotate CLUSTER", Short: "Regenerate a cluster's CAs and have the driver roll them out (rotate_ca_certificate)", Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := rw.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().RotateCACertificate(ctx, p[0])
					return err
				}); err != nil {
					return err
				}
				out, err := decodeCluster(raw, cl)
				if err != nil {
					return err
				}
				if rw.wait {
					return g.wait(ctx, g.clusterOperation(s, out, "UPDATE", rw))
				}
				return g.print(showTable(out, "status_reason"))
			})(cmd, a)
		},
	}
	rw.register(rotate.Flags(), "the roll-out is UPDATE_COMPLETE")
	cmd.AddCommand(show, sign, rotate)
	return cmd
}

func (g *globals) printCert(raw json.RawMessage) error {
	c, err := objects.DecodeAs[*objects.Certificate](raw)
	if err != nil {
		return err
	}
	if g.output == "json" {
		return g.print(table{value: fieldsOf(c)})
	}
	_, err = fmt.Fprintln(g.out, objects.Deref(c.PEM))
	return err
}

// certificateFor is the Certificate magnum-api's POST /v1/certificates
// sends for a CSR: the request's project and user (the cluster's without
// them), the cluster's uuid.
func certificateFor(g *globals, cl *objects.Cluster, csr string) *objects.Certificate {
	project, user := g.requestProject()
	cert := &objects.Certificate{ProjectID: optional(project), UserID: optional(user), ClusterUUID: cl.UUID, CSR: objects.Str(csr)}
	if project == "" {
		cert.ProjectID, cert.UserID = cl.ProjectID, cl.UserID
	}
	return cert
}
