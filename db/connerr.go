package db

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// IsConnectionError reports whether err says the database could not be
// reached or the connection was lost: what oslo.db raises as
// DBConnectionError (a refused or timed-out connection, a connection
// dropped or silent past mysql_io_timeout, a server going away or not ready
// to serve, such as a Galera node out of its cluster), as opposed to an
// error of the statement itself.
func IsConnectionError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return true
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, // too many connections
			1047, // unknown command: a Galera node not ready (WSREP), as oslo.db classes it
			1053, // server shutdown in progress
			1077, // normal shutdown
			1927: // connection killed
			return true
		}
	}
	return false
}
