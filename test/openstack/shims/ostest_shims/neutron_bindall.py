"""An ML2 mechanism driver that binds every port.

Why: the control plane runs Neutron without any agent (no Open vSwitch, no
Linux bridge: nothing is plugged anywhere, the servers do not boot). The
shipped mechanism drivers bind a port only on a host where their agent
reports itself alive, so Nova's port update would end in binding_failed and
every server in ERROR. This driver binds any port on any segment, with the
"ovs" VIF type (Nova's fake virt driver plugs nothing and accepts it), and
marks the port ACTIVE, as an agent would once it had wired it.
"""
from neutron_lib.api.definitions import portbindings
from neutron_lib import constants
from neutron_lib.plugins.ml2 import api


class BindAllMechanismDriver(api.MechanismDriver):

    def initialize(self):
        pass

    @property
    def connectivity(self):
        return portbindings.CONNECTIVITY_L2

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(
                segment[api.ID], portbindings.VIF_TYPE_OVS,
                {portbindings.CAP_PORT_FILTER: True,
                 portbindings.OVS_HYBRID_PLUG: False},
                status=constants.PORT_STATUS_ACTIVE)
            return
