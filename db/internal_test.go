package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// TestPyJSONMatchesPythonJSONDumps compares pyJSON with the real
// json.dumps of /usr/bin/python3 on awkward values.
func TestPyJSONMatchesPythonJSONDumps(t *testing.T) {
	values := []any{
		map[string]string{"b": "2", "a": "x\"y\\z", "ü": "日本", "tab": "\t\n", "emoji": "🙂", "del": "\x7f<>&"},
		[]string{"10.0.0.1", "fe80::1"},
		[]string{},
		map[string]string{},
		[]map[string]any{{"key": "k", "value": "v", "effect": "NoSchedule"}, {"n": 1.5, "b": true, "z": nil}},
	}
	for _, v := range values {
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// Python sorts the keys too so that dict order does not matter.
		script := "import json,sys; print(json.dumps(json.loads(sys.argv[1]), sort_keys=True), end='')"
		out, err := testkit.Output(testkit.ToolTimeout, "/usr/bin/python3", "-c", script, string(enc))
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		if got := pyJSON(v); got != string(out) {
			t.Errorf("pyJSON(%v)\n got %s\nwant %s", v, got, out)
		}
	}
}

func TestJSONScanCoercesToStrings(t *testing.T) {
	var d jsonDict
	if err := d.Scan([]byte(`{"a": 1, "b": true, "c": "x", "d": 2.5}`)); err != nil {
		t.Fatal(err)
	}
	if d["a"] != "1" || d["b"] != "True" || d["c"] != "x" || d["d"] != "2.5" {
		t.Fatalf("DictOfStrings coercion: %v", d)
	}
	var l jsonList
	if err := l.Scan(nil); err != nil || l != nil {
		t.Fatalf("NULL list = %v, %v", l, err)
	}
	if err := d.Scan("not json"); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

func TestRetriableAndDuplicateErrors(t *testing.T) {
	for _, tc := range []struct {
		err        error
		retry, dup bool
	}{
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, true, false},
		{&mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, true, false},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false, true},
		{fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1213}), true, false},
		{errors.New("database is locked (5) (SQLITE_BUSY)"), true, false},
		{errors.New("constraint failed: UNIQUE constraint failed: cluster.uuid (2067)"), false, true},
		{errors.New("connection refused"), false, false},
	} {
		if got := isRetriable(tc.err); got != tc.retry {
			t.Errorf("isRetriable(%v) = %v", tc.err, got)
		}
		if got := isDuplicate(tc.err); got != tc.dup {
			t.Errorf("isDuplicate(%v) = %v", tc.err, got)
		}
	}
}

func TestRetryRetriesDeadlocksOnly(t *testing.T) {
	s := &Store{maxRetries: 3, log: discard()}
	calls := 0
	err := s.retry(context.Background(), "op", func() error {
		calls++
		if calls < 3 {
			return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("deadlock retry: calls=%d err=%v", calls, err)
	}
	calls = 0
	err = s.retry(context.Background(), "op", func() error { calls++; return errors.New("boom") })
	if calls != 1 || err == nil || !strings.HasPrefix(err.Error(), "db: op: boom") {
		t.Fatalf("non-retriable: calls=%d err=%v", calls, err)
	}
	calls = 0
	err = s.retry(context.Background(), "op", func() error { calls++; return &mysql.MySQLError{Number: 1213} })
	if calls != 4 || err == nil {
		t.Fatalf("exhausted retries: calls=%d err=%v", calls, err)
	}
}

func TestPoolSettingsFollowOsloDB(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Connection: "sqlite:///" + t.TempDir() + "/p.db", MaxPoolSize: 3, MaxOverflow: 4,
		ConnectionRecycleTime: time.Minute, SkipSchemaCheck: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.sqlDB.Stats().MaxOpenConnections; got != 7 {
		t.Fatalf("max open = %d, want max_pool_size + max_overflow = 7", got)
	}
}
