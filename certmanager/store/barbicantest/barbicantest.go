// Package barbicantest is an in-process Keystone v3 + Barbican v1 server
// for tests: password authentication with a fixed service user, a catalog
// with the key-manager endpoint, version discovery, and the secret and
// certificate-container calls Magnum's barbican cert manager makes. Failures
// and hangs can be injected per request.
package barbicantest

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

	"github.com/openstack/magnum-conductor/certmanager/store"
)

// Server is the fake. Lock Mu to read or change its fields while it runs.
type Server struct {
	srv *httptest.Server

	Mu         sync.Mutex
	seq        int
	Secrets    map[string]*Secret
	Containers map[string]map[string]any
	AuthCalls  int
	Calls      []string
	// Fail returns an HTTP status to answer instead (0: serve normally).
	// Fail and Block run without Mu held, from as many handlers as there
	// are requests in flight: state they keep must be safe for that.
	Fail func(method, path string) int
	// Block, when set, makes matching requests wait until the client gives up.
	Block func(method, path string) bool
}

// Secret is a stored secret.
type Secret struct {
	Name, Payload, ContentType string
}

// Credentials the fake accepts, and the token it issues.
const (
	Username = "magnum"
	Password = "svc-password-secret"
	Token    = "tok-0123456789"
)

// New starts a fake closed at the end of the test.
func New(t testing.TB) *Server {
	f := &Server{Secrets: map[string]*Secret{}, Containers: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the server's base URL.
func (f *Server) URL() string { return f.srv.URL }

// Options returns backend options that authenticate against the fake.
func (f *Server) Options() store.BarbicanOptions {
	return store.BarbicanOptions{
		AuthURL: f.srv.URL + "/identity/v3", Username: Username, Password: Password,
		UserDomainName: "Default", ProjectName: "service", ProjectDomainName: "Default",
		RegionName: "RegionOne", EndpointType: "publicURL", Timeout: 5 * time.Second,
	}
}

// Counts returns how many secrets and containers are stored.
func (f *Server) Counts() (secrets, containers int) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return len(f.Secrets), len(f.Containers)
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	f.Calls = append(f.Calls, r.Method+" "+r.URL.Path)
	fail, block := f.Fail, f.Block
	f.Mu.Unlock()
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
	if r.Header.Get("X-Auth-Token") != Token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/key-manager/v1/"), "/")
	f.Mu.Lock()
	defer f.Mu.Unlock()
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
		f.Secrets[id] = &Secret{Name: name, Payload: payload, ContentType: ct}
		writeJSON(w, 201, map[string]any{"secret_ref": base + "secrets/" + id})
	case parts[0] == "secrets" && len(parts) == 2 && r.Method == http.MethodGet:
		s, ok := f.Secrets[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, map[string]any{"name": s.Name, "status": "ACTIVE", "secret_ref": base + "secrets/" + parts[1],
			"content_types": map[string]string{"default": s.ContentType}})
	case parts[0] == "secrets" && len(parts) == 3 && parts[2] == "payload" && r.Method == http.MethodGet:
		s, ok := f.Secrets[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Accept") != s.ContentType {
			http.Error(w, "not acceptable", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", s.ContentType)
		w.WriteHeader(200)
		_, _ = io.WriteString(w, s.Payload)
	case parts[0] == "secrets" && len(parts) == 2 && r.Method == http.MethodDelete:
		if _, ok := f.Secrets[parts[1]]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(f.Secrets, parts[1])
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
		f.Containers[id] = body
		writeJSON(w, 201, map[string]any{"container_ref": body["container_ref"]})
	case parts[0] == "containers" && len(parts) == 2 && r.Method == http.MethodGet:
		c, ok := f.Containers[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, c)
	case parts[0] == "containers" && len(parts) == 2 && r.Method == http.MethodDelete:
		if _, ok := f.Containers[parts[1]]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(f.Containers, parts[1])
		w.WriteHeader(204)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, 400)
	}
}

func (f *Server) auth(w http.ResponseWriter, r *http.Request) {
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
	if u.Name != Username || u.Password != Password || u.Domain.Name != "Default" || p.Name != "service" || p.Domain.Name != "Default" {
		http.Error(w, `{"error":{"code":401}}`, http.StatusUnauthorized)
		return
	}
	f.Mu.Lock()
	f.AuthCalls++
	f.Mu.Unlock()
	w.Header().Set("X-Subject-Token", Token)
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
