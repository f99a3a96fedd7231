"""Runs a service by its console script's name: python3 -m ostest_shims.run NAME ARGS...

Why: the chroot installs only the services' python3-* libraries, not the
packages (nova-api, neutron-server…) whose init scripts and maintainer
scripts would start and configure them system-wide; those packages are what
ship /usr/bin/nova-api and the like. The entry points are in the libraries'
metadata, so this runs the one named, as the missing script would.
"""
import importlib.metadata
import sys


def main():
    name = sys.argv[1]
    eps = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == name]
    if not eps:
        sys.exit("no console script %s" % name)
    sys.argv = [name] + sys.argv[2:]
    sys.exit(eps[0].load()())


if __name__ == "__main__":
    main()
