package exception

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

// TestClassConstantsNameTheirEntries: every constant has its catalogue
// entry (an entry left out of the generated table would be a zero
// classInfo), its name leads back to it, and every parent is a class.
func TestClassConstantsNameTheirEntries(t *testing.T) {
	for c := range Class(numClasses) {
		info := catalogue[c]
		if info.Name == "" || info.Code == 0 || info.Format == "" {
			t.Fatalf("class %d has no catalogue entry: %+v", c, info)
		}
		if got, ok := Lookup(c.String()); !ok || got != c {
			t.Errorf("Lookup(%q) = %d, %v, want %d", c.String(), got, ok, c)
		}
		if c == ClassMagnumException {
			continue
		}
		if _, ok := Lookup(info.Parent); !ok {
			t.Errorf("%s: parent %q is not a class", info.Name, info.Parent)
		}
		if e := c.New(nil); e.Class != info.Name || e.Module != ModuleMagnum || e.Code != info.Code {
			t.Errorf("%s.New built %+v", info.Name, e)
		}
	}
	if _, ok := Lookup("NoSuchClass"); ok {
		t.Fatal("Lookup found a class that does not exist")
	}
}

// TestCatalogueIsPythonMagnums compares the catalogue with
// magnum.common.exception of each Python release, read by the generator's
// own dump: every Python class is in the catalogue, with the same parent,
// code and format where the catalogue holds that release's definition, and
// every class the catalogue holds from a release is in it. Without the releases it skips, except in CI (pyrelease.Require).
func TestCatalogueIsPythonMagnums(t *testing.T) {
	script, err := os.ReadFile("../../hack/gen-exceptions.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) {
			r.Require(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := r.Python(ctx, "-", "dump")
			cmd.Stdin = strings.NewReader(string(script))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("gen-exceptions.py dump: %v", err)
			}
			var dump struct {
				Version string `json:"version"`
				Classes []struct {
					Name, Parent, Format string
					Code                 int
				} `json:"classes"`
			}
			if err := json.Unmarshal(out, &dump); err != nil {
				t.Fatal(err)
			}
			if dump.Version != r.Name {
				t.Fatalf("the release says it is magnum %s", dump.Version)
			}
			newest := r.Name == pyrelease.All()[len(pyrelease.All())-1].Name
			inPython := map[string]bool{}
			for _, pc := range dump.Classes {
				inPython[pc.Name] = true
				c, ok := Lookup(pc.Name)
				if !ok {
					t.Errorf("%s is missing from the catalogue", pc.Name)
					continue
				}
				// The catalogue holds the newest release's classes, and
				// the older release's for the classes only it has.
				info := catalogue[c]
				if newest != (info.Until == "") {
					continue
				}
				if info.Parent != pc.Parent || info.Code != pc.Code || info.Format != pc.Format {
					t.Errorf("%s: catalogue %s/%d/%q, Python %s/%d/%q", pc.Name,
						info.Parent, info.Code, info.Format, pc.Parent, pc.Code, pc.Format)
				}
			}
			for c := range Class(numClasses) {
				if info := catalogue[c]; (info.Until == "") == newest && !inPython[info.Name] {
					t.Errorf("%s is in the catalogue, not in magnum %s", info.Name, r.Name)
				}
			}
		})
	}
}

// TestNoClassNamedByString: outside the drivers not yet moved to the Class
// constants, no code builds a Magnum exception from a class name string;
// and where the string form is still used, the name is a class (a
// misspelling there would otherwise become MagnumException on the wire).
func TestNoClassNamedByString(t *testing.T) {
	// The Cluster API driver still names classes by string (it was being
	// split when the constants came in); it moves to them next.
	pending := "drivers/capi/"
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "New" && sel.Sel.Name != "WithMessage") {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "exception" {
				return true
			}
			pos := fset.Position(call.Pos())
			where := rel + ":" + strconv.Itoa(pos.Line)
			if !strings.HasPrefix(rel, pending) {
				t.Errorf("%s: exception.%s names the class by a string; use the Class constant's method", where, sel.Sel.Name)
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			if _, ok := Lookup(name); !ok {
				t.Errorf("%s: %q is not a class of magnum.common.exception", where, name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
