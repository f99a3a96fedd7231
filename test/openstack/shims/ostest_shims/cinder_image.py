"""A Cinder volume driver: the fake logging driver that also makes a volume
from an image.

Why: Cinder's FakeLoggingVolumeDriver (its functional tests' backend, the
one Cinder driver python3-cinder ships that needs no storage) keeps no data,
but a volume created from an image still goes through the LVM driver it
derives from: qemu-img writes the image onto a device that does not exist,
and the volume ends in error. Cluster API Provider OpenStack creates a
server's boot volume from the image itself (boot_volume_size), so that path
must work. Here the image is accepted without its bytes being written:
there is no data plane, no server ever reads its disk.
"""
from oslo_log import log as logging

from cinder.tests import fake_driver

LOG = logging.getLogger(__name__)


class FakeImageVolumeDriver(fake_driver.FakeLoggingVolumeDriver):

    def copy_image_to_volume(self, context, volume, image_service, image_id, disable_sparse=False):
        LOG.info("ostest: volume %s made from image %s (no data written)", volume.id, image_id)

    def copy_volume_to_image(self, context, volume, image_service, image_meta):
        LOG.info("ostest: image %s made from volume %s (no data read)", image_meta.get("id"), volume.id)
