#!/usr/bin/python3
"""Regenerates api/exception/catalogue.go from the two Python releases.

The catalogue is Magnum 23.0.0's (2026.2) magnum/common/exception.py, plus
the classes 15.0.1 (2023.1) has and 23.0.0 dropped, kept so that a 15.0.1
peer can still be answered with them.

Usage (from the repository root, after `make services`):
  /usr/bin/python3 hack/gen-exceptions.py dump > /tmp/exc-15.json
  chroot /srv/magnum-2026.2 /usr/bin/python3 - dump < hack/gen-exceptions.py > /tmp/exc-23.json
  /usr/bin/python3 hack/gen-exceptions.py go /tmp/exc-23.json /tmp/exc-15.json | gofmt > api/exception/catalogue.go
"""
import importlib.metadata
import inspect
import json
import sys


def dump():
    from magnum.common import exception as e
    classes = [c for _, c in inspect.getmembers(e, inspect.isclass)
               if issubclass(c, e.MagnumException) and
               c.__module__ == e.__name__]
    out = []
    for c in classes:
        parent = c.__mro__[1].__name__ if c is not e.MagnumException else ""
        out.append({'name': c.__name__, 'parent': parent, 'depth': len(c.__mro__),
                    'code': c.code, 'format': str(c.message)})
    json.dump({'version': importlib.metadata.version('magnum'), 'classes': out},
              sys.stdout, indent=1, sort_keys=True)


def go(new_path, old_path):
    with open(new_path) as f:
        new = json.load(f)
    with open(old_path) as f:
        old = json.load(f)
    names = {c['name'] for c in new['classes']}
    kept = [c for c in old['classes'] if c['name'] not in names]
    key = lambda c: (c['depth'], c['name'])  # noqa: E731 parents first
    newest = sorted(new['classes'], key=key)
    older = sorted(kept, key=key)
    print("// Code generated from magnum %s's magnum/common/exception.py, with the classes "
          "only %s has, by hack/gen-exceptions.py; DO NOT EDIT.\n" % (new['version'], old['version']))
    print("package exception\n")
    print("// The classes of magnum.common.exception: Magnum " + new['version'] + "'s, then")
    print("// the classes of " + old['version'] + " that " + new['version'] + " dropped. A class is")
    print("// named by its constant, so a misspelt class does not compile.")
    print("const (")
    for i, c in enumerate(newest):
        print("\tClass%s%s" % (c['name'], " Class = iota" if i == 0 else ""))
    print("\t// Only in %s." % old['version'])
    for c in older:
        print("\tClass%s" % c['name'])
    print("\n\tnumClasses // the number of classes, not a class")
    print(")\n")
    print("// catalogue is every class's name, parent, HTTP code and message format")
    print("// (Python %-style).")
    print("var catalogue = [numClasses]classInfo{")
    for c in newest:
        print("\tClass%s: {Name: %s, Parent: %s, Code: %d, Format: %s}," % (
            c['name'], json.dumps(c['name']), json.dumps(c['parent']), c['code'], json.dumps(c['format'])))
    for c in older:
        print("\tClass%s: {Name: %s, Parent: %s, Code: %d, Format: %s, Until: %s}," % (
            c['name'], json.dumps(c['name']), json.dumps(c['parent']), c['code'], json.dumps(c['format']),
            json.dumps(new['version'])))
    print("}")


if __name__ == '__main__':
    if sys.argv[1:2] == ['dump']:
        dump()
    elif sys.argv[1:2] == ['go'] and len(sys.argv) == 4:
        go(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
