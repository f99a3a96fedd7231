"""WSGI applications for gunicorn: keystone(), placement(), octavia().

Why: Keystone and Placement ship WSGI entry points and no server (Debian
runs them under uwsgi or Apache); gunicorn serves them here. Each of them
parses sys.argv with oslo.config, which would then read gunicorn's own
arguments and fail (the worker crash-loops), so sys.argv is reset first.
Octavia's own octavia-api script serves with wsgiref's server, one request
at a time; gunicorn's workers answer the tests' parallel calls.
The configuration file comes from the environment (OSTEST_CONFIG).
"""
import os
import sys


def _reset_argv():
    sys.argv = [sys.argv[0]]


def keystone():
    _reset_argv()
    from keystone.server import wsgi
    return wsgi.initialize_public_application()


def placement():
    _reset_argv()
    from placement import wsgi
    return wsgi.init_application()


def octavia():
    _reset_argv()
    from octavia.api import app
    return app.setup_app(argv=["octavia-api", "--config-file", os.environ["OSTEST_CONFIG"]])
