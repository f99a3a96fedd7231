package wiring

import (
	"context"
	"errors"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
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

type fakeNodeGroups struct {
	NodeGroupStore
	gotUUID string
	gotOpts db.ListOpts
	gotF    db.NodeGroupFilters
	ngs     []*objects.NodeGroup
	err     error
}

func (f *fakeNodeGroups) ListNodeGroups(_ context.Context, u string, o db.ListOpts, fl db.NodeGroupFilters) ([]*objects.NodeGroup, error) {
	f.gotUUID, f.gotOpts, f.gotF = u, o, fl
	return f.ngs, f.err
}

func TestStoreListsEveryNodeGroupUnfiltered(t *testing.T) {
	f := &fakeNodeGroups{ngs: []*objects.NodeGroup{{Name: "default-master"}, {Name: "default-worker"}}}
	got, err := Store{f}.ListClusterNodeGroups(context.Background(), "c-uuid")
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	if f.gotUUID != "c-uuid" || f.gotOpts != (db.ListOpts{}) || f.gotF.Name != nil || f.gotF.Role != nil || f.gotF.Status != nil || f.gotF.IsDefault != nil {
		t.Fatalf("called with %q %+v %+v", f.gotUUID, f.gotOpts, f.gotF)
	}
	f.err = errors.New("db down")
	if _, err := (Store{f}).ListClusterNodeGroups(context.Background(), "c-uuid"); !errors.Is(err, f.err) {
		t.Fatalf("error not passed through: %v", err)
	}
}
