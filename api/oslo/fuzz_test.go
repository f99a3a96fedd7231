package oslo

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/pyjson"
)

// FuzzDecodeAndDispatch feeds arbitrary bodies through the decoder and the
// dispatcher: nothing may panic, and every outcome is either a request or a
// DecodeError, and every dispatch error encodes as a failure.
func FuzzDecodeAndDispatch(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add([]byte(fr.BodyRaw))
	}
	f.Add([]byte(`{"oslo.version": "2.0", "oslo.message": "{\"method\": 1, \"args\": \"x\", \"version\": 2}"}`))
	f.Add([]byte(`{"oslo.version": "1.0", "oslo.message": "[]"}`))
	f.Add([]byte(`{"method": "ping_conductor", "args": {"a": {"b": [1, 2, {"c": null}]}}, "_timeout": "x"}`))
	f.Add([]byte(`{"oslo.version": "2.0", "oslo.message": "{\"method\": \"echo\", \"args\": {\"value\": 1e999}, \"version\": \"1.a\"}"}`))
	f.Add([]byte(`null`))
	d := NewDispatcher()
	if err := d.Handle("ping_conductor", Method(func(ctx context.Context, _ NoArgs) (any, error) { return true, nil })); err != nil {
		f.Fatal(err)
	}
	if err := d.Handle("echo", Method(func(ctx context.Context, a echoArgs) (any, error) { return a.Value, nil })); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			var de *DecodeError
			if !asDecodeError(err, &de) {
				t.Fatalf("error of type %T", err)
			}
			if de.Failure != nil {
				if _, err := FailureFromError(de.Failure).Encode(); err != nil {
					t.Fatal(err)
				}
			}
			return
		}
		res, err := d.Dispatch(context.Background(), req)
		body2, berr := buildReply(nil, "m", res, err)
		if berr != nil {
			t.Fatalf("reply not encodable: %v", berr)
		}
		if !json.Valid(body2) {
			t.Fatalf("invalid reply JSON %q", body2)
		}
		if err != nil {
			var e *exception.Error
			if !asError(err, &e) {
				t.Fatalf("dispatch error %T is not an *exception.Error", err)
			}
		}
	})
}

// FuzzPythonStringLayout: our Python-style string encoder always yields
// JSON that decodes back to the (valid UTF-8) input and is pure ASCII.
func FuzzPythonStringLayout(f *testing.F) {
	for _, s := range []string{"", "é", "😀", "\x00\x1f\x7f", "a\"b\\c", "\xff\xfe", "\u2028</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := pyjson.AppendString(nil, s)
		for _, c := range out {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("non-ASCII byte %#x in %q", c, out)
			}
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
		laid, err := pyjson.Marshal(s)
		if err != nil || !json.Valid(laid) {
			t.Fatalf("pyjson.Marshal %q: %v", laid, err)
		}
	})
}

// FuzzFastEnvelopeMatchesEncodingJSON: the fast envelope path and
// encoding/json agree on every body the fast path accepts.
func FuzzFastEnvelopeMatchesEncodingJSON(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add([]byte(fr.BodyRaw))
	}
	f.Add([]byte(envelopePrefix + `{\"a\": \"\\ud83d\\ude00 \\u00e9 \\\" \\\\ \\n\"}"}`))
	f.Add([]byte(envelopePrefix + `\ud800x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := fastEnvelopeMessage(body)
		if !ok {
			return
		}
		var env struct {
			Message *string `json:"oslo.message"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Message == nil {
			if utf8.Valid(body) {
				t.Fatalf("fast path accepted %q that encoding/json rejects: %v", body, err)
			}
			return
		}
		if utf8.Valid(body) && string(fast) != *env.Message {
			t.Fatalf("fast %q != json %q", fast, *env.Message)
		}
	})
}

// FuzzSplitObjectMatchesEncodingJSON: splitObject and encoding/json agree
// on the members of every valid JSON object.
func FuzzSplitObjectMatchesEncodingJSON(f *testing.F) {
	for _, fr := range loadFrames(f) {
		var env map[string]string
		if json.Unmarshal([]byte(fr.BodyRaw), &env) == nil {
			f.Add([]byte(env["oslo.message"]))
		}
	}
	f.Add([]byte(`{"a\"b": [1, {"c": "}"}], "d": -1.5e3, "e": "\\\"", "a\"b": null}`))
	f.Add([]byte(` { } `))
	f.Add([]byte(`{"a": 1} x`))
	f.Add([]byte(`{"a": [1, 2,]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := splitObject(b)
		if !json.Valid(b) {
			if ok {
				t.Fatalf("splitObject accepted %q, which is not valid JSON", b)
			}
			return
		}
		var want map[string]json.RawMessage
		err := json.Unmarshal(b, &want)
		if (err == nil && want != nil) != ok {
			t.Fatalf("%q: split ok=%v, encoding/json err=%v", b, ok, err)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, want %d", b, len(got), len(want))
		}
		for k, v := range want {
			if string(bytes.TrimSpace(got[k])) != string(bytes.TrimSpace(v)) {
				t.Fatalf("%q: member %q = %q, want %q", b, k, got[k], v)
			}
		}
	})
}

// FuzzDecodeRequestMatchesEncodingJSON: the member-by-member fast path of
// DecodeRequest builds the same Request as decoding the envelope and the
// message with encoding/json and setting every member.
func FuzzDecodeRequestMatchesEncodingJSON(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add([]byte(fr.BodyRaw))
	}
	f.Add([]byte(`{"oslo.version": "2.0", "oslo.message": "{\"method\": \"a\", \"method\": \"b\", \"_context_x\": 1, \"_context_x\": null}"}`))
	f.Add([]byte(`{"oslo.version": "2.0", "oslo.message": "{\"_msg_id\": \"\\u00e9\", \"_timeout\": 30, \"z\": [1, {\"k\": \"v\"}]}"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, ok := fastEnvelopeMessage(body)
		if !ok || !utf8.Valid(body) {
			return // (invalid UTF-8: encoding/json substitutes U+FFFD, the fast path keeps the bytes)
		}
		got, err := DecodeRequest(body)
		var env struct {
			Message string `json:"oslo.message"`
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(body, &env) != nil || json.Unmarshal([]byte(env.Message), &msg) != nil || msg == nil {
			if err == nil {
				t.Fatalf("encoding/json refuses %q, DecodeRequest took it", body)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeRequest(%q): %v", body, err)
		}
		want := &Request{Context: map[string]any{}}
		for k, v := range msg {
			want.set(k, v)
		}
		compact := func(r *Request) *Request { // raw members compared as compact JSON
			c := *r
			for _, p := range []*json.RawMessage{&c.Method, &c.Args, &c.Version, &c.Namespace} {
				if len(*p) > 0 {
					var b bytes.Buffer
					_ = json.Compact(&b, *p)
					*p = b.Bytes()
				}
			}
			if c.Other != nil {
				o := map[string]json.RawMessage{}
				for k, v := range c.Other {
					var b bytes.Buffer
					_ = json.Compact(&b, v)
					o[k] = b.Bytes()
				}
				c.Other = o
			}
			return &c
		}
		if g, w := compact(got), compact(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("DecodeRequest(%q)\n got %+v\nwant %+v", body, g, w)
		}
	})
}

// FuzzValidValueMatchesEncodingJSON: the validating scanner the fast paths
// use accepts exactly what json.Valid accepts.
func FuzzValidValueMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`0`, `-0`, `01`, `-`, `1.`, `1.5e`, `1.5E+7`, `-12.5e-3`, `1e999`, `.5`, `+1`,
		`"a\u00e9\"\\\/\b\f\n\r\t"`, `"\x"`, `"\u12g4"`, "\"\x01\"", "\"\xff\xfe\"", `"abc`,
		`true`, `tru`, `falsey`, `null`, ` [ ] `, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{1: 2}`, `{"a": [1, {"b": null}]}`,
		`[1] [2]`, "\t{ }\r\n", ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkValidMatchesEncodingJSON)
}

// TestValidValueNestingLimit: encoding/json's depth limit, at and past it.
func TestValidValueNestingLimit(t *testing.T) {
	for _, n := range []int{maxNestingDepth, maxNestingDepth + 1} {
		checkValidMatchesEncodingJSON(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkValidMatchesEncodingJSON(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

func checkValidMatchesEncodingJSON(t *testing.T, b []byte) {
	end, ok := validValue(b, skipWS(b, 0), 0)
	got := ok && skipWS(b, end) == len(b)
	if want := json.Valid(b); got != want {
		t.Fatalf("validValue(%.200q) = %v, json.Valid = %v", b, got, want)
	}
	obj := forEachMember(b, func([]byte, json.RawMessage) {})
	if want := got && b[skipWS(b, 0)] == '{'; obj != want {
		t.Fatalf("forEachMember(%.200q) = %v, want %v", b, obj, want)
	}
}

// FuzzFastJSONValueMatchesEncodingJSON: context values decode exactly as
// encoding/json decodes them into an any.
func FuzzFastJSONValueMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`null`, `true`, ` false `, `"admin"`, `["admin", "member"]`, `[]`, `{}`, `1`, `-0`,
		`2.5e-3`, `1e999`, `{"a": [1, {"b": "c\n"}], "a": 2}`, `"é"`, "\"\xff\"", `[1, "x", null, [true]]`, `tru`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := fastJSONValue(b)
		var want any
		err := json.Unmarshal(b, &want)
		if ok != (err == nil) {
			t.Fatalf("fastJSONValue(%q) ok=%v, encoding/json: %v", b, ok, err)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("fastJSONValue(%q) = %#v, encoding/json %#v", b, got, want)
		}
	})
}

// FuzzDecodeReplyMatchesGenericPath: the member-by-member fast path of the
// client's reply decoding gives the same reply (or error) as decoding the
// envelope and the message with encoding/json.
func FuzzDecodeReplyMatchesGenericPath(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add([]byte(fr.BodyRaw))
	}
	f.Add([]byte(envelopePrefix + `{\"result\": {\"a\": [1, \"x\"]}, \"failure\": null, \"ending\": true, \"_msg_id\": \"m\\u00e9\", \"_unique_id\": \"u\"}"}`))
	f.Add([]byte(envelopePrefix + `{\"failure\": \"{\\\"class\\\": \\\"X\\\"}\", \"ending\": 1, \"ending\": true, \"ending\": null}"}`))
	f.Add([]byte(envelopePrefix + `{\"failure\": 3, \"_msg_id\": 7, \"_msg_id\": \"a\", \"_msg_id\": null}"}`))
	f.Add([]byte(envelopePrefix + `{\"result\": null, \"result\": 2} "}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, ok := fastEnvelopeMessage(body); !ok || !utf8.Valid(body) {
			return // (invalid UTF-8: encoding/json substitutes U+FFFD, the fast path keeps the bytes)
		}
		got, gotErr := decodeReplyBody(body)
		var want replyMessage
		msg, wantErr := unwrapEnvelope(body)
		if wantErr == nil {
			want, wantErr = decodeReply(msg)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: fast path error %v, generic path error %v", body, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if !bytes.Equal(bytes.TrimSpace(got.Result), bytes.TrimSpace(want.Result)) || got.Ending != want.Ending ||
			got.MsgID != want.MsgID || got.UniqueID != want.UniqueID || (got.Failure == nil) != (want.Failure == nil) ||
			(got.Failure != nil && *got.Failure != *want.Failure) {
			t.Fatalf("%q: fast path %+v, generic path %+v", body, got, want)
		}
	})
}
