package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// sampleWidth is oslo-config-generator's default --wrap-width.
const sampleWidth = 70

// WriteSample writes a magnum.conf sample in oslo-config-generator's style:
// each group's header, then per option its wrapped "#" help with the type,
// bounds, choices and deprecated names, and "#name = default".
func WriteSample(w io.Writer) error {
	defs, err := definitions()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# magnum.conf sample for magnum-conductor (Go).")
	fmt.Fprintln(bw, "# Generated from the option definitions in config/options.go by")
	fmt.Fprintln(bw, "# `go run ./config/gen` (make sample). Do not edit by hand.")
	group := ""
	for _, d := range defs {
		if d.group != group {
			group = d.group
			fmt.Fprintf(bw, "\n[%s]\n\n", group)
		}
		writeOpt(bw, d)
	}
	return bw.Flush()
}

func writeOpt(w *bufio.Writer, d *optDef) {
	help := d.help
	if help == "" {
		help = "(" + d.typeName() + ")"
	} else {
		help += " (" + d.typeName() + ")"
	}
	writeWrapped(w, help)
	if d.choices == nil {
		if d.min != nil {
			fmt.Fprintf(w, "# Minimum value: %s\n", strconv.FormatFloat(*d.min, 'g', -1, 64))
		}
		if d.max != nil {
			fmt.Fprintf(w, "# Maximum value: %s\n", strconv.FormatFloat(*d.max, 'g', -1, 64))
		}
	} else {
		fmt.Fprintln(w, "# Possible values:")
		for _, c := range d.choices {
			writeWrapped(w, c+" - <No description provided>")
		}
	}
	for _, dn := range d.deprecated {
		if !strings.Contains(dn.name, "-") {
			fmt.Fprintf(w, "# Deprecated group/name - [%s]/%s\n", dn.group, dn.name)
		}
	}
	if d.hasSample {
		fmt.Fprint(w, "#\n# This option has a sample default set, which means that\n"+
			"# its actual default value may vary from the one documented\n# below.\n")
	}
	for _, v := range d.sampleDefaults() {
		if v != "" {
			v = " " + strings.ReplaceAll(v, "\n", "\n#    ")
		}
		fmt.Fprintf(w, "#%s =%s\n", d.name, v)
	}
	fmt.Fprintln(w)
}

// sampleDefaults formats the default as oslo's format_defaults does.
func (d *optDef) sampleDefaults() []string {
	switch {
	case d.hasSample:
		return []string{d.sample}
	case !d.hasDefault && (d.kind == kindList || d.kind == kindMulti):
		return []string{""}
	case !d.hasDefault:
		return []string{"<None>"}
	case d.kind == kindString && strings.TrimSpace(d.def) != d.def:
		return []string{`"` + d.def + `"`}
	}
	return []string{d.def}
}

// writeWrapped writes text as "# " lines of at most sampleWidth columns,
// breaking at spaces and never inside a word (textwrap.wrap with
// break_long_words=False).
func writeWrapped(w *bufio.Writer, text string) {
	for _, para := range strings.Split(text, "\n") {
		words := strings.Fields(para)
		if len(words) == 0 {
			fmt.Fprintln(w, "#")
			continue
		}
		line := "# " + words[0]
		for _, word := range words[1:] {
			if len(line)+1+len(word) > sampleWidth {
				fmt.Fprintln(w, line)
				line = "# " + word
				continue
			}
			line += " " + word
		}
		fmt.Fprintln(w, line)
	}
}
