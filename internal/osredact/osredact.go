// Package osredact describes the errors of OpenStack clients (gophercloud)
// in words that can be logged and sent in a status_reason or an exception:
// the method, the URL without its user information or query (where tokens
// and credentials travel) and the HTTP status, never a response body, a
// header or the raw error text.
package osredact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

// Describe summarises err, an error of a gophercloud call, without
// response bodies, headers or credentials. An error it does not know is
// not quoted (its text may hold a URL with credentials): only its Go type
// is named.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var code gophercloud.ErrUnexpectedResponseCode
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &code):
		return fmt.Sprintf("%s %s returned HTTP %d", code.Method, URL(code.URL), code.Actual)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "request timed out"
	case errors.Is(err, context.Canceled):
		return "request cancelled"
	case errors.As(err, &urlErr):
		return fmt.Sprintf("%s %s: %s", urlErr.Op, URL(urlErr.URL), cause(urlErr.Err))
	}
	return fmt.Sprintf("unexpected error (%T)", err)
}

// cause is the transport error under a *url.Error: a network error's
// operation and address (no URL), or its Go type.
func cause(err error) string {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return "cannot resolve " + dnsErr.Name
	case errors.As(err, &opErr):
		return opErr.Error()
	}
	return fmt.Sprintf("%T", err)
}

// URL is raw without user information, query or fragment; "<url>" when it
// does not parse (its text is then not repeated at all).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<url>"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
}
