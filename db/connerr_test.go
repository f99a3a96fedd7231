package db

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/api/exception"
)

// TestIsConnectionErrorOfALostDatabase: the errors a store returns when
// its database is gone are connection errors, and those of a statement are
// not.
func TestIsConnectionErrorOfALostDatabase(t *testing.T) {
	// A port nothing listens on: what a stopped server looks like.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Open(ctx, Options{Connection: "mysql+pymysql://root@" + addr + "/nodb", MaxRetries: 0,
		RetryInterval: time.Millisecond, SkipSchemaCheck: true}, nil)
	if err == nil {
		t.Fatal("opened a database on a closed port")
	}
	if !IsConnectionError(err) {
		t.Fatalf("not a connection error: %v", err)
	}
	for _, e := range []error{
		fmt.Errorf("db: x: %w", mysql.ErrInvalidConn),
		&mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"},
	} {
		if !IsConnectionError(e) {
			t.Errorf("not a connection error: %v", e)
		}
	}
	for _, e := range []error{
		nil, errors.New("db: syntax"), &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"},
		exception.ClusterNotFound("x"), ErrStatusChanged, context.Canceled,
	} {
		if IsConnectionError(e) {
			t.Errorf("a connection error: %v", e)
		}
	}
}
