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
  "magnum-trustees" when that is unset. Quota requests ask Keystone whether
  the project exists; here every project does.
* Magnum 15.0.1 ships Heat drivers only. The API asks the driver registry
  whether a cluster type is supported; ('vm', 'simulated', 'kubernetes') is
  answered with a driver that does nothing (the API never runs a driver).

Usage: run_api.py --config-file magnum.conf --port PORT
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
    service.prepare_service([sys.argv[0]] + args)
    return port


PORT = _parse_config()

from magnum.api import app as api_app  # noqa: E402
from magnum.api import attr_validator  # noqa: E402
from magnum.api import utils as api_utils  # noqa: E402
from magnum.api import validation  # noqa: E402
from magnum.common import clients  # noqa: E402
from magnum.common import keystone  # noqa: E402
from magnum.drivers.common import driver as driver_mod  # noqa: E402
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
keystone.KeystoneClientV3.trustee_domain_id = property(
    lambda self: CONF.trust.trustee_domain_id or 'magnum-trustees')
validation._validate_project_id = lambda project_id: None


class SimulatedDriver(driver_mod.Driver):
    """Only for the API's 'is this cluster type supported' check."""

    @property
    def provides(self):
        return [{'server_type': 'vm', 'os': 'simulated', 'coe': 'kubernetes'}]

    def update_cluster_status(self, context, cluster, use_admin_ctx=False):
        raise NotImplementedError()

    def create_cluster(self, context, cluster, cluster_create_timeout):
        raise NotImplementedError()

    def update_cluster(self, context, cluster, scale_manager=None,
                       rollback=False):
        raise NotImplementedError()

    def delete_cluster(self, context, cluster):
        raise NotImplementedError()

    def resize_cluster(self, context, cluster, resize_manager, node_count,
                       nodes_to_remove, nodegroup=None):
        raise NotImplementedError()

    def upgrade_cluster(self, context, cluster, cluster_template,
                        max_batch_size, nodegroup, scale_manager=None,
                        rollback=False):
        raise NotImplementedError()

    def create_federation(self, context, federation):
        raise NotImplementedError()

    def update_federation(self, context, federation):
        raise NotImplementedError()

    def delete_federation(self, context, federation):
        raise NotImplementedError()

    def create_nodegroup(self, context, cluster, nodegroup):
        raise NotImplementedError()

    def update_nodegroup(self, context, cluster, nodegroup):
        raise NotImplementedError()

    def delete_nodegroup(self, context, cluster, nodegroup):
        raise NotImplementedError()


_original_get_driver = driver_mod.Driver.get_driver.__func__


def _get_driver(cls, server_type, os, coe, *args, **kwargs):
    if (server_type, os, coe) == ('vm', 'simulated', 'kubernetes'):
        return SimulatedDriver()
    return _original_get_driver(cls, server_type, os, coe, *args, **kwargs)


driver_mod.Driver.get_driver = classmethod(_get_driver)


def main():
    # What magnum/cmd/api.py does: every remotable method of every object
    # runs in the conductor.
    base.MagnumObject.indirection_api = base.MagnumObjectIndirectionAPI()
    app = request_id.RequestId(api_app.setup_app())
    serving.run_simple('127.0.0.1', PORT, app, threaded=True)


if __name__ == '__main__':
    sys.exit(main())
