package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
)

func credentialCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "credential", Short: "The OpenStack credentials of clusters"}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate CLUSTER",
		Short: "Replace a cluster's OpenStack credential (credential_rotate, PATCH /v1/credentials/CLUSTER, API 1.12)",
		Long: `Have the cluster's driver replace the OpenStack credential its cluster uses (the
Cluster API driver: a new application credential of the requesting user, issued
with the request's token, then the old one revoked). It needs Keystone auth for
drivers that issue credentials; the cluster's status does not change.`,
		Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) error {
				return s.change().CredentialRotate(ctx, p[0])
			}); err != nil {
				return err
			}
			return g.print(table{header: []string{"UUID", "NAME", "CREDENTIAL ROTATED"},
				rows:  [][]string{{cell(cl.UUID), cell(cl.Name), "true"}},
				value: map[string]any{"uuid": objects.Deref(cl.UUID), "name": objects.Deref(cl.Name), "credential_rotated": true}})
		}),
	})
	return cmd
}
