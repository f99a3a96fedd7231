#!/usr/bin/python3
"""Runs Debian's Python magnum-api (15.0.1 or 23.0.0) as `magnum-api` does.

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
  set after validating a token. With --identity USER:PROJECT:ROLES, a
  request without X-User-Id gets those headers for that user, project and
  roles: what auth_token sets for the token the CLI (`openstack coe ...`,
  run with --os-auth-type none) would have sent. Werkzeug serves it with
  threads instead of [api]/workers processes.
* The configuration is read before magnum.conductor.api is imported (see
  _parse_config), so that [conductor]/topic is honoured.
* attr_validator.validate_os_resources (which asks Nova, Neutron and Glance
  whether the flavors, networks, keypair and image exist) and, in 23.0.0,
  attr_validator.validate_flavor_root_volume_size (which asks Nova for the
  flavor's disk) check nothing, and Glance is replaced by an answer: every
  image exists, with the image's name as its os_distro and no
  magnum_driver property.
* 15.0.1's policy targets carry the trustee domain, which magnum-api asks
  Keystone for on every check; here it is [trust]/trustee_domain_id, or
  "magnum-trustees" when that is unset (as in
  test/bench/python/run_conductor.py). Quota requests ask Keystone whether
  the project exists; here every project does.

The cluster drivers are what an operator installs on the API host: the
`magnum.drivers` entry points found on sys.path (the tests put apihost/,
the Go conductor's drivers, on PYTHONPATH). magnum-api's driver checks are
the unmodified code.

Usage: run_api.py --config-file magnum.conf --port PORT [--identity U:P:R]
"""
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
    identity = None
    if '--identity' in args:
        i = args.index('--identity')
        identity = args[i + 1].split(':')
        del args[i:i + 2]
    service.prepare_service([sys.argv[0]] + args)
    return port, identity


PORT, IDENTITY = _parse_config()

from magnum.api import app as api_app  # noqa: E402
from magnum.api import attr_validator  # noqa: E402
from magnum.api import utils as api_utils  # noqa: E402
from magnum.api import validation  # noqa: E402
from magnum.common import clients  # noqa: E402
from magnum.common import keystone  # noqa: E402
from magnum.objects import base  # noqa: E402


def _no_os_resources(context, cluster_template, cluster=None):
    return None


class _Image(dict):
    """An image as openstacksdk returns it (23.0.0) and a dict (15.0.1)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)


class _Glance(object):
    images = 'images'

    def find_image(self, name_or_id, ignore_missing=True):
        return _Image(id=name_or_id, name=name_or_id, os_distro=name_or_id,
                      properties={})


_original_get_resource = api_utils.get_openstack_resource


def _get_openstack_resource(manager, resource_ident, resource_type):
    if resource_type == 'images':
        return _Glance().find_image(resource_ident)
    return _original_get_resource(manager, resource_ident, resource_type)


attr_validator.validate_os_resources = _no_os_resources
clients.OpenStackClients.glance = lambda self: _Glance()
api_utils.get_openstack_resource = _get_openstack_resource
validation._validate_project_id = lambda project_id: None
if hasattr(attr_validator, 'validate_flavor_root_volume_size'):  # 23.0.0
    attr_validator.validate_flavor_root_volume_size = (
        lambda cli, flavor, boot_volume_size: None)
if hasattr(keystone.KeystoneClientV3, 'trustee_domain_id'):  # 15.0.1
    keystone.KeystoneClientV3.trustee_domain_id = property(
        lambda self: CONF.trust.trustee_domain_id or 'magnum-trustees')


class _DefaultIdentity(object):
    """Sets auth_token's identity headers on requests that carry none."""

    def __init__(self, app, user, project, roles):
        self.app = app
        self.headers = {'HTTP_X_USER_ID': user, 'HTTP_X_PROJECT_ID': project,
                        'HTTP_X_USER_DOMAIN_ID': 'default',
                        'HTTP_X_ROLES': roles}

    def __call__(self, environ, start_response):
        if 'HTTP_X_USER_ID' not in environ:
            environ.update(self.headers)
        return self.app(environ, start_response)


def main():
    # What magnum/cmd/api.py does: every remotable method of every object
    # runs in the conductor.
    base.MagnumObject.indirection_api = base.MagnumObjectIndirectionAPI()
    app = request_id.RequestId(api_app.setup_app())
    if IDENTITY:
        app = _DefaultIdentity(app, *IDENTITY)
    serving.run_simple('127.0.0.1', PORT, app, threaded=True)


if __name__ == '__main__':
    sys.exit(main())
