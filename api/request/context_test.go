package request

import (
	"fmt"
	"strings"
	"testing"
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
