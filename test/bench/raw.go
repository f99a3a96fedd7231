package main

import (
	"bufio"
	"context"
	"encoding/json"
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
// (the parent exited or is done) or it is signalled.
func serveRaw(o rawamqp.Options, replyFile string) error {
	var err error
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

// rawCell measures the raw limit at n callers: the server in a child
// process (as a conductor is), the client here. With replyFile (and
// osloWire) the server answers with that file's bytes instead of the
// recorded ping_conductor reply.
func rawCell(ctx context.Context, lo load.Options, n int, confirm, osloWire bool, replyFile string) (load.Result, error) {
	o := rawamqp.Options{URL: amqpURL(), Exchange: rawamqp.RandomName("bench_raw_x_"),
		Queue: rawamqp.RandomName("bench_raw_q_"), Confirm: confirm, OsloWire: osloWire}
	self, err := os.Executable()
	if err != nil {
		return load.Result{}, err
	}
	cmd := exec.Command(self, "-raw-server", o.Exchange, "-raw-queue", o.Queue, fmt.Sprintf("-raw-confirm=%v", confirm),
		fmt.Sprintf("-raw-oslo-wire=%v", osloWire), "-raw-reply-file", replyFile)
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
	logf("raw amqp091-go request/reply (confirms %v, oslo wire %v%s), %d callers", confirm, osloWire, what, n)
	lo.Callers = n
	r := load.Run(ctx, lo, func(ctx context.Context) error { _, err := c.Call(ctx, body); return err })
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
			return nil, fmt.Errorf("%s: no body_raw (%v)", name, err)
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
