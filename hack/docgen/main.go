// Command docgen writes the generated regions of README.md and docs/*.md
// from the code, and checks their links:
//
//	go run ./hack/docgen          # rewrite the regions (make docs)
//	go run ./hack/docgen -check   # only report stale regions and broken links
//
// A region lies between `<!-- BEGIN GENERATED: name -->` and
// `<!-- END GENERATED: name -->`; generate lists the names: the option
// tables (package config's definitions, as config/gen writes the sample),
// the Cluster API driver's label table (capi.LabelReference) and its
// add-ons' chart tables (package addons). The links checked are the
// relative ones: each must name a file of the repository, and a #fragment
// a heading or anchor of the Markdown file it names. The package's tests
// fail when a region is stale or a link broken.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	check := flag.Bool("check", false, "report stale regions and broken links; change nothing")
	flag.Parse()
	files, err := markdownFiles(*root)
	if err == nil {
		err = run(*root, files, *check)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

// markdownFiles are the files docgen looks after, relative to root:
// README.md and docs/*.md.
func markdownFiles(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	slices.Sort(files[1:])
	return files, nil
}

// run rewrites (or, with check, compares) each file's generated regions,
// then checks the links of all of them.
func run(root string, files []string, check bool) error {
	var errs []error
	for _, f := range files {
		stale, err := regenerate(root, f, !check)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		case stale && check:
			errs = append(errs, fmt.Errorf("%s: generated regions are stale: run make docs (go run ./hack/docgen)", f))
		case stale:
			fmt.Println("docgen: wrote", f)
		}
	}
	errs = append(errs, checkLinks(root, files)...)
	return errors.Join(errs...)
}

// regenerate computes file's regions and reports whether they differ from
// the file's; with write, the file is rewritten when they do.
func regenerate(root, file string, write bool) (stale bool, err error) {
	path := filepath.Join(root, file)
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	text := string(data)
	if !hasRegions(text) {
		return false, nil
	}
	fresh, err := rewrite(text, generate)
	if err != nil || fresh == text {
		return false, err
	}
	if write {
		err = os.WriteFile(path, []byte(fresh), 0o644)
	}
	return true, err
}
