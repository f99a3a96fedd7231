package config

import (
	"strings"
)

// iniFile is one parsed configuration file: group (normalised as oslo does:
// lower case except DEFAULT) → key → every value assigned to it, in order.
type iniFile struct {
	path     string
	sections map[string]map[string][]iniValue
}

// iniValue is one assignment and the line it started on.
type iniValue struct {
	text string
	line int
}

// normalizeGroup mirrors oslo_config.cfg._normalize_group_name: group names
// are case-insensitive, except that only the exact spelling DEFAULT is the
// default group.
func normalizeGroup(name string) string {
	if name == "DEFAULT" {
		return name
	}
	return strings.ToLower(name)
}

// parseINI parses data with oslo_config.iniparser's rules:
//   - a line is right-trimmed; a blank line ends a multi-line value;
//   - a line starting with a space or tab continues the previous value
//     (lines joined with "\n", each left-trimmed);
//   - "[name]" starts a section; "#" or ";" in column 0 starts a comment
//     (there are no inline comments);
//   - "key = value" or "key: value", split at whichever of "=" and ":" comes
//     first; key and value are trimmed, and one pair of matching surrounding
//     quotes is removed from the value.
//
// It stops at the first syntax error, as oslo does.
func parseINI(path string, data string) (*iniFile, error) {
	f := &iniFile{path: path, sections: map[string]map[string][]iniValue{}}
	data = strings.ReplaceAll(data, "\r\n", "\n")
	data = strings.ReplaceAll(data, "\r", "\n")
	lines := strings.Split(data, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}

	section := ""
	var key string
	var value []string
	keyLine := 0
	flush := func() error {
		if key == "" {
			return nil
		}
		if section == "" {
			// oslo reports this at the line where the assignment ends.
			return &ParseError{File: path, Line: keyLine, Msg: "Section must be started before assignment"}
		}
		sec := f.sections[normalizeGroup(section)]
		sec[key] = append(sec[key], iniValue{text: strings.Join(value, "\n"), line: keyLine})
		key, value = "", nil
		return nil
	}

	for i, raw := range lines {
		lineno := i + 1
		line := strings.TrimRight(raw, " \t\n\r\f\v")
		switch {
		case line == "":
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		case line[0] == ' ' || line[0] == '\t':
			if key == "" {
				return nil, &ParseError{File: path, Line: lineno, Msg: "Unexpected continuation line", Text: line}
			}
			value = append(value, strings.TrimLeft(line, " \t\n\r\f\v"))
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		switch {
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return nil, &ParseError{File: path, Line: lineno, Msg: "Invalid section (must end with ])", Text: line}
			}
			if len(line) <= 2 {
				return nil, &ParseError{File: path, Line: lineno, Msg: "Empty section name", Text: line}
			}
			section = line[1 : len(line)-1]
			if _, ok := f.sections[normalizeGroup(section)]; !ok {
				f.sections[normalizeGroup(section)] = map[string][]iniValue{}
			}
		case line[0] == '#' || line[0] == ';':
			// comment
		default:
			colon := strings.IndexByte(line, ':')
			equal := strings.IndexByte(line, '=')
			if colon < 0 && equal < 0 {
				return nil, &ParseError{File: path, Line: lineno, Msg: "No ':' or '=' found in assignment", Text: line}
			}
			var k, v string
			if colon < 0 || (equal >= 0 && equal < colon) {
				k, v = line[:equal], line[equal+1:]
			} else {
				k, v = line[:colon], line[colon+1:]
			}
			v = strings.TrimSpace(v)
			if v != "" && v[0] == v[len(v)-1] && (v[0] == '"' || v[0] == '\'') {
				if len(v) == 1 {
					v = ""
				} else {
					v = v[1 : len(v)-1]
				}
			}
			k = strings.TrimSpace(k)
			if k == "" {
				return nil, &ParseError{File: path, Line: lineno, Msg: "Key cannot be empty", Text: line}
			}
			key, value, keyLine = k, []string{v}, lineno
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return f, nil
}
