package certmanager

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// BenchmarkClusterCreateCertificates measures the certificate work of one
// cluster_create (3 CAs + client certificate: keys, signing, PBES2
// encryption, storing in an in-memory backend) with a warm key pool and
// without a pool, and reports the median in milliseconds. Python's
// generate_certificates_to_cluster takes ~1050 ms for the same work.
//
//	go test -run '^$' -bench ClusterCreate ./certmanager/
func BenchmarkClusterCreateCertificates(b *testing.B) {
	for _, tc := range []struct {
		name string
		pool int
	}{{"warm_pool", 4}, {"no_pool", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			m := NewWithBackend(Options{KeyPoolSize: tc.pool}, newMemBackend(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			var took []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tc.pool > 0 {
					b.StopTimer()
					if err := m.Pool().Fill(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				start := time.Now()
				if err := m.GenerateForCluster(ctx, testCluster(fmt.Sprintf("bench-%d", i))); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			median := float64(took[len(took)/2].Microseconds()) / 1000
			b.ReportMetric(median, "median_ms")
			b.Logf("%s: median %.1f ms over %d cluster creates (min %.1f ms, max %.1f ms)", tc.name, median, len(took),
				float64(took[0].Microseconds())/1000, float64(took[len(took)-1].Microseconds())/1000)
		})
	}
}
