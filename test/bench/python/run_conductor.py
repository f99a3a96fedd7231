#!/usr/bin/python3
"""Runs Debian's Python magnum-conductor as the tests' and the benchmark's
reference: 15.0.1 (bookworm) or 23.0.0 (sid), whichever python3-magnum the
interpreter has.

Things are changed in the Python process, and only these:

* Magnum 15.0.1 creates a Keystone trustee and trust at the start of
  cluster_create. There is no Keystone on the test machine, so that one
  step is replaced by a no-op (the benchmark output says so). 23.0.0 has no
  trusts.
* Magnum 15.0.1's database layer asks Keystone for the trustee domain's id
  on every query filtered by project (23.0.0 no longer does). Here it is
  [trust]/trustee_domain_id, or "magnum-trustees" when that is unset, so
  that users of other domains see their project's rows.
* The driver is a minimal out-of-tree driver that completes at once
  (zero_delay_driver.py, the counterpart of our simulated driver with zero
  delay), for (vm, simulated, kubernetes). Magnum 15.0.1 ships Heat drivers
  only and cannot load an out-of-tree one beside them without installing
  it, so there Driver.get_driver returns it for that cluster type and
  looks any other type up as before. Magnum 23.0.0 ships no driver: there it is
  the `simulated` entry point (magnum_zero_delay_driver-1.0.dist-info, found
  on sys.path beside this file), selected by the unmodified
  Driver.get_driver, so that a template naming another driver, or a
  cluster type no driver provides, fails as it does in production.

Everything else (RPC server, object indirection, database, certificates,
notifications, periodic tasks) is the unmodified Python code.

Usage: run_conductor.py --config-file magnum.conf
"""
import sys

from magnum.common import keystone
import magnum.conf
from magnum.drivers.common import driver as driver_mod

import zero_delay_driver

try:
    from magnum.conductor.handlers.common import trust_manager
except ImportError:  # 23.0.0
    trust_manager = None


def _no_trust(osc, cluster):
    return None


if trust_manager is not None:
    trust_manager.create_trustee_and_trust = _no_trust
if hasattr(keystone.KeystoneClientV3, 'trustee_domain_id'):
    keystone.KeystoneClientV3.trustee_domain_id = property(
        lambda self: magnum.conf.CONF.trust.trustee_domain_id or
        'magnum-trustees')


_ZERO_DELAY_TYPES = [(p['server_type'], p['os'], p['coe'])
                     for p in zero_delay_driver.ZeroDelayDriver.provides.fget(None)]
_real_get_driver = driver_mod.Driver.get_driver


def _get_driver(cls, server_type, os, coe, *args, **kwargs):
    if (server_type, os, coe) in _ZERO_DELAY_TYPES:
        return zero_delay_driver.ZeroDelayDriver()
    return _real_get_driver(server_type, os, coe, *args, **kwargs)


if not hasattr(driver_mod.Driver, 'get_default_driver'):  # 15.0.1
    driver_mod.Driver.get_driver = classmethod(_get_driver)

if __name__ == '__main__':
    from magnum.cmd import conductor
    sys.exit(conductor.main())
