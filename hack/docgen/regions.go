package main

import (
	"fmt"
	"regexp"
	"strings"
)

// A generated region of a Markdown file:
//
//	<!-- BEGIN GENERATED: labels -->
//	(written by docgen: do not edit)
//	<!-- END GENERATED: labels -->
//
// The markers stay; what lies between them is replaced by the output of
// the generator the name selects (see generate).
var markerRE = regexp.MustCompile(`^<!-- (BEGIN|END) GENERATED: ([a-z0-9:_-]+) -->$`)

// rewrite returns text with every generated region's content replaced by
// gen(name). A region that is not closed, closed under another name or
// nested in another, and a marker gen does not know, are errors naming the
// line.
func rewrite(text string, gen func(name string) (string, error)) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	var out strings.Builder
	open, openLine := "", 0
	for i, line := range lines {
		m := markerRE.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			if open == "" {
				out.WriteString(line)
			}
			continue
		}
		switch kind, name := m[1], m[2]; {
		case kind == "BEGIN" && open != "":
			return "", fmt.Errorf("line %d: region %q begins inside region %q (line %d)", i+1, name, open, openLine)
		case kind == "BEGIN":
			body, err := gen(name)
			if err != nil {
				return "", fmt.Errorf("line %d: region %q: %w", i+1, name, err)
			}
			out.WriteString(line)
			out.WriteString("\n" + strings.TrimSpace(body) + "\n\n")
			open, openLine = name, i+1
		case open == "":
			return "", fmt.Errorf("line %d: end of region %q, which did not begin", i+1, name)
		case name != open:
			return "", fmt.Errorf("line %d: region %q (line %d) ends as %q", i+1, open, openLine, name)
		default:
			out.WriteString(line)
			open = ""
		}
	}
	if open != "" {
		return "", fmt.Errorf("line %d: region %q does not end", openLine, open)
	}
	return out.String(), nil
}

// hasRegions says whether text has a generated region.
func hasRegions(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if markerRE.MatchString(line) {
			return true
		}
	}
	return false
}
