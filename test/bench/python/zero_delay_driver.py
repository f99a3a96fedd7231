"""The zero-delay driver of the Python reference conductor.

A minimal out-of-tree Magnum driver that completes every operation at once:
the counterpart of our simulated driver with operation_delay = 0. Magnum
23.0.0 ships no drivers; there, it is the `simulated` entry point of the
magnum.drivers group (magnum_zero_delay_driver-1.0.dist-info beside this
file), and the real Driver.get_driver selects it.
"""
from magnum.drivers.common import driver as driver_mod
from magnum.objects import fields


class ZeroDelayDriver(driver_mod.Driver):
    """A driver whose every operation completes at once."""

    @property
    def provides(self):
        return [{'server_type': 'vm', 'os': 'simulated', 'coe': 'kubernetes'}]

    def update_cluster_status(self, context, cluster, use_admin_ctx=False):
        # What a backend that finished at once reports on the next sync:
        # every *_IN_PROGRESS becomes *_COMPLETE (the periodic task then
        # destroys a DELETE_COMPLETE cluster, as with the Heat driver).
        if not cluster.status.endswith('_IN_PROGRESS'):
            return
        if not cluster.stack_id:
            # create_cluster has not returned yet (the conductor saves the
            # stack_id with the certificates' references): a backend that
            # has no stack yet has nothing to report. Completing it here
            # would show CREATE_COMPLETE before the cluster has its CA.
            return
        done = cluster.status.replace('_IN_PROGRESS', '_COMPLETE')
        for ng in cluster.nodegroups:
            if ng.status and ng.status.endswith('_IN_PROGRESS'):
                ng.status = ng.status.replace('_IN_PROGRESS', '_COMPLETE')
                ng.save()
        cluster.status = done
        cluster.save()

    def create_cluster(self, context, cluster, cluster_create_timeout):
        cluster.stack_id = 'zero-delay'
        # magnum-api refuses new nodegroups until the API address is known.
        cluster.api_address = 'https://192.0.2.1:6443'
        cluster.status = fields.ClusterStatus.CREATE_COMPLETE

    def update_cluster(self, context, cluster, scale_manager=None,
                       rollback=False):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def delete_cluster(self, context, cluster):
        cluster.status = fields.ClusterStatus.DELETE_COMPLETE

    def resize_cluster(self, context, cluster, resize_manager, node_count,
                       nodes_to_remove, nodegroup=None):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def upgrade_cluster(self, context, cluster, cluster_template,
                        max_batch_size, nodegroup, scale_manager=None,
                        rollback=False):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def rotate_ca_certificate(self, context, cluster):
        # Nothing to roll out: the conductor has made the new CAs, and the
        # next status sync completes the update.
        return None

    def create_federation(self, context, federation):
        raise NotImplementedError()

    def update_federation(self, context, federation):
        raise NotImplementedError()

    def delete_federation(self, context, federation):
        raise NotImplementedError()

    def create_nodegroup(self, context, cluster, nodegroup):
        nodegroup.status = fields.ClusterStatus.CREATE_COMPLETE

    def update_nodegroup(self, context, cluster, nodegroup):
        nodegroup.status = fields.ClusterStatus.UPDATE_COMPLETE

    def delete_nodegroup(self, context, cluster, nodegroup):
        nodegroup.destroy()
