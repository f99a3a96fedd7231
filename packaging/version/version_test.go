package version

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFromGitMatchesGo builds a small module in a throw-away git repository
// at each kind of revision and checks that FromGit computes the version Go
// itself stamps into the binary.
func TestFromGitMatchesGo(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(msg string) {
		t.Helper()
		write("n.txt", msg)
		run("git", "add", "-A")
		run("git", "commit", "-q", "-m", msg)
	}
	goVersion := func() string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "m")
		run("go", "build", "-buildvcs=true", "-o", bin, ".")
		return run(bin)
	}

	run("git", "init", "-q")
	write("go.mod", "module example.org/m\n\ngo 1.22\n")
	write("main.go", "package main\n\nimport (\n\t\"fmt\"\n\t\"runtime/debug\"\n)\n\n"+
		"func main() {\n\tbi, _ := debug.ReadBuildInfo()\n\tfmt.Print(bi.Main.Version)\n}\n")
	write(".gitignore", "/m\n")
	commit("first")

	steps := []struct {
		name   string
		before func()
		want   func(Info) bool
	}{
		{"untagged", func() {}, func(i Info) bool { return strings.HasPrefix(i.Go, "v0.0.0-") }},
		{"tagged", func() { run("git", "tag", "v1.2.3") }, func(i Info) bool { return i.Go == "v1.2.3" }},
		{"after a tag", func() { commit("second") }, func(i Info) bool { return strings.HasPrefix(i.Go, "v1.2.4-0.") }},
		{"after a pre-release tag", func() { run("git", "tag", "v1.3.0-rc.1"); commit("third") },
			func(i Info) bool { return strings.HasPrefix(i.Go, "v1.3.0-rc.1.0.") }},
		{"non-semver tags are not versions", func() { run("git", "tag", "v2.0"); run("git", "tag", "release-9") },
			func(i Info) bool { return strings.HasPrefix(i.Go, "v1.3.0-rc.1.0.") }},
		{"dirty", func() { write("untracked.txt", "x") }, func(i Info) bool { return strings.HasSuffix(i.Go, "+dirty") && i.Dirty }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.before()
			info, err := FromGit(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := goVersion(); info.Go != got {
				t.Errorf("FromGit says %q, go build stamps %q", info.Go, got)
			}
			if !s.want(info) {
				t.Errorf("version %q is not the kind expected here", info.Go)
			}
			if len(info.Revision) != 40 || info.Time.IsZero() || info.Time.After(time.Now()) {
				t.Errorf("revision %q, time %v", info.Revision, info.Time)
			}
		})
	}
}

func TestFromGitRefusesASubdirectory(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FromGit(context.Background(), sub); err == nil || !strings.Contains(err.Error(), "not the top") {
		t.Fatalf("FromGit of a subdirectory: %v, want an error saying it is not the top", err)
	}
}

func TestDebianAndImageTag(t *testing.T) {
	for _, c := range []struct{ gov, deb, tag string }{
		{"v0.0.0-20261201155754-4609894971e1", "0.0.0~20261201155754.4609894971e1", "v0.0.0-20261201155754-4609894971e1"},
		{"v0.0.0-20261201155754-4609894971e1+dirty", "0.0.0~20261201155754.4609894971e1+dirty", "v0.0.0-20261201155754-4609894971e1-dirty"},
		{"v1.2.3", "1.2.3", "v1.2.3"},
		{"v1.2.4-0.20261201155754-4609894971e1", "1.2.4~0.20261201155754.4609894971e1", "v1.2.4-0.20261201155754-4609894971e1"},
		{"v1.3.0-rc.1", "1.3.0~rc.1", "v1.3.0-rc.1"},
		{"v1.3.0-rc.1.0.20261201155754-4609894971e1", "1.3.0~rc.1.0.20261201155754.4609894971e1", "v1.3.0-rc.1.0.20261201155754-4609894971e1"},
	} {
		i := Info{Go: c.gov}
		if got := i.Debian(); got != c.deb {
			t.Errorf("Debian(%s) = %s, want %s", c.gov, got, c.deb)
		}
		if got := i.ImageTag(); got != c.tag {
			t.Errorf("ImageTag(%s) = %s, want %s", c.gov, got, c.tag)
		}
	}
}

// TestDebianVersionsSortAsGoVersions checks the mapping with dpkg itself:
// what Go orders before, dpkg orders before.
func TestDebianVersionsSortAsGoVersions(t *testing.T) {
	ordered := []string{
		"v0.0.0-20261201155754-4609894971e1",
		"v0.0.0-20261202000000-0123456789ab",
		"v1.2.3-rc.1",
		"v1.2.3",
		"v1.2.4-0.20261201155754-4609894971e1",
		"v1.3.0-rc.1.0.20261201155754-4609894971e1",
		"v1.3.0",
	}
	for k := 1; k < len(ordered); k++ {
		a, b := Info{Go: ordered[k-1]}.Debian(), Info{Go: ordered[k]}.Debian()
		if out, err := exec.Command("dpkg", "--compare-versions", a, "lt", b).CombinedOutput(); err != nil {
			t.Errorf("dpkg does not order %s before %s: %v %s", a, b, err, out)
		}
	}
}
