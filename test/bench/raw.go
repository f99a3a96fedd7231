package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
	"github.com/openstack/magnum-conductor/test/bench/load"
	"github.com/openstack/magnum-conductor/test/bench/rawamqp"
	"github.com/openstack/magnum-conductor/test/harness"
)

func amqpURL() string { return strings.Replace(harness.Broker, "rabbit://", "amqp://", 1) }

// serveRaw runs in the child process: it answers until its stdin closes
// (the parent exited or is done) or it is signalled. With queryDB (a
// MariaDB database at mysqlAddr), it runs the Cluster.list query there
// before each reply.
func serveRaw(o rawamqp.Options, replyFile, mysqlAddr, queryDB string) error {
	var err error
	if queryDB != "" {
		db, err := openDatabase(mysqlAddr, queryDB)
		if err != nil {
			return err
		}
		defer db.Close()
		o.Work = func(ctx context.Context) error {
			err := listQuery(ctx, db)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench raw server: list query:", err)
			}
			return err
		}
	}
	switch {
	case o.OsloWire && replyFile != "":
		if o.ReplyBody, err = os.ReadFile(replyFile); err != nil {
			return err
		}
	case o.OsloWire:
		if _, o.ReplyBody, err = osloPingBodies(); err != nil {
			return err
		}
	}
	srv, err := rawamqp.StartServer(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println("ready")
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stdinClosed:
	case <-sig:
	case <-srv.Done():
		return fmt.Errorf("the broker closed the connection")
	}
	return nil
}

// listQuery is the query our store runs for the benchmark's Cluster.list
// (admin, all tenants, sort id asc, limit 1000), its rows read as they
// come, without decoding.
func listQuery(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT * FROM `cluster` ORDER BY `cluster`.`id` ASC LIMIT 1000")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("the list query found no clusters")
	}
	return nil
}

// rawCell measures the raw limit at n callers: the server in a child
// process (as a conductor is), the client here. With replyFile (and
// osloWire) the server answers with that file's bytes instead of the
// recorded ping_conductor reply; with queryDB as well, after running the
// Cluster.list query on that database (see serveRaw).
func rawCell(ctx context.Context, lo load.Options, n int, confirm, osloWire bool, replyFile, mysqlAddr, queryDB string) (load.Result, error) {
	o := rawamqp.Options{URL: amqpURL(), Exchange: rawamqp.RandomName("bench_raw_x_"),
		Queue: rawamqp.RandomName("bench_raw_q_"), Confirm: confirm, OsloWire: osloWire}
	self, err := os.Executable()
	if err != nil {
		return load.Result{}, err
	}
	cmd := exec.Command(self, "-raw-server", o.Exchange, "-raw-queue", o.Queue, fmt.Sprintf("-raw-confirm=%v", confirm),
		fmt.Sprintf("-raw-oslo-wire=%v", osloWire), "-raw-reply-file", replyFile, "-mysql", mysqlAddr,
		"-raw-query-db", queryDB)
	cmd.SysProcAttr = harness.ProcessGroup()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return load.Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return load.Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return load.Result{}, err
	}
	defer func() {
		_ = stdin.Close()
		harness.KillGroup(cmd)
	}()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("raw server said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return load.Result{}, fmt.Errorf("raw server: %w", err)
		}
	case <-time.After(30 * time.Second):
		return load.Result{}, fmt.Errorf("raw server not ready within 30 s")
	case <-ctx.Done():
		return load.Result{}, ctx.Err()
	}
	c, err := rawamqp.NewClient(o)
	if err != nil {
		return load.Result{}, err
	}
	defer c.Close()
	body := []byte(`{"ping":true}`)
	if osloWire {
		if body, _, err = osloPingBodies(); err != nil {
			return load.Result{}, err
		}
	}
	what := ""
	if replyFile != "" {
		what = ", a Cluster.list reply"
	}
	if queryDB != "" {
		what += " after the list's query"
	}
	logf("raw amqp091-go request/reply (confirms %v, oslo wire %v%s), %d callers", confirm, osloWire, what, n)
	lo.Callers = n
	r := load.Run(ctx, lo, func(ctx context.Context) error {
		reply, err := c.Call(ctx, body)
		if err == nil && len(reply) == 0 {
			err = errors.New("the raw server's database query failed")
		}
		return err
	})
	logf("  %.1f/s p50 %.2f ms p99 %.2f ms, %d errors %s", r.PerSec, r.P50ms, r.P99ms, r.Errors, r.FirstErr)
	return r, nil
}

// vectorsDir holds the frames recorded from the Python conductor (run from
// the repository's root, as make bench does).
const vectorsDir = "api/oslo/testdata/vectors"

// osloPingBodies returns the recorded ping_conductor request and reply
// bodies, as the Python client and conductor put them on the wire.
func osloPingBodies() (request, reply []byte, err error) {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(vectorsDir, name))
		if err != nil {
			return nil, err
		}
		var v struct {
			BodyRaw string `json:"body_raw"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.BodyRaw == "" {
			return nil, fmt.Errorf("%s: no body_raw (%v)", name, err) //nolint:errorlint // err may be nil (no body_raw): text for the reader
		}
		return []byte(v.BodyRaw), nil
	}
	if request, err = read("call_ping_request.json"); err != nil {
		return nil, nil, err
	}
	if reply, err = read("call_ping_reply.json"); err != nil {
		return nil, nil, err
	}
	return request, reply, nil
}

// listReply is the reply our conductor sends for a Cluster.list whose
// result is result, as oslo lays it out (amqpdriver's reply message in the
// 2.0 envelope; the ids are fixed, the raw server sends the same bytes
// every time).
func listReply(result []byte) []byte {
	inner := append([]byte(`{"result": `), result...)
	inner = append(inner, `, "failure": null, "ending": true, "_msg_id": "372baf9da21846bbad45c07fcf4a5412", `+
		`"_unique_id": "4e18940eedef484c8c1880b69d498625"}`...)
	out := []byte(`{"oslo.version": "2.0", "oslo.message": `)
	out = pyjson.AppendString(out, string(inner))
	return append(out, '}')
}
