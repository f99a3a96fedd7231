package pyurl

import (
	"os"
	"os/exec"
	"testing"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"plain":       "plain",
		"s3cr%40t":    "s3cr@t",
		"%2f%2F":      "//",
		"100%":        "100%",
		"100%z":       "100%z",
		"100%zz%4":    "100%zz%4",
		"%e2%82%ac":   "\u20ac",
		"%%41":        "%A",
		"a%4":         "a%4",
		"%41%":        "A%",
		"%g1%1g%41x":  "%g1%1gAx",
		"sp ace%20ok": "sp ace ok",
	} {
		if got := Unquote(in); got != want {
			t.Errorf("Unquote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnquoteMatchesPython compares with urllib.parse.unquote itself, on
// ASCII inputs (Python decodes invalid UTF-8 with replacement characters;
// passwords in magnum.conf are text).
func TestUnquoteMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3: CI must run this comparison")
		}
		t.Skip("no python3")
	}
	inputs := []string{"s3cr%40t", "100%zz%4", "%%41", "a%4", "%41%", "%g1%1g%41x", "%7e%7E", "x%2"}
	for _, in := range inputs {
		out, err := testkit.Output(testkit.ToolTimeout, py, "-c", "import sys, urllib.parse; sys.stdout.write(urllib.parse.unquote(sys.argv[1]))", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Unquote(in); got != string(out) {
			t.Errorf("Unquote(%q) = %q, Python %q", in, got, out)
		}
	}
}
