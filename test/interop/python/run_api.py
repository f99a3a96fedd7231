#!/usr/bin/python3
"""Runs Debian's Python magnum-api (15.0.1) as the `magnum-api` binary does.

It is the front end of the HTTP drop-in test (test/interop/httpapi): the real
API (pecan controllers, policy, validation, the objects with
MagnumObjectIndirectionAPI, magnum.conductor.api for the casts and calls),
talking to whichever conductor serves the configured topic.

There is no Keystone, Nova, Neutron or Glance on the test machine, so these
things differ from a production magnum-api, and only these:

* The application is served without api-paste.ini's pipeline: of its
  middlewares only request_id is kept. keystonemiddleware's auth_token is
  not in front of the application; the test sends the X-User-Id,
  X-User-Domain-Id, X-Project-Id and X-Roles headers that auth_token would
  set after validating a token. Werkzeug serves it with threads instead of
  [api]/workers processes.
* The configuration is read before magnum.conductor.api is imported (see
  _parse_config), so that [conductor]/topic is honoured.
* attr_validator.validate_os_resources (which asks Nova, Neutron and Glance
  whether the flavors, networks, keypair and image exist) checks nothing, and
  Glance is replaced by an answer: every image exists, with the image's name
  as its os_distro.
* Policy targets carry the trustee domain, which magnum-api asks Keystone
  for on every check; here it is [trust]/trustee_domain_id, or
  "magnum-trustees" when that is unset (test/bench/python/run_conductor.py
  sets it, for the API as for the conductor). Quota requests ask Keystone
  whether the project exists; here every project does.
* Magnum 15.0.1 ships Heat drivers only. The API asks the driver registry
  whether a cluster type is supported; the registry of
  test/bench/python/run_conductor.py, imported from there, answers every
  type with its zero-delay driver.

Usage: run_api.py --config-file magnum.conf --port PORT
"""
import os
import sys

from werkzeug import serving

import magnum.conf
from magnum.common import service
from oslo_middleware import request_id

CONF = magnum.conf.CONF


def _parse_config():
    # magnum.conductor.api binds CONF.conductor.topic as a default argument
    # when it is imported. magnum-api imports it before it reads its
    # configuration, so it always calls the topic "magnum-conductor"; here
    # the configuration is read first, so that each test has its own topic.
    args = sys.argv[1:]
    i = args.index('--port')
    port = int(args[i + 1])
    del args[i:i + 2]
    service.prepare_service([sys.argv[0]] + args)
    return port


PORT = _parse_config()

from magnum.api import app as api_app  # noqa: E402
from magnum.api import attr_validator  # noqa: E402
from magnum.api import utils as api_utils  # noqa: E402
from magnum.api import validation  # noqa: E402
from magnum.common import clients  # noqa: E402
from magnum.objects import base  # noqa: E402


def _no_os_resources(context, cluster_template, cluster=None):
    return None


class _Glance(object):
    images = 'images'


_original_get_resource = api_utils.get_openstack_resource


def _get_openstack_resource(manager, resource_ident, resource_type):
    if resource_type == 'images':
        return {'id': resource_ident, 'name': resource_ident,
                'os_distro': resource_ident}
    return _original_get_resource(manager, resource_ident, resource_type)


attr_validator.validate_os_resources = _no_os_resources
clients.OpenStackClients.glance = lambda self: _Glance()
api_utils.get_openstack_resource = _get_openstack_resource
validation._validate_project_id = lambda project_id: None


# The cluster drivers, the trustee domain and the trust step, exactly as the
# Python conductor of the same tests has them (the API only asks the driver
# registry whether a template's cluster type is supported, and never runs a
# driver).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench', 'python'))
import run_conductor  # noqa: E402,F401


def main():
    # What magnum/cmd/api.py does: every remotable method of every object
    # runs in the conductor.
    base.MagnumObject.indirection_api = base.MagnumObjectIndirectionAPI()
    app = request_id.RequestId(api_app.setup_app())
    serving.run_simple('127.0.0.1', PORT, app, threaded=True)


if __name__ == '__main__':
    sys.exit(main())
