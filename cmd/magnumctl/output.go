package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
)

// table is what a command prints: rows for --output table, value for
// --output json.
type table struct {
	header []string
	rows   [][]string
	value  any
}

func (g *globals) print(t table) error {
	if g.output == "json" {
		enc := json.NewEncoder(g.out)
		enc.SetIndent("", "  ")
		return enc.Encode(t.value)
	}
	w := tabwriter.NewWriter(g.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// fieldsOf returns an object's set fields as a plain map (its primitive's
// data), for JSON output and for "show".
func fieldsOf(o objects.Object) map[string]any {
	prim, err := objects.Encode(o, objects.NewestVersion(o.ObjName()), objects.Manifest(o))
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	data, _ := prim[objects.KeyData].(map[string]any)
	delete(data, "cluster_template")
	return data
}

// showTable prints one object as field/value rows; the always fields are
// shown even when the object leaves them unset.
func showTable(o objects.Object, always ...string) table {
	data := fieldsOf(o)
	for _, k := range always {
		if _, ok := data[k]; !ok {
			data[k] = nil
		}
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := table{header: []string{"FIELD", "VALUE"}, value: data}
	for _, k := range keys {
		t.rows = append(t.rows, []string{k, cell(data[k])})
	}
	return t
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case *string:
		if x == nil || *x == "" {
			return "-"
		}
		return *x
	case *int64:
		if x == nil {
			return "-"
		}
		return fmt.Sprint(*x)
	case *time.Time:
		if x == nil {
			return "-"
		}
		return x.UTC().Format(time.RFC3339)
	case map[string]any, []any, map[string]string, []string:
		b, _ := json.Marshal(x)
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}
