package config

import (
	"strings"
	"time"
)

// Option describes one option definition for the documentation: hack/docgen
// writes the option tables of docs/ from these, as config/gen writes the
// sample from the same definitions.
type Option struct {
	Group string // "DEFAULT" or the group's lower-case name
	Name  string
	// Type is the value's type as oslo-config-generator names it in the
	// sample ("integer value", "list value", ...).
	Type string
	// Unit is the unit of a time option's number: "seconds" or "minutes";
	// "" for other options.
	Unit string
	// Default is what the sample shows as the default ("<None>" for an
	// option without one, "" for an empty one).
	Default    string
	Help       string
	Min, Max   *float64
	Choices    []string
	Deprecated []string // older spellings still read, as "[group] name", in order of preference
	Secret     bool     // never printed (LogValue, the Guru Meditation Report)
	// New: an option of this conductor's own, which neither Magnum's
	// Python services nor the oslo libraries have.
	New bool
}

// Options returns every option definition, in the order of the sample:
// group by group as Config declares them, each group's options in
// declaration order.
func Options() ([]Option, error) {
	defs, err := definitions()
	if err != nil {
		return nil, err
	}
	out := make([]Option, 0, len(defs))
	for _, d := range defs {
		o := Option{Group: d.group, Name: d.name, Type: d.typeName(), Help: d.help, Min: d.min, Max: d.max,
			Choices: d.choices, Secret: d.secret, New: d.new,
			Default: strings.Join(d.sampleDefaults(), "\n")}
		switch d.unit {
		case time.Second:
			o.Unit = "seconds"
		case time.Minute:
			o.Unit = "minutes"
		}
		for _, dn := range d.deprecated {
			o.Deprecated = append(o.Deprecated, "["+dn.group+"] "+dn.name)
		}
		out = append(out, o)
	}
	return out, nil
}
