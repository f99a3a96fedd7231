package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
)

// generate returns the content of the generated region name:
//
//	options           every option, a table per group under a "## [group]" heading
//	options:<group>   one group's options ("options:capi_driver")
//	options:new       the options of this conductor's own (config's new tag), every group
//	labels            the Cluster API driver's labels (capi.LabelReference)
//	addon-charts      the built-in add-ons' charts and repositories (package addons)
//	addon-versions    their chart versions by Kubernetes minor (addons.Versions)
func generate(name string) (string, error) {
	switch {
	case name == "labels":
		refs, err := capi.LabelReference()
		if err != nil {
			return "", err
		}
		return labelTable(refs), nil
	case name == "addon-charts":
		return addonChartTable(), nil
	case name == "addon-versions":
		return addonVersionTable(), nil
	case name == "options" || strings.HasPrefix(name, "options:"):
		opts, err := config.Options()
		if err != nil {
			return "", err
		}
		return optionTables(name, opts)
	}
	return "", fmt.Errorf("no generator of that name")
}

// optionTables renders the options region name selects.
func optionTables(name string, opts []config.Option) (string, error) {
	switch group, _ := strings.CutPrefix(name, "options:"); {
	case name == "options":
		var b strings.Builder
		for i := 0; i < len(opts); {
			j := i
			for j < len(opts) && opts[j].Group == opts[i].Group {
				j++
			}
			fmt.Fprintf(&b, "## [%s]\n\n%s\n", opts[i].Group, optionTable(opts[i:j], false))
			i = j
		}
		return b.String(), nil
	case group == "new":
		var sel []config.Option
		for _, o := range opts {
			if o.New {
				sel = append(sel, o)
			}
		}
		return optionTable(sel, true), nil
	default:
		var sel []config.Option
		for _, o := range opts {
			if o.Group == group {
				sel = append(sel, o)
			}
		}
		if len(sel) == 0 {
			return "", fmt.Errorf("no option group %q", group)
		}
		return optionTable(sel, false), nil
	}
}

// optionTable is one Markdown table of options; withGroup names each
// option's group beside it.
func optionTable(opts []config.Option, withGroup bool) string {
	var b strings.Builder
	b.WriteString("| option | type | default | what |\n|---|---|---|---|\n")
	for _, o := range opts {
		name := "`" + o.Name + "`"
		if withGroup {
			name = "`[" + o.Group + "] " + o.Name + "`"
		}
		what := escapeText(o.Help)
		if len(o.Deprecated) > 0 {
			what += " Also read as " + codeList(o.Deprecated) + "."
		}
		if o.Secret {
			what += " Secret: never logged."
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, optionType(o), optionDefault(o), strings.TrimSpace(what))
	}
	return b.String()
}

func optionType(o config.Option) string {
	t := strings.TrimSuffix(o.Type, " value")
	switch t {
	case "floating point":
		t = "float"
	case "multi valued":
		t = "multi-valued (the key repeats)"
	case "list":
		t = "list (comma-separated)"
	case "dict":
		t = "dict (`key:value,…`)"
	}
	if o.Unit != "" {
		t += ", " + o.Unit
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch {
	case len(o.Choices) > 0:
		t += ": one of " + codeList(o.Choices)
	case o.Min != nil && o.Max != nil:
		t += ", " + num(o.Min) + " to " + num(o.Max)
	case o.Min != nil:
		t += ", at least " + num(o.Min)
	case o.Max != nil:
		t += ", at most " + num(o.Max)
	}
	return t
}

func optionDefault(o config.Option) string {
	switch o.Default {
	case "<None>":
		return "unset"
	case "":
		return "empty"
	}
	return code(strings.ReplaceAll(o.Default, "\n", " "))
}

// labelTable is the table of the Cluster API driver's labels.
func labelTable(refs []capi.LabelRef) string {
	var b strings.Builder
	b.WriteString("| label | type | default | class | set on | what it does here | anchors |\n|---|---|---|---|---|---|---|\n")
	for _, r := range refs {
		def := "—"
		switch {
		case r.Default != "":
			def = code(r.Default)
		case r.Unset != "":
			def = escapeMarkdown(r.Unset)
		}
		class := "all"
		if r.Class != "" {
			class = r.Class + "+"
		}
		on := "cluster"
		if r.NodeGroup {
			on = "cluster, worker nodegroup"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Name, labelType(r.LabelSpec), def, class, on,
			escapeMarkdown(r.Help), escapeMarkdown(r.Anchors))
	}
	return b.String()
}

func labelType(l capi.LabelSpec) string {
	bounds := func(unit func(int64) string) string {
		switch {
		case l.Min != nil && l.Max != nil:
			return ", " + unit(*l.Min) + " to " + unit(*l.Max)
		case l.Min != nil:
			return ", at least " + unit(*l.Min)
		case l.Max != nil:
			return ", at most " + unit(*l.Max)
		}
		return ""
	}
	plain := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch l.Type {
	case capi.LabelString:
		return "string"
	case capi.LabelInt:
		return "integer" + bounds(plain)
	case capi.LabelBool:
		return "boolean"
	case capi.LabelVersion:
		return "Kubernetes version (`vX.Y.Z`)"
	case capi.LabelCIDR:
		return "CIDR"
	case capi.LabelCIDRs:
		return "CIDRs (comma-separated)"
	case capi.LabelList:
		if l.SpaceSeparated {
			return "list (comma- or space-separated)"
		}
		return "list (comma-separated)"
	case capi.LabelPairs:
		return "list of `key=value` (comma-separated)"
	case capi.LabelEnum:
		return "one of " + codeList(l.Enum)
	case capi.LabelDuration:
		return "duration or seconds" + bounds(seconds)
	case capi.LabelIntOrPercent:
		return "count or percentage" + bounds(plain)
	}
	return string(l.Type)
}

// seconds writes n seconds the way the labels take durations: 30s, 5m, 24h.
func seconds(n int64) string {
	switch {
	case n != 0 && n%3600 == 0:
		return fmt.Sprintf("%dh", n/3600)
	case n != 0 && n%60 == 0:
		return fmt.Sprintf("%dm", n/60)
	}
	return fmt.Sprintf("%ds", n)
}

// addonChartTable lists the built-in add-ons: the name their per-add-on
// options take, the chart and the repository it comes from.
func addonChartTable() string {
	var b strings.Builder
	b.WriteString("| add-on (name in `addon_chart_*`) | chart | repository |\n|---|---|---|\n")
	for _, n := range addons.Names {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", n, addons.DefaultCharts[n], addons.DefaultRepos[n])
	}
	return b.String()
}

// addonVersionTable is addons.Versions by Kubernetes minor, the add-ons
// whose versions agree in every row sharing a column.
func addonVersionTable() string {
	minors := slices.SortedFunc(maps.Keys(addons.Versions), func(a, b string) int {
		return compareMinor(a, b)
	})
	type column struct {
		charts []string
		first  string // the add-on whose versions the column shows
	}
	var cols []column
	for _, n := range addons.Names {
		chart := addons.DefaultCharts[n]
		if !strings.Contains(chart, n) {
			chart += " (" + n + ")"
		}
		i := slices.IndexFunc(cols, func(c column) bool {
			for _, m := range minors {
				if addons.Versions[m][c.first] != addons.Versions[m][n] {
					return false
				}
			}
			return true
		})
		if i < 0 {
			cols = append(cols, column{first: n})
			i = len(cols) - 1
		}
		cols[i].charts = append(cols[i].charts, chart)
	}
	var b strings.Builder
	b.WriteString("| Kubernetes |")
	for _, c := range cols {
		b.WriteString(" " + strings.Join(c.charts, ", ") + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, m := range minors {
		b.WriteString("| " + m + " |")
		for _, c := range cols {
			b.WriteString(" " + addons.Versions[m][c.first] + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// compareMinor orders "1.9" before "1.10".
func compareMinor(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(pa), len(pb)) {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return len(pa) - len(pb)
}

func code(s string) string {
	if strings.Contains(s, "`") {
		return "<code>" + escapeText(s) + "</code>"
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

// escapeText makes plain text (an option's help) safe in a table cell:
// no cell separator, no HTML tag, no emphasis.
func escapeText(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "\n", " ").Replace(s)
}

// escapeMarkdown makes Markdown text (a label's help, with `code` spans)
// safe in a table cell: "|" escaped everywhere (GFM splits cells on it even
// in code spans), "<" and ">" outside code spans.
func escapeMarkdown(s string) string {
	var b strings.Builder
	inCode := false
	for _, r := range strings.ReplaceAll(s, "\n", " ") {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case r == '|':
			b.WriteString(`\|`)
		case !inCode && r == '<':
			b.WriteString("&lt;")
		case !inCode && r == '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
