package capi

import (
	"fmt"
	"slices"
)

// LabelRef is one label of DefaultLabelSchema as the documentation shows
// it: hack/docgen writes the label table of docs/capi-driver.md from these
// (make docs).
type LabelRef struct {
	LabelSpec
	// Class is the oldest embedded ClusterClass version whose class can
	// apply the label (it declares the label's variable); "" when the
	// driver applies the label itself, on every class.
	Class string
	// NodeGroup: a worker nodegroup's own value of the label overrides the
	// cluster's for that nodegroup; every other label is the cluster's.
	NodeGroup bool
}

// LabelReference returns DefaultLabelSchema in its order, each label with
// the oldest embedded class that applies it.
func LabelReference() ([]LabelRef, error) {
	var classes classSet // the embedded bundles
	declared := map[string]map[string]bool{}
	for _, v := range ClassVersions() {
		vars, err := classes.variables(v)
		if err != nil {
			return nil, err
		}
		declared[v] = vars
	}
	var out []LabelRef
	for _, l := range DefaultLabelSchema() {
		r := LabelRef{LabelSpec: l, NodeGroup: slices.Contains(workerNodeGroupLabels, l.Name)}
		if l.Variable != "" {
			for _, v := range ClassVersions() {
				if declared[v][l.Variable] {
					r.Class = v
					break
				}
			}
			if r.Class == "" {
				return nil, fmt.Errorf("capi: label %s: no embedded ClusterClass declares its variable %s", l.Name, l.Variable)
			}
		}
		out = append(out, r)
	}
	return out, nil
}
