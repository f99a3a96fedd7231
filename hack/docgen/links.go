package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var (
	// inlineLinkRE finds [text](target) and ![alt](target); the target
	// may be written <like this> and be followed by a "title".
	inlineLinkRE = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]+)(?:\s+"[^"]*")?\s*\)`)
	// refDefRE finds a reference definition: [label]: target.
	refDefRE = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	// htmlAnchorRE finds <a id="x"> and <a name="x">.
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	atxHeadingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	fenceRE      = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
	mdLinkTextRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// link is one link of a Markdown file.
type link struct {
	line   int
	target string
}

// proseLines calls f with each line of text outside fenced code blocks,
// numbered from 1.
func proseLines(text string, f func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[1]
			case strings.HasPrefix(m[1], fence[:1]) && len(m[1]) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence == "" {
			f(i+1, line)
		}
	}
}

// links lists the links of a Markdown file: inline links and images, and
// reference definitions, outside code blocks and code spans.
func links(text string) []link {
	var out []link
	proseLines(text, func(n int, line string) {
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			out = append(out, link{n, m[1]})
			return
		}
		for _, m := range inlineLinkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{n, strings.Trim(m[1], "<>")})
		}
	})
	return out
}

// anchors lists the fragments a Markdown file answers to, as GitHub
// renders it: each heading's slug (a repeated one numbered -1, -2, ...)
// and each <a id> or <a name>.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	proseLines(text, func(_ int, line string) {
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := atxHeadingRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			out[s+"-"+strconv.Itoa(k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	})
	return out
}

// slug is GitHub's anchor of a heading (github-slugger): the heading's
// text without its Markdown, lower case, every character but letters,
// digits, marks, "-", "_" and spaces dropped, spaces turned into "-".
func slug(heading string) string {
	text := mdLinkTextRE.ReplaceAllString(heading, "$1")
	text = htmlTagRE.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var htmlTagRE = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)

// checkLinks checks the relative links of the Markdown files (paths
// relative to root): each must name a file or directory inside root, and
// a #fragment must be one of the anchors of the Markdown file it names.
// Links with a scheme (https:, mailto:) are not followed.
func checkLinks(root string, files []string) []error {
	var errs []error
	texts := map[string]string{}
	read := func(rel string) (string, error) {
		if t, ok := texts[rel]; ok {
			return t, nil
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", err
		}
		texts[rel] = string(data)
		return texts[rel], nil
	}
	for _, f := range files {
		text, err := read(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range links(text) {
			if err := checkLink(root, f, l.target, read); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: link %s: %w", f, l.line, l.target, err))
			}
		}
	}
	return errs
}

func checkLink(root, from, target string, read func(string) (string, error)) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if u.Scheme != "" || u.Host != "" {
		return nil
	}
	path, frag := u.Path, u.Fragment
	rel := from
	if path != "" {
		if filepath.IsAbs(path) {
			return fmt.Errorf("an absolute path: write it relative to %s", filepath.Dir(from))
		}
		rel = filepath.Clean(filepath.Join(filepath.Dir(from), filepath.FromSlash(path)))
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			return fmt.Errorf("no such file or directory %s", filepath.ToSlash(rel))
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(rel, ".md") {
		return fmt.Errorf("a #fragment of a file that is not Markdown")
	}
	text, err := read(rel)
	if err != nil {
		return err
	}
	if !anchors(text)[frag] {
		return fmt.Errorf("%s has no heading or anchor #%s", filepath.ToSlash(rel), frag)
	}
	return nil
}
