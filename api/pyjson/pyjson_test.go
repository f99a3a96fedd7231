package pyjson

import (
	"encoding/json"
	"testing"
)

// TestAppendWritesPythonsLayout: the expected strings are what Python's
// json.dumps(v, sort_keys=True) prints for the same values.
func TestAppendWritesPythonsLayout(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"b": []any{1, "x", nil, true}, "a": map[string]any{}}, `{"a": {}, "b": [1, "x", null, true]}`},
		{"\u00e9\U0001F600\x01\"\\</>\x7f", `"\u00e9\ud83d\ude00\u0001\"\\</>\u007f"`},
		{[]string{"a", "b"}, `["a", "b"]`},
		{Raw(`{"k": [1, 2]}`), `{"k": [1, 2]}`},
		{[]any{Raw(`"x"`), Raw(nil)}, `["x", null]`},
		{json.RawMessage(`{"a":1,"b":"\u00e9"}`), `{"a": 1, "b": "\u00e9"}`},
		{map[string]string{"z": "1", "a": "2"}, `{"a": "2", "z": "1"}`},
	} {
		got, err := Append(nil, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("Append(%#v) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
}

func TestRawMarshalsAsItsJSON(t *testing.T) {
	b, err := json.Marshal([]any{Raw(`{"a": 1}`), Raw(nil)})
	if err != nil || string(b) != `[{"a":1},null]` {
		t.Fatalf("got %s, %v", b, err)
	}
}
