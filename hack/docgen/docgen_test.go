package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers/capi"
)

// root is the repository, seen from this package.
const root = "../.."

// TestGeneratedRegionsAreCurrent fails when a generated region of README.md
// or docs/*.md no longer matches the code: run `make docs`.
func TestGeneratedRegionsAreCurrent(t *testing.T) {
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	regions := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		regions += strings.Count(string(data), "<!-- BEGIN GENERATED: ")
		stale, err := regenerate(root, f, false)
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if stale {
			t.Errorf("%s: generated regions are stale: run `make docs` (go run ./hack/docgen)", f)
		}
	}
	// The tables this test guards are there: the labels, the add-ons'
	// versions, and the options (all of them, and the new ones).
	for _, name := range []string{"labels", "addon-versions", "options", "options:new", "options:capi_driver"} {
		if !slices.ContainsFunc(files, func(f string) bool {
			data, _ := os.ReadFile(filepath.Join(root, f))
			return strings.Contains(string(data), "<!-- BEGIN GENERATED: "+name+" -->")
		}) {
			t.Errorf("no file has the generated region %q", name)
		}
	}
	t.Logf("%d generated regions in %d files", regions, len(files))
}

// TestLinksResolve fails when a relative link or a #fragment of README.md
// or docs/*.md leads nowhere.
func TestLinksResolve(t *testing.T) {
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkLinks(root, files) {
		t.Error(err)
	}
}

// TestEveryDocIsLinked fails when a file of docs/ is linked from neither
// README.md nor another file of docs/: a reader could not find it.
func TestEveryDocIsLinked(t *testing.T) {
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(data)) {
			path, _, _ := strings.Cut(l.target, "#")
			if path == "" || strings.Contains(path, ":") {
				continue
			}
			target := filepath.Clean(filepath.Join(filepath.Dir(f), path))
			if target != f {
				linked[target] = true
			}
		}
	}
	for _, f := range files[1:] {
		if !linked[f] {
			t.Errorf("%s is linked from neither README.md nor another file of docs/", f)
		}
	}
}

func TestRewrite(t *testing.T) {
	gen := func(name string) (string, error) {
		if name == "unknown" {
			return "", errors.New("no generator of that name")
		}
		return "table " + name + "\n", nil
	}
	for _, c := range []struct{ name, in, want, err string }{
		{name: "regions replaced, the rest kept",
			in: "# T\n<!-- BEGIN GENERATED: a -->\nold\nold\n<!-- END GENERATED: a -->\ntext\n" +
				"<!-- BEGIN GENERATED: b:c -->\n<!-- END GENERATED: b:c -->\n",
			want: "# T\n<!-- BEGIN GENERATED: a -->\n\ntable a\n\n<!-- END GENERATED: a -->\ntext\n" +
				"<!-- BEGIN GENERATED: b:c -->\n\ntable b:c\n\n<!-- END GENERATED: b:c -->\n"},
		{name: "no region", in: "# T\ntext\n", want: "# T\ntext\n"},
		{name: "not closed", in: "<!-- BEGIN GENERATED: a -->\nx\n", err: `line 1: region "a" does not end`},
		{name: "closed as another", in: "<!-- BEGIN GENERATED: a -->\n<!-- END GENERATED: b -->\n",
			err: `line 2: region "a" (line 1) ends as "b"`},
		{name: "nested", in: "<!-- BEGIN GENERATED: a -->\n<!-- BEGIN GENERATED: b -->\n",
			err: `line 2: region "b" begins inside region "a" (line 1)`},
		{name: "end without begin", in: "x\n<!-- END GENERATED: a -->\n", err: `line 2: end of region "a", which did not begin`},
		{name: "unknown generator", in: "<!-- BEGIN GENERATED: unknown -->\n<!-- END GENERATED: unknown -->\n",
			err: `line 1: region "unknown": no generator of that name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := rewrite(c.in, gen)
			switch {
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Fatalf("error %v, want %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatal(err)
			case got != c.want:
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	if _, err := generate("options:no_such_group"); err == nil {
		t.Error("an unknown option group generates a table")
	}
	if _, err := generate("no-such-table"); err == nil {
		t.Error("an unknown region name generates a table")
	}
}

// TestLinkChecker runs the checker on testdata/links: each broken link
// found, and only those.
func TestLinkChecker(t *testing.T) {
	var got []string
	for _, err := range checkLinks(filepath.Join("testdata", "links"), []string{"README.md", "docs/a.md"}) {
		got = append(got, err.Error())
	}
	want := []string{
		"README.md:5: link docs/missing.md: no such file or directory docs/missing.md",
		"README.md:6: link docs/a.md#no-such-heading: docs/a.md has no heading or anchor #no-such-heading",
		"README.md:7: link #the-two-commands-2: README.md has no heading or anchor #the-two-commands-2",
		"README.md:8: link ../../outside.md: outside the repository",
		"README.md:9: link /etc/passwd: an absolute path: write it relative to .",
		"docs/a.md:3: link ../README.md#Quick-start: README.md has no heading or anchor #Quick-start",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The two commands": "the-two-commands",
		"What differs from the Python conductor (the wire does not)": "what-differs-from-the-python-conductor-the-wire-does-not",
		"Chaos suite (`make chaos`)":                                 "chaos-suite-make-chaos",
		"[capi_driver]":                                              "capi_driver",
		"[DEFAULT]":                                                  "default",
		"Debian: a package in the Python conductor's place":          "debian-a-package-in-the-python-conductors-place",
		"Container image: Kolla and openstack-helm":                  "container-image-kolla-and-openstack-helm",
		"See [the options](options.md) — generated":                  "see-the-options--generated",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestTables checks the cells the generators write for a few definitions.
func TestTables(t *testing.T) {
	min1 := 1.0
	opt := optionTable([]config.Option{
		{Group: "capi_driver", Name: "a", Type: "integer value", Unit: "seconds", Default: "60", Min: &min1,
			Help: "Seconds a <thing> | may take.", Deprecated: []string{"[capi_helm] a"}, Secret: true},
		{Group: "capi_driver", Name: "b", Type: "string value", Default: "public", Choices: []string{"public", "admin"}},
		{Group: "capi_driver", Name: "c", Type: "list value", Default: ""},
		{Group: "capi_driver", Name: "d", Type: "string value", Default: "<None>"},
	}, true)
	for _, want := range []string{
		"| `[capi_driver] a` | integer, seconds, at least 1 | `60` | Seconds a &lt;thing&gt; \\| may take. Also read as `[capi_helm] a`. Secret: never logged. |",
		"| `[capi_driver] b` | string: one of `public`, `admin` | `public` |  |",
		"| `[capi_driver] c` | list (comma-separated) | empty |  |",
		"| `[capi_driver] d` | string | unset |  |",
	} {
		if !strings.Contains(opt, want+"\n") {
			t.Errorf("option table lacks\n%s\nin\n%s", want, opt)
		}
	}
	refs, err := capi.LabelReference()
	if err != nil {
		t.Fatal(err)
	}
	labels := labelTable(refs)
	for _, want := range []string{
		"| `kube_tag` | Kubernetes version (`vX.Y.Z`) | `v1.33.4` | all | cluster |",
		"| `boot_volume_size` | integer, 0 to 16384 | `0` | all | cluster, worker nodegroup |",
		"| `auto_healing_unhealthy_timeout` | duration or seconds, 30s to 24h | the class's: `5m` | v2+ | cluster, worker nodegroup |",
		"| `extra_network_names` | list (comma- or space-separated) | — | v4+ | cluster, worker nodegroup |",
		"| `master_lb_floating_ip_enabled` | boolean | the cluster's `floating_ip_enabled` | all | cluster |",
	} {
		if !strings.Contains(labels, "\n"+want) {
			t.Errorf("label table lacks\n%s", want)
		}
	}
	if n := strings.Count(labels, "\n| `"); n != len(refs) {
		t.Errorf("label table has %d rows, the schema %d labels", n, len(refs))
	}
	if got := escapeMarkdown("`a|<b>` and <c> | d"); got != "`a\\|<b>` and &lt;c&gt; \\| d" {
		t.Errorf("escapeMarkdown: %q", got)
	}
}
