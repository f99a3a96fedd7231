// Package request carries the OpenStack request context that oslo.messaging
// flattens into the "_context_*" keys of every RPC message.
//
// It is the Go twin of magnum.common.context.RequestContext (which extends
// oslo_context.RequestContext). Unlike the Python conductor, which rebuilds the
// context with RequestContext(**dict) and so loses global_request_id and
// resource_uuid, this package keeps every key it receives.
package request

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Context is the request context of one RPC request, or of a periodic task.
type Context struct {
	UserID          string   `json:"user_id"`
	UserName        string   `json:"user_name"`
	ProjectID       string   `json:"project_id"`
	ProjectName     string   `json:"project_name"`
	DomainID        string   `json:"domain_id"`
	DomainName      string   `json:"domain_name"`
	UserDomainID    string   `json:"user_domain_id"`
	UserDomainName  string   `json:"user_domain_name"`
	ProjectDomain   string   `json:"project_domain"`
	IsAdmin         bool     `json:"is_admin"`
	AllTenants      bool     `json:"all_tenants"`
	ReadOnly        bool     `json:"read_only"`
	ShowDeleted     bool     `json:"show_deleted"`
	IsAdminProject  bool     `json:"is_admin_project"`
	Roles           []string `json:"roles"`
	RequestID       string   `json:"request_id"`
	GlobalRequestID string   `json:"global_request_id"`
	ResourceUUID    string   `json:"resource_uuid"`
	AuthURL         string   `json:"auth_url"`
	TrustID         string   `json:"trust_id"`

	// Secrets: kept so that a request can be forwarded, never logged and
	// never copied into notifications.
	AuthToken     string          `json:"-"`
	AuthTokenInfo json.RawMessage `json:"-"`
	Password      string          `json:"-"`

	// Raw holds every "_context_" key exactly as received (without the
	// prefix), so that a message can be re-sent unchanged. Nil for contexts
	// built locally.
	Raw map[string]any `json:"-"`
}

// ContextPrefix is the prefix oslo.messaging puts before each context key.
const ContextPrefix = "_context_"

// NewRequestID returns an oslo-style request id: "req-" and a UUID4.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("req-%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// Admin returns the context periodic tasks run with: admin, all tenants,
// and no user or project (magnum.common.context.make_admin_context).
func Admin() *Context {
	return &Context{IsAdmin: true, AllTenants: true, RequestID: NewRequestID()}
}

// FromWire builds a Context from the context dict of a message (the keys
// without their "_context_" prefix). Unknown keys are kept in Raw. Values of
// the wrong type are ignored rather than rejected: the context never decides
// whether a request is served.
func FromWire(m map[string]any) *Context {
	c := &Context{Raw: m}
	str := func(k string) string {
		if s, ok := m[k].(string); ok {
			return s
		}
		return ""
	}
	boolean := func(k string) bool {
		b, _ := m[k].(bool)
		return b
	}
	c.UserID = str("user_id")
	if c.UserID == "" {
		c.UserID = str("user")
	}
	c.UserName = str("user_name")
	c.ProjectID = str("project_id")
	if c.ProjectID == "" {
		c.ProjectID = str("project")
	}
	c.ProjectName = str("project_name")
	c.DomainID = str("domain_id")
	c.DomainName = str("domain_name")
	c.UserDomainID = str("user_domain_id")
	c.UserDomainName = str("user_domain_name")
	c.ProjectDomain = str("project_domain")
	c.IsAdmin = boolean("is_admin")
	c.AllTenants = boolean("all_tenants")
	c.ReadOnly = boolean("read_only")
	c.ShowDeleted = boolean("show_deleted")
	c.IsAdminProject = boolean("is_admin_project")
	if roles, ok := m["roles"].([]any); ok {
		for _, r := range roles {
			if s, ok := r.(string); ok {
				c.Roles = append(c.Roles, s)
			}
		}
	}
	c.RequestID = str("request_id")
	c.GlobalRequestID = str("global_request_id")
	c.ResourceUUID = str("resource_uuid")
	c.AuthURL = str("auth_url")
	c.TrustID = str("trust_id")
	c.AuthToken = str("auth_token")
	c.Password = str("password")
	if v, ok := m["auth_token_info"]; ok && v != nil {
		if b, err := json.Marshal(v); err == nil {
			c.AuthTokenInfo = b
		}
	}
	return c
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ToWire returns the context dict to flatten into a message, with the keys
// magnum 15.0.1's RequestContext.to_dict writes. Keys received in Raw that
// this type does not model are passed through unchanged.
func (c *Context) ToWire() map[string]any {
	m := make(map[string]any, 40)
	for k, v := range c.Raw {
		m[k] = v
	}
	roles := c.Roles
	if roles == nil {
		roles = []string{}
	}
	var tokenInfo any
	if len(c.AuthTokenInfo) > 0 {
		tokenInfo = json.RawMessage(c.AuthTokenInfo)
	}
	set := func(k string, v any) {
		if _, kept := m[k]; kept && c.Raw != nil {
			return
		}
		m[k] = v
	}
	set("user", nullable(c.UserID))
	set("project_id", nullable(c.ProjectID))
	set("system_scope", nil)
	set("project", nullable(c.ProjectID))
	set("domain", nil)
	set("user_domain", nil)
	set("project_domain", nullable(c.ProjectDomain))
	set("is_admin", c.IsAdmin)
	set("read_only", c.ReadOnly)
	set("show_deleted", c.ShowDeleted)
	set("auth_token", nullable(c.AuthToken))
	set("request_id", nullable(c.RequestID))
	set("global_request_id", nullable(c.GlobalRequestID))
	set("resource_uuid", nullable(c.ResourceUUID))
	set("roles", roles)
	set("user_identity", c.userIdentity())
	set("is_admin_project", c.IsAdminProject)
	set("auth_url", nullable(c.AuthURL))
	set("domain_id", nullable(c.DomainID))
	set("domain_name", nullable(c.DomainName))
	set("user_domain_id", nullable(c.UserDomainID))
	set("user_domain_name", nullable(c.UserDomainName))
	set("user_name", nullable(c.UserName))
	set("user_id", nullable(c.UserID))
	set("project_name", nullable(c.ProjectName))
	set("trust_id", nullable(c.TrustID))
	set("auth_token_info", tokenInfo)
	set("password", nullable(c.Password))
	set("all_tenants", c.AllTenants)
	return m
}

func (c *Context) userIdentity() string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("%s %s %s %s %s", dash(c.UserID), dash(c.ProjectID), dash(c.DomainID),
		dash(c.UserDomainID), dash(c.ProjectDomain))
}

// LogAttrs returns the slog key/value pairs that identify the request on every
// log line about it. It never includes secrets, and each value is bounded
// (see Bound): they come from the caller, and a 2 MB request_id must not
// be copied into every line.
func (c *Context) LogAttrs() []any {
	if c == nil {
		return nil
	}
	attrs := []any{"request_id", Bound(c.RequestID), "global_request_id", Bound(c.GlobalRequestID),
		"user_id", Bound(c.UserID), "project_id", Bound(c.ProjectID)}
	// The rest of oslo.log's user identity, when known.
	for _, kv := range [...][2]string{{"domain_id", c.DomainID}, {"user_domain_id", c.UserDomainID},
		{"project_domain_id", c.ProjectDomain}} {
		if kv[1] != "" {
			attrs = append(attrs, kv[0], Bound(kv[1]))
		}
	}
	return attrs
}

// MaxLogValue is the most bytes of a caller's value Bound keeps: ids are
// 32 to 40 bytes ("req-" and a UUID).
const MaxLogValue = 128

// Bound returns s for a log line: as it is up to MaxLogValue bytes, else
// cut there (on a character boundary) and marked with how much was left
// out.
func Bound(s string) string { return BoundTo(s, MaxLogValue) }

// BoundTo is Bound with a bound of n bytes, for longer texts made from a
// caller's values (an error message naming them).
func BoundTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...(" + strconv.Itoa(len(s)-cut) + " more bytes)"
}

type ctxKey struct{}

// With returns a copy of ctx that carries rc.
func With(ctx context.Context, rc *Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, rc)
}

// From returns the request context carried by ctx. A ctx without one yields
// the admin context periodic tasks use, so that internal work is never
// tenant-filtered by accident.
func From(ctx context.Context) *Context {
	if rc, ok := ctx.Value(ctxKey{}).(*Context); ok && rc != nil {
		return rc
	}
	return &Context{IsAdmin: true, AllTenants: true}
}
