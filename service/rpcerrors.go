package service

import (
	"errors"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/db"
)

// translateError is the RPC edge's last word on a handler's error: what the
// Python conductor's libraries would have raised for it. A database that
// cannot be reached, or a connection lost, is oslo.db's DBConnectionError
// there (magnum-api turns it into a 500 through RemoteError), not the
// MagnumException an unexpected error becomes. An exception a handler
// chose (ClusterNotFound ...) is its answer and stays.
func translateError(err error) error {
	var e *exception.Error
	if errors.As(err, &e) && !(e.Module == exception.ModuleMagnum && e.Class == "MagnumException") {
		return err
	}
	if !db.IsConnectionError(err) {
		return err
	}
	msg := err.Error()
	if e != nil {
		msg = e.Message
	}
	return exception.DBConnectionError(msg, err)
}

// retryCast picks the casts to return to their queue rather than drop: those
// that failed because the database could not be reached (after
// translateError), which another conductor, or this one a moment later,
// can do. Python's conductor loses them.
func retryCast(err error) bool {
	var e *exception.Error
	return errors.As(err, &e) && e.Module == exception.ModuleOsloDB && e.Class == "DBConnectionError"
}
