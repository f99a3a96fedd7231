// Package keystonetest is an in-process Keystone v3 server implementing
// exactly the calls the keystone issuer and magnumctl make, for tests:
//
//	GET    /, /v3                                           version discovery
//	POST   /v3/auth/tokens                                  password, token or application_credential → 201 + X-Subject-Token
//	GET    /v3/auth/tokens                                  validate X-Subject-Token → 200 with its body
//	POST   /v3/users/{user_id}/application_credentials      → 201 {application_credential: {id, secret, …}}
//	DELETE /v3/users/{user_id}/application_credentials/{id} → 204
//
// Users added with AddUser authenticate as a real Keystone's do: by id, or
// by name and domain; unscoped, or scoped to their project, when the
// token's body carries the user, the project, the roles and the service
// catalogue (SetCatalog). An application credential created by such a user
// gives tokens scoped to the user's project.
//
// Errors follow Keystone's body shape {"error": {"code", "title", "message"}}.
package keystonetest

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AppCred is an application credential the server holds.
type AppCred struct {
	ID, Name, Description, Secret, UserID string
	Unrestricted                          bool
	ExpiresAt                             *string
}

// Request is one request the server received (method and path only).
type Request struct{ Method, Path string }

// User is a user of the server (AddUser): it authenticates with its
// password, by ID or by name and domain, and its scoped tokens are for its
// project, with its roles.
type User struct {
	ID, Name, DomainID, DomainName, Password                   string
	ProjectID, ProjectName, ProjectDomainID, ProjectDomainName string
	Roles                                                      []string
}

// Server is a fake Keystone. Configure the fields before use; read them
// through the accessor methods while requests may be running.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	tokens   map[string]string         // token → user id
	bodies   map[string]map[string]any // token → its body's "token" object
	admins   map[string]bool           // user id → admin role
	users    map[string]*User          // user id → user
	catalog  []any
	service  struct{ name, domain, password, userID string }
	creds    map[string]*AppCred
	requests []Request
	// failures: path prefix → status to answer once (or Always).
	failures []failure
	delay    time.Duration
	stop     chan struct{}
	stopOnce sync.Once
}

type failure struct {
	method, prefix string
	status         int
	times          int // <0: always
}

// New starts a server. Close it with t.Cleanup(s.Close).
func New() *Server {
	s := newServer()
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewTLS starts a server over HTTPS with cert (issued for 127.0.0.1), for
// the tests of a client's CA file.
func NewTLS(cert tls.Certificate) *Server {
	s := newServer()
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.Server.StartTLS()
	return s
}

func newServer() *Server {
	return &Server{tokens: map[string]string{}, bodies: map[string]map[string]any{}, admins: map[string]bool{},
		users: map[string]*User{}, creds: map[string]*AppCred{}, stop: make(chan struct{})}
}

// Close releases delayed requests and stops the server.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.Server.Close()
}

// AuthURL is the Identity API without version ("http://127.0.0.1:port").
func (s *Server) AuthURL() string { return s.Server.URL }

// AddUserToken makes token valid for userID.
func (s *Server) AddUserToken(userID, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = userID
}

// SetService registers the service user (admin) that authenticates with a
// password.
func (s *Server) SetService(userID, name, domain, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.service.userID, s.service.name, s.service.domain, s.service.password = userID, name, domain, password
	s.admins[userID] = true
}

// AddUser registers u; an "admin" role among u.Roles makes it an admin
// (it may then manage other users' application credentials).
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := u
	c.Roles = append([]string(nil), u.Roles...)
	s.users[u.ID] = &c
	for _, r := range u.Roles {
		if r == "admin" {
			s.admins[u.ID] = true
		}
	}
}

// SetCatalog sets the service catalogue of the project-scoped tokens
// issued to users (Keystone's "catalog": a list of services with their
// endpoints).
func (s *Server) SetCatalog(catalog []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalog = catalog
}

// TokenUser returns the user a token was issued to, and whether the
// server issued (or was given) that token.
func (s *Server) TokenUser(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.tokens[token]
	return u, ok
}

// Fail answers the next n requests whose method matches and whose path
// starts with prefix with status (n < 0: always).
func (s *Server) Fail(method, prefix string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{method: method, prefix: prefix, status: status, times: n})
}

// SetDelay makes every request wait d before it is answered.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Creds returns a copy of the application credentials held.
func (s *Server) Creds() []AppCred {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AppCred, 0, len(s.creds))
	for _, c := range s.creds {
		out = append(out, *c)
	}
	return out
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, title, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "title": title, "message": msg}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path})
	delay := s.delay
	status := 0
	for i := range s.failures {
		f := &s.failures[i]
		if f.times != 0 && (f.method == "" || f.method == r.Method) && strings.HasPrefix(r.URL.Path, f.prefix) {
			status = f.status
			if f.times > 0 {
				f.times--
			}
			break
		}
	}
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
	if status != 0 {
		writeError(w, status, http.StatusText(status), "injected failure")
		return
	}

	path := strings.TrimRight(r.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && (path == "" || path == "/v3"):
		s.discovery(w)
	case r.Method == http.MethodPost && path == "/v3/auth/tokens":
		s.authenticate(w, r)
	case r.Method == http.MethodGet && path == "/v3/auth/tokens":
		s.validate(w, r)
	case len(parts) == 4 && parts[0] == "v3" && parts[1] == "users" && parts[3] == "application_credentials" && r.Method == http.MethodPost:
		s.createCred(w, r, parts[2])
	case len(parts) == 5 && parts[0] == "v3" && parts[1] == "users" && parts[3] == "application_credentials" && r.Method == http.MethodDelete:
		s.deleteCred(w, r, parts[2], parts[4])
	default:
		writeError(w, http.StatusNotFound, "Not Found", "The resource could not be found.")
	}
}

func (s *Server) discovery(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{"version": map[string]any{
		"id": "v3.14", "status": "stable",
		"links": []any{map[string]any{"rel": "self", "href": s.Server.URL + "/v3/"}},
	}})
}

type authScope struct {
	Project *struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Domain struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"domain"`
	} `json:"project"`
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Auth struct {
			Identity struct {
				Methods  []string `json:"methods"`
				Password struct {
					User struct {
						ID       string `json:"id"`
						Name     string `json:"name"`
						Password string `json:"password"`
						Domain   struct {
							ID   string `json:"id"`
							Name string `json:"name"`
						} `json:"domain"`
					} `json:"user"`
				} `json:"password"`
				Token struct {
					ID string `json:"id"`
				} `json:"token"`
				AppCred struct {
					ID     string `json:"id"`
					Secret string `json:"secret"`
				} `json:"application_credential"`
			} `json:"identity"`
			Scope *authScope `json:"scope"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Auth.Identity.Methods) != 1 {
		writeError(w, http.StatusBadRequest, "Bad Request", "malformed authentication request")
		return
	}
	id := body.Auth.Identity
	s.mu.Lock()
	userID := ""
	var user *User
	appCred := false
	switch id.Methods[0] {
	case "application_credential":
		if c, ok := s.creds[id.AppCred.ID]; ok && id.AppCred.Secret != "" && c.Secret == id.AppCred.Secret {
			userID = c.UserID
			user = s.users[userID]
			appCred = true
		}
	case "password":
		u := id.Password.User
		if s.service.password != "" && u.Password == s.service.password &&
			(u.ID == s.service.userID || (u.Name == s.service.name && (u.Domain.Name == s.service.domain || u.Domain.ID == s.service.domain))) {
			userID = s.service.userID
		}
		for _, c := range s.users {
			if userID == "" && u.Password != "" && u.Password == c.Password && (u.ID == c.ID ||
				(u.ID == "" && u.Name == c.Name && ((u.Domain.ID != "" && u.Domain.ID == c.DomainID) || (u.Domain.ID == "" && u.Domain.Name == c.DomainName)))) {
				userID, user = c.ID, c
			}
		}
	case "token":
		if who, ok := s.tokens[id.Token.ID]; ok {
			userID, user = who, s.users[who]
		}
	}
	scoped := false
	if user != nil {
		switch sc := body.Auth.Scope; {
		case appCred && sc != nil:
			userID = "" // Keystone: an application credential's token cannot be rescoped
		case appCred:
			scoped = true
		case sc != nil && sc.Project != nil:
			p := sc.Project
			scoped = (p.ID != "" && p.ID == user.ProjectID) || (p.ID == "" && p.Name == user.ProjectName &&
				((p.Domain.ID != "" && p.Domain.ID == user.ProjectDomainID) || (p.Domain.ID == "" && p.Domain.Name == user.ProjectDomainName)))
			if !scoped {
				userID = ""
			}
		}
	}
	if userID == "" {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	token := "gAAAA" + randomHex(24)
	now := time.Now().UTC()
	tok := map[string]any{
		"methods": id.Methods, "user": map[string]any{"id": userID},
		"expires_at": now.Add(time.Hour).Format(time.RFC3339), "issued_at": now.Format(time.RFC3339), "catalog": []any{},
	}
	if user != nil {
		tok["user"] = map[string]any{"id": user.ID, "name": user.Name, "domain": map[string]any{"id": user.DomainID, "name": user.DomainName}}
		delete(tok, "catalog")
	}
	if scoped {
		roles := make([]any, 0, len(user.Roles))
		for i, r := range user.Roles {
			roles = append(roles, map[string]any{"id": "role-" + strconv.Itoa(i), "name": r})
		}
		tok["project"] = map[string]any{"id": user.ProjectID, "name": user.ProjectName,
			"domain": map[string]any{"id": user.ProjectDomainID, "name": user.ProjectDomainName}}
		tok["roles"] = roles
		catalog := s.catalog
		if catalog == nil {
			catalog = []any{}
		}
		tok["catalog"] = catalog
	}
	s.tokens[token] = userID
	s.bodies[token] = tok
	s.mu.Unlock()
	w.Header().Set("X-Subject-Token", token)
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok})
}

// validate is GET /v3/auth/tokens: the body of the token in
// X-Subject-Token, for a caller with a valid X-Auth-Token.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, callerOK := s.tokens[r.Header.Get("X-Auth-Token")]
	subject := r.Header.Get("X-Subject-Token")
	tok, ok := s.bodies[subject]
	s.mu.Unlock()
	switch {
	case !callerOK:
		writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
	case !ok:
		writeError(w, http.StatusNotFound, "Not Found", "Failed to validate token")
	default:
		w.Header().Set("X-Subject-Token", subject)
		writeJSON(w, http.StatusOK, map[string]any{"token": tok})
	}
}

// caller checks X-Auth-Token and that it may act on userID.
func (s *Server) caller(w http.ResponseWriter, r *http.Request, userID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	who, ok := s.tokens[r.Header.Get("X-Auth-Token")]
	if !ok {
		writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return false
	}
	if who != userID && !s.admins[who] {
		writeError(w, http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action.")
		return false
	}
	return true
}

func (s *Server) createCred(w http.ResponseWriter, r *http.Request, userID string) {
	if !s.caller(w, r, userID) {
		return
	}
	var body struct {
		AC struct {
			Name         string  `json:"name"`
			Description  string  `json:"description"`
			Unrestricted *bool   `json:"unrestricted"`
			ExpiresAt    *string `json:"expires_at"`
		} `json:"application_credential"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.AC.Name == "" {
		writeError(w, http.StatusBadRequest, "Bad Request", "name is required")
		return
	}
	s.mu.Lock()
	for _, c := range s.creds {
		if c.UserID == userID && c.Name == body.AC.Name {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, "Conflict", "Duplicate entry found with name "+body.AC.Name)
			return
		}
	}
	c := &AppCred{ID: randomHex(16), Name: body.AC.Name, Description: body.AC.Description, Secret: randomHex(32),
		UserID: userID, Unrestricted: body.AC.Unrestricted != nil && *body.AC.Unrestricted, ExpiresAt: body.AC.ExpiresAt}
	s.creds[c.ID] = c
	project := "project"
	if u, ok := s.users[userID]; ok {
		project = u.ProjectID
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"application_credential": map[string]any{
		"id": c.ID, "name": c.Name, "description": c.Description, "secret": c.Secret,
		"unrestricted": c.Unrestricted, "expires_at": c.ExpiresAt, "project_id": project,
		"roles": []any{map[string]any{"id": "r1", "name": "member"}},
		"links": map[string]any{"self": s.Server.URL + "/v3/users/" + userID + "/application_credentials/" + c.ID},
	}})
}

func (s *Server) deleteCred(w http.ResponseWriter, r *http.Request, userID, id string) {
	if !s.caller(w, r, userID) {
		return
	}
	s.mu.Lock()
	c, ok := s.creds[id]
	if ok && c.UserID == userID {
		delete(s.creds, id)
	}
	s.mu.Unlock()
	if !ok || c.UserID != userID {
		writeError(w, http.StatusNotFound, "Not Found", "Could not find application credential: "+id+".")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
