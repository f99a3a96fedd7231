"""An Octavia network driver whose VIP is a real Neutron port.

Why: Octavia runs with its noop compute and amphora drivers (no amphora VM
can boot here). Its noop network driver invents a VIP port that does not
exist in Neutron, so no floating IP can be associated with a load
balancer's VIP, which is how Cluster API Provider OpenStack exposes a
cluster's API server; the real allowed-address-pairs driver plugs the VIP
into the amphora's (noop) server through Nova and sends the load balancer to
ERROR. This driver is the allowed-address-pairs driver for what concerns
Neutron alone (reading networks, subnets, ports and security groups;
allocating the VIP as a port named octavia-lb-<id> in the load balancer's
project, deallocating it) and the noop driver for everything that touches an
amphora.
"""
from octavia.network import base
from octavia.network.drivers.neutron import allowed_address_pairs
from octavia.network.drivers.noop_driver import driver as noop


class VipPortNetworkDriver(allowed_address_pairs.AllowedAddressPairsDriver):

    def __init__(self):
        super().__init__()
        self._noop = noop.NoopNetworkDriver()


# What touches an amphora (its server's interfaces, its VRRP port, the VIP
# security group it would enforce) goes to the noop driver.
for _name in ("plug_vip", "unplug_vip", "plug_network", "unplug_network",
              "get_plugged_networks", "update_vip", "update_vip_sg",
              "plug_aap_port", "unplug_aap_port", "failover_preparation",
              "plug_port", "get_network_configs", "wait_for_port_detach",
              "plug_fixed_ip", "unplug_fixed_ip", "apply_qos_on_port"):
    setattr(VipPortNetworkDriver, _name,
            (lambda n: lambda self, *a, **kw: getattr(self._noop, n)(*a, **kw))(_name))


class VipPortWorkerNetworkDriver(VipPortNetworkDriver):
    """The driver of octavia-worker: a port, network or subnet Neutron does
    not know is one the noop half invented for an amphora (plug_network
    returns an interface whose port the member flows then read), and is
    answered by the noop driver. octavia-api keeps VipPortNetworkDriver, so
    that a user's unknown subnet or network is refused as on a cloud."""

    def get_port(self, port_id, context=None):
        try:
            return super().get_port(port_id, context=context)
        except base.PortNotFound:
            return self._noop.get_port(port_id, context=context)

    def get_network(self, network_id, context=None):
        try:
            return super().get_network(network_id, context=context)
        except base.NetworkNotFound:
            return self._noop.get_network(network_id, context=context)

    def get_subnet(self, subnet_id, context=None):
        try:
            return super().get_subnet(subnet_id, context=context)
        except base.SubnetNotFound:
            return self._noop.get_subnet(subnet_id, context=context)
