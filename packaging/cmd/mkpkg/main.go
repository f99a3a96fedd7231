// Command mkpkg builds the project's packages from a checkout: the Debian
// packages (dpkg-deb) and the conductor's OCI image (no container daemon),
// both reproducible from the commit. `make deb` and `make image` run it.
//
//	mkpkg -src CHECKOUT -out DIR [-goarch ARCH] version|deb|image|all
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/openstack/magnum-conductor/packaging/deb"
	"github.com/openstack/magnum-conductor/packaging/gobuild"
	"github.com/openstack/magnum-conductor/packaging/oci"
	"github.com/openstack/magnum-conductor/packaging/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkpkg:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("mkpkg", flag.ContinueOnError)
	src := fl.String("src", "..", "the checkout (module root of github.com/openstack/magnum-conductor)")
	out := fl.String("out", "dist", "directory the packages are written to")
	goarch := fl.String("goarch", "", "target architecture (default: the host's)")
	maintainer := fl.String("maintainer", os.Getenv("DEB_MAINTAINER"),
		"the Debian packages' Maintainer, \"Name <email>\" (default: $DEB_MAINTAINER, else the commit's committer)")
	fl.Usage = func() {
		_, _ = fmt.Fprintln(fl.Output(), "usage: mkpkg [flags] version|deb|image|all") // as flag's own usage output, unchecked
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return fmt.Errorf("want one of version, deb, image, all")
	}
	what := fl.Arg(0)
	switch what {
	case "version", "deb", "image", "all":
	default:
		fl.Usage()
		return fmt.Errorf("unknown target %q", what)
	}

	info, err := version.FromGit(ctx, *src)
	if err != nil {
		return err
	}
	if what == "version" {
		fmt.Printf("go %s\ndebian %s\nimage %s\nrevision %s\ntime %s\n",
			info.Go, info.Debian(), info.ImageTag(), info.Revision, info.Time.Format("2006-01-02T15:04:05Z"))
		return nil
	}
	if *goarch == "" {
		if *goarch, err = gobuild.HostGOARCH(ctx); err != nil {
			return err
		}
	}
	if info.Dirty {
		fmt.Fprintf(os.Stderr, "mkpkg: the tree has uncommitted changes: the version is %s, and the same version may name other bytes\n", info.Go)
	}
	binDir, err := os.MkdirTemp("", "mkpkg-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	bins, err := gobuild.Build(ctx, gobuild.Options{Src: *src, Out: binDir, GOARCH: *goarch, Version: info})
	if err != nil {
		return err
	}
	if what == "deb" || what == "all" {
		m := *maintainer
		if m == "" {
			if m, err = version.Committer(ctx, *src); err != nil {
				return err
			}
		}
		paths, err := deb.Build(ctx, deb.Options{Binaries: bins, Src: *src, Version: info, GOARCH: *goarch,
			Maintainer: m, Out: *out})
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Println(p)
		}
	}
	if what == "image" || what == "all" {
		p := filepath.Join(*out, oci.FileName(info, *goarch))
		if err := oci.Build(ctx, oci.Options{Binaries: bins, Src: *src, Version: info, GOARCH: *goarch, Out: p}); err != nil {
			return err
		}
		fmt.Println(p)
	}
	return nil
}
