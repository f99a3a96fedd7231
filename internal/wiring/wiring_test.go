package wiring

import (
	"context"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi"
)

type recordingCerts struct{ types []string }

func (r *recordingCerts) CAKeyPair(_ context.Context, _ *objects.Cluster, t string) ([]byte, []byte, error) {
	r.types = append(r.types, t)
	return []byte("cert:" + t), []byte("key:" + t), nil
}

func TestCertSourceMapsKindsToMagnumCACertTypes(t *testing.T) {
	for _, tc := range []struct {
		kind capi.CAKind
		want string
	}{
		{capi.CAKubernetes, ""},
		{capi.CAEtcd, "etcd"},
		{capi.CAFrontProxy, "front_proxy"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			rec := &recordingCerts{}
			cert, key, err := CertSource{Certs: rec}.CAKeyPair(context.Background(), &objects.Cluster{}, tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.types) != 1 || rec.types[0] != tc.want || string(cert) != "cert:"+tc.want || string(key) != "key:"+tc.want {
				t.Fatalf("asked %q, got %s / %s", rec.types, cert, key)
			}
		})
	}
	rec := &recordingCerts{}
	if _, _, err := (CertSource{Certs: rec}).CAKeyPair(context.Background(), &objects.Cluster{}, "sa"); err == nil || len(rec.types) != 0 {
		t.Fatalf("unknown kind: %v, %v", err, rec.types)
	}
}
