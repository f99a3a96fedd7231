package oslo

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDecompressKombuBodies(t *testing.T) {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write([]byte(`{"oslo.version": "2.0"}`))
	_ = w.Close()
	if got, err := decompress(z.Bytes(), "application/x-gzip", 1<<20); err != nil || string(got) != `{"oslo.version": "2.0"}` {
		t.Fatalf("zlib: %q %v", got, err)
	}
	if got, err := decompress([]byte("plain"), "", 1<<20); err != nil || string(got) != "plain" {
		t.Fatalf("uncompressed: %q %v", got, err)
	}
	if _, err := decompress([]byte("x"), "application/x-lzma", 1<<20); err == nil || !strings.Contains(err.Error(), "unsupported compression") {
		t.Fatalf("lzma: %v", err)
	}
	if _, err := decompress([]byte("not zlib"), "application/x-gzip", 1<<20); err == nil {
		t.Fatal("corrupt zlib data accepted")
	}
	// A bomb: 65 MiB of zeros is refused, not expanded; as is a request
	// that expands past max_message_size.
	z.Reset()
	w = zlib.NewWriter(&z)
	_, _ = w.Write(make([]byte, maxDecompressed+1<<20))
	_ = w.Close()
	if _, err := decompress(z.Bytes(), "application/x-gzip", maxDecompressed); err == nil || !strings.Contains(err.Error(), "expands past") {
		t.Fatalf("bomb: %v", err)
	}
	if _, err := decompress(z.Bytes(), "application/x-gzip", DefaultMaxMessageSize); err == nil ||
		!strings.Contains(err.Error(), "expands past 1048576 bytes") {
		t.Fatalf("past max_message_size: %v", err)
	}
}

// TestInteropPythonCompressedClientCallsGoServer: a Python RPCClient with
// kombu_compression (gzip, bzip2) sends compressed bodies; our server, with
// the same kombu_compression, reads them and answers, and Python reads our
// replies: compressed with gzip, uncompressed with bzip2 (not written here).
func TestInteropPythonCompressedClientCallsGoServer(t *testing.T) {
	for _, compression := range []string{"gzip", "bzip2"} {
		t.Run(compression, func(t *testing.T) {
			e := newEnv(t)
			e.opts.Rabbit.Compression = compression
			rec := newRecorder()
			e.startServer(interopDispatcher(t, rec))
			py := startPython(t, "compressed_client", brokerURL, e.opts.ControlExchange, e.topic, compression)
			got := map[string]map[string]any{}
			for len(got) < 4 {
				m := py.next(t, 60*time.Second)
				got[m["check"].(string)] = m
			}
			if m := got["ping"]; m["ok"] != true || m["result"] != true {
				t.Errorf("ping: %v", m)
			}
			var echoed map[string]any
			b, _ := json.Marshal(got["echo"]["result"])
			_ = json.Unmarshal(b, &echoed)
			if got["echo"]["ok"] != true || echoed["request_id"] != "req-from-python" {
				t.Errorf("echo: %v", got["echo"])
			}
			if e, _ := got["not_found"]["error"].(map[string]any); got["not_found"]["ok"] != false || e["type"] != "ClusterNotFound_Remote" {
				t.Errorf("not_found: %v", got["not_found"])
			}
			rec.wait(t, "python-compressed-cast")
		})
	}
}

// TestInteropGoClientReadsCompressedPythonReplies: a Python server with
// kombu_compression=gzip compresses its replies and our client reads them;
// our client with kombu_compression=gzip compresses its calls and a Python
// server without it reads them.
func TestInteropGoClientReadsCompressedPythonReplies(t *testing.T) {
	t.Run("python compresses", func(t *testing.T) { interopCompressedEcho(t, "gzip", "") })
	t.Run("go compresses", func(t *testing.T) { interopCompressedEcho(t, "", "gzip") })
}

func interopCompressedEcho(t *testing.T, python, ours string) {
	e := newEnv(t)
	e.opts.Rabbit.Compression = ours
	py := startPython(t, "server", brokerURL, e.opts.ControlExchange, e.topic, python)
	e.cleanups = append(e.cleanups, e.topic+".pyserver")
	if m := py.next(t, 30*time.Second); m["ready"] != true {
		t.Fatalf("python server: %v", m)
	}
	c := e.client()
	res, err := c.Call(userCtx(), Target{Topic: e.topic}, "echo", map[string]any{"value": []any{1, "é"}, "note": "n"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(res, &m)
	jsonEqual(t, "echo", m, map[string]any{"value": []any{1, "é"}, "request_id": "req-test", "user_id": "u1", "note": "n"})
}
