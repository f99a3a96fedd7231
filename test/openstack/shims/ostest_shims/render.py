"""Renders the control plane's configuration templates: python3 -m ostest_shims.render SRC DST VARS

Not a shim: test/openstack/up's template step. Each ${NAME} in SRC is
replaced with VARS' value (a KEY=VALUE file); a line "@include FILE K=V…"
is replaced with FILE (beside SRC) rendered with K=V added. An unknown
name is an error, so a template cannot silently keep a placeholder.
"""
import os
import string
import sys


def render(path, values):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("@include "):
                words = line.split()
                extra = dict(w.split("=", 1) for w in words[2:])
                out.append(render(os.path.join(os.path.dirname(path), words[1]), {**values, **extra}))
                continue
            out.append(string.Template(line).substitute(values))
    return "".join(out)


def main():
    src, dst, var_file = sys.argv[1:4]
    values = {}
    with open(var_file) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                values[k] = v
    values.update(dict(a.split("=", 1) for a in sys.argv[4:]))
    text = render(src, values)
    old = os.umask(0o077)
    try:
        with open(dst + ".tmp", "w") as f:
            f.write(text)
        os.replace(dst + ".tmp", dst)
    finally:
        os.umask(old)


if __name__ == "__main__":
    main()
