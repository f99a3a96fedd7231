package store

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBarbican implements the Keystone v3 token call and the Barbican v1
// secret and container calls the barbican backend makes.
type fakeBarbican struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	seq        int
	secrets    map[string]*fakeSecret
	containers map[string]map[string]any
	authCalls  int
	calls      []string
	// fail returns an HTTP status to answer instead (0: serve normally).
	fail func(method, path string) int
	// block, when set, makes matching requests wait until the client gives up.
	block func(method, path string) bool
}

type fakeSecret struct {
	name, payload, contentType string
}

const fakeToken = "tok-0123456789"

func newFakeBarbican(t *testing.T) *fakeBarbican {
	f := &fakeBarbican{t: t, secrets: map[string]*fakeSecret{}, containers: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBarbican) options() BarbicanOptions {
	return BarbicanOptions{
		AuthURL: f.srv.URL + "/identity/v3", Username: "magnum", Password: "svc-password-secret",
		UserDomainName: "Default", ProjectName: "service", ProjectDomainName: "Default",
		RegionName: "RegionOne", EndpointType: "publicURL", Timeout: 5 * time.Second,
	}
}

func (f *fakeBarbican) counts() (secrets, containers int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.secrets), len(f.containers)
}

func (f *fakeBarbican) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	fail, block := f.fail, f.block
	f.mu.Unlock()
	if block != nil && block(r.Method, r.URL.Path) {
		// Read the body so that the server notices the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	if fail != nil {
		if code := fail(r.Method, r.URL.Path); code != 0 {
			http.Error(w, `{"title":"boom"}`, code)
			return
		}
	}
	if r.Method == http.MethodPost && r.URL.Path == "/identity/v3/auth/tokens" {
		f.auth(w, r)
		return
	}
	if r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/key-manager" {
		// Version discovery, as Barbican answers it.
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{
			map[string]any{"id": "v1", "status": "stable", "links": []any{map[string]any{"rel": "self", "href": f.srv.URL + "/key-manager/v1/"}}},
		}}})
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/key-manager/v1/") {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("X-Auth-Token") != fakeToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/key-manager/v1/"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	base := f.srv.URL + "/key-manager/v1/"
	switch {
	case parts[0] == "secrets" && len(parts) == 1 && r.Method == http.MethodPost:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.seq++
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", f.seq)
		ct, _ := body["payload_content_type"].(string)
		name, _ := body["name"].(string)
		payload, _ := body["payload"].(string)
		f.secrets[id] = &fakeSecret{name: name, payload: payload, contentType: ct}
		writeJSON(w, 201, map[string]any{"secret_ref": base + "secrets/" + id})
	case parts[0] == "secrets" && len(parts) == 2 && r.Method == http.MethodGet:
		s, ok := f.secrets[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, map[string]any{"name": s.name, "status": "ACTIVE", "secret_ref": base + "secrets/" + parts[1],
			"content_types": map[string]string{"default": s.contentType}})
	case parts[0] == "secrets" && len(parts) == 3 && parts[2] == "payload" && r.Method == http.MethodGet:
		s, ok := f.secrets[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Accept") != s.contentType {
			http.Error(w, "not acceptable", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", s.contentType)
		w.WriteHeader(200)
		_, _ = io.WriteString(w, s.payload)
	case parts[0] == "secrets" && len(parts) == 2 && r.Method == http.MethodDelete:
		if _, ok := f.secrets[parts[1]]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(f.secrets, parts[1])
		w.WriteHeader(204)
	case parts[0] == "containers" && len(parts) == 1 && r.Method == http.MethodPost:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if body["type"] != "certificate" {
			http.Error(w, "bad type", 400)
			return
		}
		f.seq++
		id := fmt.Sprintf("00000000-0000-4000-9000-%012d", f.seq)
		body["container_ref"] = base + "containers/" + id
		body["status"] = "ACTIVE"
		body["created"] = "2026-01-01T00:00:00"
		body["updated"] = "2026-01-01T00:00:00"
		f.containers[id] = body
		writeJSON(w, 201, map[string]any{"container_ref": body["container_ref"]})
	case parts[0] == "containers" && len(parts) == 2 && r.Method == http.MethodGet:
		c, ok := f.containers[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, c)
	case parts[0] == "containers" && len(parts) == 2 && r.Method == http.MethodDelete:
		if _, ok := f.containers[parts[1]]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(f.containers, parts[1])
		w.WriteHeader(204)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, 400)
	}
}

func (f *fakeBarbican) auth(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Auth struct {
			Identity struct {
				Methods  []string
				Password struct {
					User struct {
						Name     string
						Password string
						Domain   struct{ Name string }
					}
				}
			}
			Scope struct {
				Project struct {
					Name   string
					Domain struct{ Name string }
				}
			}
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	u := body.Auth.Identity.Password.User
	p := body.Auth.Scope.Project
	if u.Name != "magnum" || u.Password != "svc-password-secret" || u.Domain.Name != "Default" || p.Name != "service" || p.Domain.Name != "Default" {
		http.Error(w, `{"error":{"code":401}}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	f.authCalls++
	f.mu.Unlock()
	w.Header().Set("X-Subject-Token", fakeToken)
	writeJSON(w, 201, map[string]any{"token": map[string]any{
		"expires_at": time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z"),
		"methods":    []string{"password"},
		"project":    map[string]any{"id": "svc-project", "name": "service", "domain": map[string]any{"id": "default", "name": "Default"}},
		"user":       map[string]any{"id": "svc-user", "name": "magnum", "domain": map[string]any{"id": "default", "name": "Default"}},
		"catalog": []any{map[string]any{
			"type": "key-manager", "name": "barbican", "id": "km",
			"endpoints": []any{
				map[string]any{"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": f.srv.URL + "/key-manager"},
				map[string]any{"id": "e2", "interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": f.srv.URL + "/wrong"},
			},
		}},
	}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
