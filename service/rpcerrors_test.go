package service

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/api/exception"
)

// TestLostDatabaseIsDBConnectionError: a handler's error that says the
// database is gone reaches the caller as oslo.db's DBConnectionError, as
// from the Python conductor, whether the handler returned it as it was or
// wrapped in MagnumException; other errors and chosen exceptions stay.
func TestLostDatabaseIsDBConnectionError(t *testing.T) {
	lost := fmt.Errorf("db: list cluster templates: the database connection was lost or did not answer in time: %w",
		mysql.ErrInvalidConn)
	for _, err := range []error{lost, exception.Wrap(lost)} {
		var e *exception.Error
		if !errors.As(translateError(err), &e) || e.Module != "oslo_db.exception" || e.Class != "DBConnectionError" ||
			e.Message != lost.Error() || !errors.Is(e, mysql.ErrInvalidConn) {
			t.Errorf("%v became %#v", err, translateError(err))
		}
	}
	if !retryCast(translateError(lost)) {
		t.Error("a cast that lost the database is not retried")
	}
	notFound := exception.ClusterNotFound("x")
	plain := errors.New("driver said no")
	for _, err := range []error{notFound, plain} {
		if got := translateError(err); got != err { //nolint:errorlint // the same error value, not wrapped, is what the test asserts
			t.Errorf("%v became %v", err, got)
		}
		if retryCast(translateError(err)) {
			t.Errorf("a cast failing with %v would be retried", err)
		}
	}
}
