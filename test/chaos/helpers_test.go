//go:build chaos

package chaos

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// ctTemplate is a cluster template of a scenario.
type ctTemplate = *objects.ClusterTemplate

// contextWithTimeout is an admin request's context bounded by d.
func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(AdminCtx(context.Background()), d)
}

// asError is errors.As for an *exception.Error.
func asError(err error, target **exception.Error) bool { return errors.As(err, target) }

// countOf counts the occurrences of sub in s.
func countOf(s, sub string) int { return strings.Count(s, sub) }

// replaceAddr points a [database]/connection URL of the shared MariaDB at
// addr (a proxy in front of it).
func replaceAddr(url, addr string) string {
	return strings.Replace(url, dbtest.MySQLAddr(), addr, 1)
}
