package conductor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
)

// vectorNotification is one recorded notification of testdata/*.json.
type vectorNotification struct {
	Check   string `json:"check"`
	Message struct {
		EventType string          `json:"event_type"`
		Priority  string          `json:"priority"`
		Payload   json.RawMessage `json:"payload"`
	} `json:"message"`
}

func loadVectors(t *testing.T, name string) []vectorNotification {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Notifications []vectorNotification `json:"notifications"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Notifications) == 0 {
		t.Fatalf("%s: no notifications", name)
	}
	return v.Notifications
}

// orderedKeys returns every object's keys in document order, by JSON path.
func orderedKeys(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			out[path] = []string{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				out[path] = append(out[path], key)
				if err := walk(path + "/" + key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(path + "/[]"); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clusterFromContent rebuilds the cluster a recorded payload describes.
func clusterFromContent(t *testing.T, target map[string]any) (*objects.Cluster, []*objects.NodeGroup) {
	t.Helper()
	content := target["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
	str := func(k string) *string {
		if s, ok := content[k].(string); ok {
			return &s
		}
		return nil
	}
	num := func(k string) *int64 {
		if f, ok := content[k].(float64); ok {
			return objects.Int(int64(f))
		}
		return nil
	}
	tm := func(k string) *time.Time {
		s, ok := content[k].(string)
		if !ok {
			return nil
		}
		v, err := time.Parse(contentTimeFormat, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	labels := map[string]string{}
	for k, v := range content["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	c := &objects.Cluster{
		UUID: objects.Str(target["id"].(string)), Name: objects.Str(target["name"].(string)),
		Status: objects.Deref(str("status")), StatusReason: str("status_reason"), ProjectID: str("project_id"),
		CreatedAt: tm("created_at"), UpdatedAt: tm("updated_at"), ClusterTemplateID: str("cluster_template_id"),
		Keypair: str("keypair"), DockerVolumeSize: num("docker_volume_size:"), Labels: labels,
		MasterFlavorID: str("master_flavor_id"), FlavorID: str("flavor_id"), StackID: str("stack_id"),
		HealthStatus: objects.Deref(str("health_status")), CreateTimeout: num("create_timeout"),
		APIAddress: str("api_address"), DiscoveryURL: str("discovery_url"),
	}
	ngs := []*objects.NodeGroup{
		{Role: objects.RoleMaster, NodeCount: int64(content["master_count"].(float64))},
		{Role: objects.RoleWorker, NodeCount: int64(content["node_count"].(float64))},
	}
	return c, ngs
}

var (
	cadfIDPattern   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	eventTimeFormat = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+0000$`)
)

func TestPayloadMatchesRecordedVectors(t *testing.T) {
	for _, file := range []string{"notification_cluster_create.json", "notification_cluster_update.json", "notification_cluster_delete.json"} {
		for _, v := range loadVectors(t, file) {
			t.Run(file+"/"+v.Check+"/"+v.Message.Priority, func(t *testing.T) {
				var want map[string]any
				if err := json.Unmarshal(v.Message.Payload, &want); err != nil {
					t.Fatal(err)
				}
				initiator := want["initiator"].(map[string]any)
				ctx := request.With(context.Background(), &request.Context{
					UserID: initiator["user_id"].(string), ProjectID: initiator["project_id"].(string),
					RequestID: "req-x", AuthToken: "secret-token",
				})
				c, ngs := clusterFromContent(t, want["target"].(map[string]any))
				n := NewNotifications(nil, nil, "openstack", discardLog())
				fixed, _ := time.Parse(cadfTimeFormat, want["eventTime"].(string))
				n.now = func() time.Time { return fixed }

				raw, err := json.Marshal(n.Payload(ctx, want["action"].(string), want["outcome"].(string), c, ngs))
				if err != nil {
					t.Fatal(err)
				}
				var got map[string]any
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				for _, m := range []map[string]any{got, want} {
					for _, p := range []struct {
						obj map[string]any
					}{{m}, {m["observer"].(map[string]any)}, {m["initiator"].(map[string]any)}} {
						id, _ := p.obj["id"].(string)
						if p.obj["id"] == nil || !cadfIDPattern.MatchString(id) {
							t.Errorf("id %v is not a uuid5", p.obj["id"])
						}
						p.obj["id"] = "<id>"
					}
				}
				if !eventTimeFormat.MatchString(got["eventTime"].(string)) {
					t.Errorf("eventTime %q", got["eventTime"])
				}
				if !reflect.DeepEqual(got, want) {
					gb, _ := json.MarshalIndent(got, "", " ")
					wb, _ := json.MarshalIndent(want, "", " ")
					t.Fatalf("payload differs\n got: %s\nwant: %s", gb, wb)
				}
				if g, w := orderedKeys(t, raw), orderedKeys(t, v.Message.Payload); !reflect.DeepEqual(g, w) {
					t.Errorf("key order differs\n got: %v\nwant: %v", g, w)
				}
				if bytes.Contains(raw, []byte("secret-token")) {
					t.Error("payload carries the auth token")
				}
			})
		}
	}
}

func TestAuditNamespaceDerivesIDs(t *testing.T) {
	// AUDIT_NS = uuid.UUID(sha256("openstack").hexdigest()[:32]), computed
	// with Python: uuid.UUID(hashlib.sha256(b"openstack").hexdigest()[:32]).
	n := NewNotifications(nil, nil, "openstack", discardLog())
	if got, want := n.ns.String(), "d460a96a-a6b4-9db0-52ef-9f1aac13d33e"; got != want {
		t.Fatalf("AUDIT_NS = %s, want %s", got, want)
	}
	plain := NewNotifications(nil, nil, "", discardLog())
	if id := plain.id(); uuid.MustParse(id).Version() != 4 {
		t.Fatalf("without a namespace ids are uuid4, got %s", id)
	}
}

func TestPayloadInitiatorAndTargetEdgeCases(t *testing.T) {
	n := NewNotifications(nil, nil, "openstack", discardLog())
	// Admin context (periodic tasks): no ids on the initiator.
	raw, _ := json.Marshal(n.Payload(context.Background(), ActionUpdate, OutcomeSuccess, nil, nil))
	var got map[string]any
	_ = json.Unmarshal(raw, &got)
	if ini := got["initiator"].(map[string]any); len(ini) != 2 {
		t.Errorf("initiator without ids has keys %v", ini)
	}
	tg := got["target"].(map[string]any)
	if _, ok := tg["attachments"]; ok || tg["typeURI"] != clusterTypeURI || !cadfIDPattern.MatchString(tg["id"].(string)) {
		t.Errorf("target without a cluster: %v", tg)
	}
	// Domain id when set; node addresses and counts summed by role.
	ctx := request.With(context.Background(), &request.Context{UserID: "u", DomainID: "d"})
	c := &objects.Cluster{UUID: objects.Str("c1"), HealthStatus: objects.Healthy}
	ngs := []*objects.NodeGroup{
		{Role: objects.RoleMaster, NodeCount: 3, NodeAddresses: []string{"10.0.0.1"}},
		{Role: objects.RoleWorker, NodeCount: 2, NodeAddresses: []string{"10.0.1.1", "10.0.1.2"}},
		{Role: "gpu", NodeCount: 1, NodeAddresses: []string{"10.0.2.1"}},
	}
	raw, _ = json.Marshal(n.Payload(ctx, ActionCreate, OutcomePending, c, ngs))
	got = nil
	_ = json.Unmarshal(raw, &got)
	ini := got["initiator"].(map[string]any)
	if ini["user_id"] != "u" || ini["domain_id"] != "d" || ini["project_id"] != nil {
		t.Errorf("initiator %v", ini)
	}
	content := got["target"].(map[string]any)["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
	if content["node_count"] != 3.0 || content["master_count"] != 3.0 || content["health_status"] != "HEALTHY" ||
		!reflect.DeepEqual(content["node_addresses"], []any{"10.0.1.1", "10.0.1.2", "10.0.2.1"}) ||
		!reflect.DeepEqual(content["master_addresses"], []any{"10.0.0.1"}) || content["status"] != nil || content["labels"] != nil {
		t.Errorf("content %v", content)
	}
}
