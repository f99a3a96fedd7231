#!/usr/bin/python3
"""Regenerates api/exception/catalogue.go from Debian's python3-magnum.

Usage: /usr/bin/python3 hack/gen-exceptions.py > api/exception/catalogue.go
"""
import inspect
import json
import sys

sys.path.insert(0, '/usr/lib/python3/dist-packages')
from magnum.common import exception as e  # noqa: E402

classes = [c for _, c in inspect.getmembers(e, inspect.isclass)
           if issubclass(c, e.MagnumException) and c.__module__ == e.__name__]
classes.sort(key=lambda c: (len(c.__mro__), c.__name__))
print("// Code generated from magnum 15.0.1's magnum/common/exception.py by "
      "hack/gen-exceptions.py; DO NOT EDIT.\n")
print("package exception\n")
print("// catalogue lists every class of magnum.common.exception with its parent,")
print("// HTTP code and message format (Python %-style).")
print("var catalogue = []classInfo{")
for c in classes:
    parent = c.__mro__[1].__name__ if c is not e.MagnumException else ""
    print("\t{Name: %s, Parent: %s, Code: %d, Format: %s}," % (
        json.dumps(c.__name__), json.dumps(parent), c.code, json.dumps(str(c.message))))
print("}")
