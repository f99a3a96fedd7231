// Package version says what a build of the checkout is: the version Go
// itself stamps into a binary built from a git clone (the tag at HEAD, or a
// pseudo-version from the newest semver tag below it, "+dirty" with
// uncommitted changes), the commit, and the commit's time, which the
// packages and the image use as their one timestamp (SOURCE_DATE_EPOCH), so
// that the same commit gives the same bytes.
//
// It is computed here rather than read from a binary because Go stamps
// nothing in a git worktree or with -buildvcs=false; the packaging links it
// in instead (service.linkedVersion).
package version

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Info is what a build is made from.
type Info struct {
	// Go is the module version as Go stamps it from git: v1.2.3 at a tag,
	// v1.2.4-0.20261201155754-4609894971e1 after it, and
	// v0.0.0-20261201155754-4609894971e1 without any tag; "+dirty" when the
	// tree has uncommitted changes (untracked files count, as for Go).
	Go string
	// Revision is the full commit id of HEAD.
	Revision string
	// Time is HEAD's commit time, in UTC.
	Time time.Time
	// Dirty says the tree had uncommitted changes.
	Dirty bool
}

// timeout bounds each git command.
const timeout = 30 * time.Second

// FromGit reads the version of the module at dir, which must be the top of
// its git repository (tags then name the module's versions, as Go reads
// them for a module at the repository root).
func FromGit(ctx context.Context, dir string) (Info, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return Info{}, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, fmt.Errorf("version: %w", err)
	}
	if filepath.Clean(top) != filepath.Clean(absDir) {
		return Info{}, fmt.Errorf("version: %s is not the top of its git repository (%s)", absDir, top)
	}
	head, err := git(ctx, dir, "log", "-1", "--format=%H %ct", "HEAD")
	if err != nil {
		return Info{}, err
	}
	rev, ct, ok := strings.Cut(head, " ")
	if !ok {
		return Info{}, fmt.Errorf("version: unexpected git log output %q", head)
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("version: commit time %q: %w", ct, err)
	}
	status, err := git(ctx, dir, "status", "--porcelain")
	if err != nil {
		return Info{}, err
	}
	info := Info{Revision: rev, Time: time.Unix(secs, 0).UTC(), Dirty: status != ""}

	at, err := git(ctx, dir, "tag", "--points-at", "HEAD")
	if err != nil {
		return Info{}, err
	}
	if v := maxSemver(at); v != "" {
		info.Go = v
	} else {
		merged, err := git(ctx, dir, "tag", "--merged", "HEAD")
		if err != nil {
			return Info{}, err
		}
		info.Go = module.PseudoVersion("v0", maxSemver(merged), info.Time, rev[:12])
	}
	if info.Dirty {
		info.Go += "+dirty"
	}
	return info, nil
}

// maxSemver is the highest canonical semantic version among the tags, one a
// line ("" when there is none). A tag such as v1.2 or 1.2.3 does not name a
// Go module version and is skipped, as Go skips it.
func maxSemver(tags string) string {
	best := ""
	for _, t := range strings.Fields(tags) {
		if !semver.IsValid(t) || semver.Canonical(t) != t || semver.Major(t) != "v0" && semver.Major(t) != "v1" {
			continue
		}
		if best == "" || semver.Compare(t, best) > 0 {
			best = t
		}
	}
	return best
}

// Linked is what `magnum-conductor --version` prints: the version and the
// commit, as Go's own stamping gives them.
func (i Info) Linked() string { return i.Go + " (" + i.Revision + ")" }

// Debian is the version as a Debian package's Version field: Go's without
// the leading v, a pre-release or pseudo-version part after "~" (so that it
// sorts before the release, as in Go) with its other dashes as dots:
// v0.0.0-20261201155754-4609894971e1 is 0.0.0~20261201155754.4609894971e1,
// v1.2.4-0.20261201155754-4609894971e1 is 1.2.4~0.20261201155754.4609894971e1,
// v1.2.3-rc.1 is 1.2.3~rc.1, and "+dirty" stays. The package is native (no
// Debian revision): the packaging lives in the same tree.
func (i Info) Debian() string {
	v, build, _ := strings.Cut(strings.TrimPrefix(i.Go, "v"), "+")
	if rel, pre, ok := strings.Cut(v, "-"); ok {
		v = rel + "~" + strings.ReplaceAll(pre, "-", ".")
	}
	if build != "" {
		v += "+" + build
	}
	return v
}

// ImageTag is the version as an image tag (a Docker tag has no "+"):
// v0.0.0-20261201155754-4609894971e1, v1.2.3, v1.2.3-dirty.
func (i Info) ImageTag() string { return strings.ReplaceAll(i.Go, "+", "-") }

// SourceDateEpoch is the commit time as SOURCE_DATE_EPOCH.
func (i Info) SourceDateEpoch() string { return strconv.FormatInt(i.Time.Unix(), 10) }

func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "log.showsignature=false"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("version: git %s in %s: %w: %s", strings.Join(args, " "), dir, err, bytes.TrimSpace(stderr.Bytes()))
		}
		return "", fmt.Errorf("version: git %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Committer is HEAD's committer as "Name <email>": the Debian packages'
// default Maintainer.
func Committer(ctx context.Context, dir string) (string, error) {
	return git(ctx, dir, "log", "-1", "--format=%cn <%ce>", "HEAD")
}
