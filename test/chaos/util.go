package chaos

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func itoa(i int) string { return strconv.Itoa(i) }

// asError is errors.As for an *exception.Error.
func asError(err error, target **exception.Error) bool { return errors.As(err, target) }

// countOf counts the occurrences of sub in s.
func countOf(s, sub string) int { return strings.Count(s, sub) }

// replaceAddr points a [database]/connection URL of the shared MariaDB at
// addr (a proxy in front of it).
func replaceAddr(url, addr string) string {
	return strings.Replace(url, dbtest.MySQLAddr(), addr, 1)
}
