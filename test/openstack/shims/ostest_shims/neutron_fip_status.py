"""A Neutron service plugin that sets a floating IP's status.

Why: a floating IP's status is set by the L3 agent once it has wired the
address; the control plane has no agent, so every floating IP stays DOWN.
Cluster API Provider OpenStack waits for ACTIVE after associating one (it
requeues for 30 s at a time), and so would any test. This plugin marks a
floating IP ACTIVE when it is associated with a port (at create or update)
and DOWN when it is disassociated (by an update or by its port's delete),
which is what the L3 agent reports on a cloud.
"""
from neutron_lib.callbacks import events
from neutron_lib.callbacks import registry
from neutron_lib.callbacks import resources
from neutron_lib import constants
from neutron_lib.plugins import constants as plugin_constants
from neutron_lib.plugins import directory
from neutron_lib.services import base as service_base
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


@registry.has_registry_receivers
class FloatingIPStatusPlugin(service_base.ServicePluginBase):

    supported_extension_aliases = []

    @classmethod
    def get_plugin_type(cls):
        return "ostest_fip_status"

    def get_plugin_description(self):
        return "Sets floating IP status on association (no L3 agent)"

    @registry.receives(resources.FLOATING_IP,
                       [events.AFTER_CREATE, events.AFTER_UPDATE])
    def _floatingip_changed(self, resource, event, trigger, payload):
        fip = payload.latest_state
        if not fip or 'id' not in fip:
            return
        status = (constants.FLOATINGIP_STATUS_ACTIVE if fip.get('port_id')
                  else constants.FLOATINGIP_STATUS_DOWN)
        if fip.get('status') == status:
            return
        l3 = directory.get_plugin(plugin_constants.L3)
        l3.update_floatingip_status(payload.context.elevated(), fip['id'],
                                    status)
        LOG.info("floating IP %s is %s", fip['id'], status)
