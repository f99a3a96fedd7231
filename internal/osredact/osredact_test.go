package osredact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// secrets are what must never appear in a description.
var secrets = []string{"s3cr3t-pass", "gAAAA-token", "app-cred-secret", "admin:"}

const withCreds = "https://admin:s3cr3t-pass@keystone.example:5000/v3/auth/tokens?token=gAAAA-token&secret=app-cred-secret#frag"

func TestDescribeNeverQuotesCredentials(t *testing.T) {
	for name, err := range map[string]error{
		"HTTP status": gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: withCreds, Actual: 401,
			Body: []byte(`{"token": "gAAAA-token"}`)},
		"wrapped HTTP status": fmt.Errorf("creating: %w", gophercloud.ErrUnexpectedResponseCode{Method: "GET", URL: withCreds, Actual: 500}),
		"transport": &url.Error{Op: "Post", URL: withCreds, Err: &net.OpError{Op: "dial", Net: "tcp",
			Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5000}, Err: errors.New("connection refused")}},
		"transport, other cause": &url.Error{Op: "Get", URL: withCreds, Err: errors.New("tls: " + withCreds)},
		"unknown":                errors.New("failed at " + withCreds),
		"unparsable URL":         gophercloud.ErrUnexpectedResponseCode{Method: "GET", URL: "http://a b/?token=gAAAA-token", Actual: 404},
		"timeout":                fmt.Errorf("%w at %s", context.DeadlineExceeded, withCreds),
	} {
		got := Describe(err)
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Errorf("%s: %q quotes %q", name, got, s)
			}
		}
		if got == "" {
			t.Errorf("%s: empty description", name)
		}
	}
	if got := Describe(gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: withCreds, Actual: 401}); got != "POST https://keystone.example:5000/v3/auth/tokens returned HTTP 401" {
		t.Errorf("HTTP status described as %q", got)
	}
	op := &url.Error{Op: "Post", URL: withCreds, Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5000}, Err: errors.New("connection refused")}}
	if got := Describe(op); got != "Post https://keystone.example:5000/v3/auth/tokens: dial tcp 10.0.0.1:5000: connection refused" {
		t.Errorf("transport error described as %q", got)
	}
}

func TestURL(t *testing.T) {
	if got := URL(withCreds); got != "https://keystone.example:5000/v3/auth/tokens" {
		t.Fatalf("URL = %q", got)
	}
	if got := URL("http://a b/?token=x"); got != "<url>" {
		t.Fatalf("unparsable URL = %q", got)
	}
}
