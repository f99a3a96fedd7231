package oslo

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
)

func TestParseTransportURLAsOslo(t *testing.T) {
	tests := []struct {
		in    string
		hosts []TransportHost
		vhost string
		query map[string]string
	}{
		{"rabbit://", []TransportHost{{Hostname: "localhost"}}, "", map[string]string{}},
		{"rabbit://guest:guest@127.0.0.1:5672/", []TransportHost{{"127.0.0.1", 5672, "guest", "guest"}}, "", map[string]string{}},
		{"rabbit://user:pass@h1:5672,user:pass@h2:5673/vhost?ssl=1&a=x&a=y",
			[]TransportHost{{"h1", 5672, "user", "pass"}, {"h2", 5673, "user", "pass"}}, "vhost", map[string]string{"ssl": "1", "a": "x,y"}},
		{"rabbit://us%40er:p%3Aa%2Fss%40@[::1]:5671/%2Fmagnum",
			[]TransportHost{{"::1", 5671, "us@er", "p:a/ss@"}}, "/magnum", map[string]string{}},
		{"rabbit://user:pa:ss@host", []TransportHost{{"host", 0, "user", "pa:ss"}}, "", map[string]string{}},
		{"rabbit://u:p@h1,h2:5000", []TransportHost{{"h1", 0, "u", "p"}, {"h2", 5000, "", ""}}, "", map[string]string{}},
		// urllib.parse.unquote keeps a malformed escape (checked with oslo's
		// own TransportURL.parse).
		{"rabbit://user:100%zz%4@host/v%zz", []TransportHost{{"host", 0, "user", "100%zz%4"}}, "v%zz", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseTransportURL(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if u.Transport != "rabbit" || !reflect.DeepEqual(u.Hosts, tt.hosts) || u.VirtualHost != tt.vhost || !reflect.DeepEqual(u.Query, tt.query) {
				t.Fatalf("got %+v", u)
			}
			if strings.Contains(u.String(), "pass") || strings.Contains(u.String(), "ss@") || strings.Contains(u.String(), "100%") {
				t.Fatalf("String leaks the password: %s", u)
			}
		})
	}
	for _, bad := range []string{"", "no-scheme", "rabbit://u:p@[::1:5672/", "rabbit://h:notaport/"} {
		if _, err := ParseTransportURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), ":p@") {
			t.Errorf("error leaks credentials: %v", err)
		}
	}
}

func TestVhostAndAddr(t *testing.T) {
	u, _ := ParseTransportURL("rabbit://h")
	if u.vhost() != "/" || u.Hosts[0].Addr() != "h:5672" {
		t.Fatalf("%q %q", u.vhost(), u.Hosts[0].Addr())
	}
	u, _ = ParseTransportURL("rabbit://[fe80::1]:1234/x")
	if u.vhost() != "x" || u.Hosts[0].Addr() != "[fe80::1]:1234" {
		t.Fatalf("%q %q", u.vhost(), u.Hosts[0].Addr())
	}
}

func TestQueueArgumentsAsOslo(t *testing.T) {
	r := DefaultOptions().Rabbit
	if got := r.queueArgs(r.TransientQueuesTTL, false); !reflect.DeepEqual(got, map[string]any{"x-expires": int32(1800000)}) {
		t.Fatalf("fanout/reply args %v", got)
	}
	if got := r.queueArgs(0, true); len(got) != 0 {
		t.Fatalf("topic args %v", got)
	}
	r.QuorumQueue, r.QuorumDeliveryLimit, r.QuorumMaxMemoryLength, r.QuorumMaxMemoryBytes = true, 3, 10, 1000
	want := map[string]any{"x-queue-type": "quorum", "x-delivery-limit": int32(3), "x-max-in-memory-length": int32(10), "x-max-in-memory-bytes": int64(1000)}
	if got := r.queueArgs(0, true); !reflect.DeepEqual(got, want) || !r.durable() {
		t.Fatalf("quorum args %v durable %v", got, r.durable())
	}
}

// TestRetryWaitAsOsloCappedLow: the wait between two dials grows as oslo
// grows it from rabbit_retry_interval, rabbit_retry_backoff,
// rabbit_interval_max and kombu_reconnect_delay, but never past
// reconnect_interval_max (1 s by default), so that a broker that is back is
// found at once, whatever the back-off had grown to; reconnect_interval_max
// = 0 gives oslo's schedule.
func TestRetryWaitAsOsloCappedLow(t *testing.T) {
	waits := func(r RabbitOptions) []time.Duration {
		d := &dialer{opts: r}
		var got []time.Duration
		for n := 0; n < 18; n += 4 {
			got = append(got, d.retryWait(n))
		}
		return got
	}
	r := DefaultOptions().Rabbit
	if got, want := waits(r), []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}; !reflect.DeepEqual(got, want) {
		t.Fatalf("default: got %v, want %v", got, want)
	}
	r.ReconnectIntervalMax = 0
	want := []time.Duration{2 * time.Second, 10 * time.Second, 18 * time.Second, 26 * time.Second, 31 * time.Second}
	if got := waits(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("oslo's schedule: got %v, want %v", got, want)
	}
	r.ReconnectIntervalMax = 5 * time.Second
	r.KombuReconnectDelay = 0
	want = []time.Duration{time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	if got := waits(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("capped at 5 s: got %v, want %v", got, want)
	}
}

func TestServerIDLooksLikeMagnums(t *testing.T) {
	id := NewServerID()
	if len(id) != 12 || strings.ToLower(id) != id || strings.ContainsAny(id, "018=") {
		t.Fatalf("server id %q", id)
	}
}

func TestPythonJSONLayout(t *testing.T) {
	// Expected values printed by Python's json.dumps.
	for in, want := range map[string]string{
		"é": `"\u00e9"`, "😀": `"\ud83d\ude00"`, "\x01": `"\u0001"`, "\x7f": `"\u007f"`,
		"</a>&": `"</a>&"`, "a\"b\\c\n\r\t\b\f": `"a\"b\\c\n\r\t\b\f"`, "\u2028": `"\u2028"`,
	} {
		if got := string(pyjson.AppendString(nil, in)); got != want {
			t.Errorf("%q: got %s want %s", in, got, want)
		}
		if got, _ := pyjson.Marshal(in); in != "a\"b\\c\n\r\t\b\f" && string(got) != want {
			t.Errorf("pyjson.Marshal %q: got %s want %s", in, got, want)
		}
	}
	got, _ := pyjson.Append(nil, map[string]any{"a": []any{1, "x", nil, true}, "b": map[string]any{}})
	if string(got) != `{"a": [1, "x", null, true], "b": {}}` {
		t.Errorf("got %s", got)
	}
}

func TestContextKeysOutsideMagnumsListAreSent(t *testing.T) {
	var ob orderedObject
	m := map[string]any{"user": "u", "trace_info": "t"}
	addContext(&ob, m)
	got, err := ob.bytes()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"_context_user": "u", "_context_trace_info": "t"}` {
		t.Fatalf("got %s", got)
	}
}
