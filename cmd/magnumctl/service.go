package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/config"
)

func serviceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "service", Short: "Conductor services (GET /v1/mservices)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List magnum_service rows with their state computed as magnum-api does",
		Args:  args(0, 0),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			rows, err := classList[*objects.MagnumService](ctx, s, objects.NameMagnumService, "list", []any{}, map[string]any{})
			if err != nil {
				return err
			}
			cfg, err := config.Load(g.configFiles, g.configDirs)
			if err != nil {
				return err
			}
			now := time.Now().UTC()
			t := table{header: []string{"ID", "HOST", "BINARY", "STATE", "DISABLED", "REPORTS", "LAST SEEN UP"}}
			var list []map[string]any
			for _, r := range rows {
				state := serviceState(r, now, cfg.Default.ServiceDownTime)
				t.rows = append(t.rows, []string{fmt.Sprint(r.ID), cell(r.Host), cell(r.Binary), state,
					fmt.Sprint(r.Disabled), fmt.Sprint(r.ReportCount), cell(r.LastSeenUp)})
				m := fieldsOf(r)
				m["state"] = state
				list = append(list, m)
			}
			t.value = list
			return g.print(t)
		}),
	})
	return cmd
}

// serviceState is magnum-api's servicegroup rule: forced_down means down;
// otherwise up when the last heartbeat (last_seen_up, else updated_at, else
// created_at) is within service_down_time.
func serviceState(r *objects.MagnumService, now time.Time, downTime time.Duration) string {
	if r.ForcedDown {
		return "down"
	}
	last := r.LastSeenUp
	if last == nil {
		last = r.UpdatedAt
	}
	if last == nil {
		last = r.CreatedAt
	}
	if last == nil {
		return "down"
	}
	d := now.Sub(*last)
	if d < 0 {
		d = -d
	}
	if d <= downTime {
		return "up"
	}
	return "down"
}

func conductorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "conductor", Short: "The conductor itself"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ping",
		Short: "Call ping_conductor on the topic and report who answered",
		Args:  args(0, 0),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			start := time.Now()
			ok, err := s.api.PingConductor(ctx)
			if err != nil {
				return err
			}
			rtt := time.Since(start)
			return g.print(table{
				header: []string{"TOPIC", "ANSWER", "ROUND TRIP"},
				rows:   [][]string{{s.topic, fmt.Sprint(ok), rtt.Round(time.Microsecond).String()}},
				value:  map[string]any{"topic": s.topic, "answer": ok, "round_trip_seconds": rtt.Seconds()},
			})
		}),
	})
	return cmd
}
