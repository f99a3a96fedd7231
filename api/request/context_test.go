package request

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLogAttrsIdentifyTheRequestWithoutSecrets: the request ids and the user
// identity oslo.log prints, and never a token or password.
func TestLogAttrsIdentifyTheRequestWithoutSecrets(t *testing.T) {
	c := &Context{RequestID: "req-1", GlobalRequestID: "req-g", UserID: "u1", ProjectID: "p1",
		UserDomainID: "default", AuthToken: "gAAAAAtoken", Password: "s3cret"}
	got := fmt.Sprint(c.LogAttrs())
	if got != "[request_id req-1 global_request_id req-g user_id u1 project_id p1 user_domain_id default]" {
		t.Errorf("LogAttrs = %s", got)
	}
	if strings.Contains(got, "gAAAA") || strings.Contains(got, "s3cret") {
		t.Errorf("a secret is in %s", got)
	}
	if (*Context)(nil).LogAttrs() != nil {
		t.Error("a nil context has attributes")
	}
}

// TestLogAttrsBoundWhatTheCallerSent: the values come from the caller; a
// 2 MB request_id is cut, saying how much was left out, and a value cut in
// the middle of a character keeps valid UTF-8.
func TestLogAttrsBoundWhatTheCallerSent(t *testing.T) {
	huge := "req-" + strings.Repeat("é", 1<<20)
	c := &Context{RequestID: huge, GlobalRequestID: "req-g", UserID: strings.Repeat("u", MaxLogValue)}
	attrs := c.LogAttrs()
	id := attrs[1].(string)
	if len(id) > MaxLogValue+32 || !strings.HasPrefix(id, "req-éé") || !strings.HasSuffix(id, " more bytes)") ||
		!utf8.ValidString(id) {
		t.Fatalf("request_id logged as %d bytes: %.200q", len(id), id)
	}
	if attrs[3] != "req-g" || attrs[5] != strings.Repeat("u", MaxLogValue) {
		t.Fatalf("values within the bound were changed: %v", attrs[2:6])
	}
	if got := Bound(strings.Repeat("x", MaxLogValue+10)); got != strings.Repeat("x", MaxLogValue)+"...(10 more bytes)" {
		t.Fatalf("Bound = %q", got)
	}
}
