"""The Go magnum-conductor's cluster drivers, as magnum-api sees them.

magnum-api runs no driver: it only asks the `magnum.drivers` entry points
which (server_type, os, coe) a driver provides (every release), whether a
template's `driver` names a registered driver (2024.1 and later; Magnum
2026.2 also stores the alphabetically first driver, or [drivers]/
default_driver, in a template that names none), and, from 2026.2, whether
the driver is a beta one and whether a master count is acceptable. The drivers themselves run in the Go
magnum-conductor. Each class here stands for one of them, under the name
the conductor registers it with, and has no behaviour of its own: the master
count checks repeat the Go drivers' own rule (an odd count of at least one),
so that magnum-api refuses what the conductor would refuse.

Keep in step with the Go drivers (drivers/capi and drivers/simulated);
apihost/apihost_test.go checks the names and the simulated driver's keys.
"""

from magnum.common import exception

__version__ = '1.0.0'


def _check_master_count(node_count):
    if node_count < 1 or node_count % 2 == 0:
        invalid = getattr(exception, 'MasterNGSizeInvalid', None)
        if invalid is not None:
            raise invalid(requested_size=node_count)
        raise exception.InvalidParameterValue(
            err='master node count must be odd and at least 1, not %s'
            % node_count)


class _GoDriver(object):
    """A driver that runs in the Go magnum-conductor."""

    provides = []
    # Magnum 2026.2 refuses a cluster type of a beta driver not listed in
    # [drivers]/enabled_beta_drivers; the Go drivers are not beta.
    beta = False

    def validate_master_size(self, node_count):
        _check_master_count(node_count)

    def validate_master_resize(self, node_count):
        _check_master_count(node_count)


class ClusterAPIDriver(_GoDriver):
    """k8s_capi_v1: the bundled Cluster API driver."""

    provides = [
        {'server_type': 'vm', 'os': os, 'coe': 'kubernetes'}
        for os in ('ubuntu', 'flatcar', 'rockylinux')
    ]


class SimulatedDriver(_GoDriver):
    """simulated: the driver for tests and demonstrations."""

    provides = [{'server_type': 'vm', 'os': 'simulated', 'coe': 'kubernetes'}]
