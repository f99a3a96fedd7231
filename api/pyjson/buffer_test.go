package pyjson

import (
	"encoding/json"
	"testing"
)

func TestBufferIsWrittenAsItIs(t *testing.T) {
	b := GetBuffer()
	b.B = append(b.B, `[{"a": 1}, "x"]`...)
	got, err := Append([]byte("{\"result\": "), map[string]any{"k": b})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"result": {"k": [{"a": 1}, "x"]}`; string(got) != want {
		t.Errorf("Append = %s, want %s", got, want)
	}
	m, err := json.Marshal(struct{ V *Buffer }{b})
	if err != nil || string(m) != `{"V":[{"a":1},"x"]}` {
		t.Errorf("json.Marshal = %s, %v", m, err)
	}
	for _, empty := range []*Buffer{nil, {}} {
		if got, err := Append(nil, empty); err != nil || string(got) != "null" {
			t.Errorf("Append(%#v) = %s, %v; want null", empty, got, err)
		}
		if m, err := json.Marshal(struct{ V *Buffer }{empty}); err != nil || string(m) != `{"V":null}` {
			t.Errorf("json.Marshal(%#v) = %s, %v", empty, m, err)
		}
	}
}

// TestEscapedBufferIsWrittenAsTheTextItHolds: a Buffer holding its text
// escaped as a string body is written as that text by Append and
// MarshalJSON, and the pool hands it out again unescaped.
func TestEscapedBufferIsWrittenAsTheTextItHolds(t *testing.T) {
	text := `[{"a": "q\"\\\u00e9"}, "x"]`
	b := GetBuffer()
	b.B, b.Escaped = AppendStringBody(b.B, text), true
	got, err := Append(nil, map[string]any{"k": b})
	if err != nil || string(got) != `{"k": `+text+`}` {
		t.Errorf("Append = %s, %v", got, err)
	}
	if m, err := b.MarshalJSON(); err != nil || string(m) != text {
		t.Errorf("MarshalJSON = %s, %v", m, err)
	}
	bad := &Buffer{B: []byte(`"`), Escaped: true} // not a string body
	if _, err := Append(nil, bad); err == nil {
		t.Errorf("Append of a broken escaped buffer: no error")
	}
	b.Release()
	for range 3 {
		if n := GetBuffer(); n.Escaped {
			t.Errorf("GetBuffer handed out an escaped buffer")
		}
	}
}

func TestBufferRelease(t *testing.T) {
	b := GetBuffer()
	b.B = append(b.B, "some reply"...)
	b.Release()
	if len(b.B) != 0 {
		t.Errorf("a released buffer keeps %q", b.B)
	}
	// Whatever the pool hands out next is empty.
	for range 3 {
		if n := GetBuffer(); len(n.B) != 0 {
			t.Errorf("GetBuffer = %q, want empty", n.B)
		}
	}
	big := &Buffer{B: make([]byte, 1, maxPooled+1)}
	big.Release() // too big to keep: left as it is for the collector
	if len(big.B) != 1 {
		t.Errorf("a buffer over maxPooled was reset: it went into the pool")
	}
	var none *Buffer
	none.Release()
	Release(nil)
	Release(Raw("x"))
	r := GetBuffer()
	r.B = append(r.B, 'x')
	Release(r)
	if len(r.B) != 0 {
		t.Errorf("Release(*Buffer) did not release it")
	}
}
