package db

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzJSONDictFastPathMatchesEncodingJSON: the flat-object fast path of
// jsonDict.Scan gives exactly what decoding with encoding/json and Python's
// str() of each value gives, on every input it accepts.
func FuzzJSONDictFastPathMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a": "b"}`, `{"kube_tag": "v1.30.1", "auto_healing_enabled": "true"}`,
		`{"a": "1", "a": "2"}`, `{"a": 1}`, `{"a": "\u00e9"}`, `{"a": "b",}`, `{"a" "b"}`, `{"a": "b"} x`, `[]`, `null`,
		"{\"a\": \"\x01\"}", "{\"\xff\": \"b\"}", `{"a":"b","c":"d"}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := flatStringObject(b)
		if !ok {
			return
		}
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
			t.Fatalf("fast path took %q, encoding/json: %v", b, err)
		}
		want := jsonDict{}
		for k, v := range raw {
			want[k] = pyStr(v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %v, encoding/json %v", b, got, want)
		}
	})
}
