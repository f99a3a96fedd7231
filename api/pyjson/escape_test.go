package pyjson

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// escapeRef is ensure_ascii escaping written rune by rune, without the
// eight-bytes-at-a-time scan: what AppendStringBody must agree with.
func escapeRef(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func TestAppendStringBodyEveryByteAtEveryOffset(t *testing.T) {
	// Each byte value alone, and at each of the eight positions of a word
	// amid bytes written as they are, and after a byte that is escaped.
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 17; pos++ {
			for _, fill := range []string{"a", "~", " ", "\x1f"} {
				s := strings.Repeat(fill, pos) + string([]byte{byte(c)}) + strings.Repeat(fill, 9)
				if got, want := string(AppendStringBody(nil, s)), escapeRef(s); got != want {
					t.Fatalf("byte %#x at %d amid %q: %q, want %q", c, pos, fill, got, want)
				}
			}
		}
	}
}

func TestAppendStringBodyRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "0", " ", "~", `"`, `\`, "\n", "\x00", "\x1f", "\x7f", "\x80", "é", "€", "😀", "\xff"}
	for n := 0; n < 5000; n++ {
		var b strings.Builder
		for k := rng.IntN(40); k > 0; k-- {
			if rng.IntN(3) == 0 {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			} else {
				b.WriteString(strings.Repeat("x", rng.IntN(12)))
			}
		}
		s := b.String()
		if got, want := string(AppendStringBody([]byte("prefix"), s)), "prefix"+escapeRef(s); got != want {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
		if got, want := string(AppendStringEscaped([]byte("prefix"), s)), "prefix"+escapeRef(`"`+escapeRef(s)+`"`); got != want {
			t.Fatalf("escaped %q: %q, want %q", s, got, want)
		}
	}
}

func FuzzAppendStringBody(f *testing.F) {
	for _, s := range []string{"", `{"a": "b\\c"}`, "héllo\x00\x7f", strings.Repeat("abcdefg\"", 5)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendStringBody(nil, s)), escapeRef(s); got != want {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
		if got, want := string(AppendStringEscaped(nil, s)), escapeRef(`"`+escapeRef(s)+`"`); got != want {
			t.Fatalf("escaped %q: %q, want %q", s, got, want)
		}
	})
}

// BenchmarkAppendStringBody escapes a 100-cluster Cluster.list result into
// an envelope, as every such reply does.
func BenchmarkAppendStringBody(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&sb, `{"magnum_object.name": "Cluster", "magnum_object.namespace": "magnum", `+
			`"magnum_object.version": "1.23", "magnum_object.data": {"id": %d, "uuid": "6e7b3a1c-1f0e-4b8e-9f3a-%012d", `+
			`"name": "bench-%d", "project_id": "b1d7d6a1f6a94f0e8f8f1d0c0c0c0c0c", "status": "CREATE_COMPLETE", `+
			`"labels": {"kube_tag": "v1.33.1", "auto_healing_enabled": "false"}, "node_count": 3, "master_count": 1, `+
			`"created_at": "2026-11-30T12:00:00Z", "updated_at": null}, "magnum_object.changes": []}, `, i, i, i)
	}
	s := sb.String()
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = AppendStringBody(dst[:0], s)
	}
}

// TestAppendEscapedIsTheTextEscaped: AppendEscaped of each kind of value
// (its direct paths and the generic one) is Append's text escaped as a
// string body.
func TestAppendEscapedIsTheTextEscaped(t *testing.T) {
	for _, v := range []any{
		map[string]string{"b": "q\"\\", "a": "\u00e9\U0001F600", "": "\x01"}, map[string]string{},
		map[string]string(nil), []string{"10.0.0.1", "\"x\"", "\n"}, []string{}, []string(nil),
		[]any{map[string]any{"k": 1.5, "l": []any{"\u2028", nil, true}}}, nil, "s\"",
	} {
		plain, err := Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendEscaped([]byte("prefix"), v)
		if want := "prefix" + escapeRef(string(plain)); err != nil || string(got) != want {
			t.Errorf("%#v: %s, %v; want %s", v, got, err, want)
		}
	}
}
