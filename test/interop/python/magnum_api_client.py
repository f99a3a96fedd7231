#!/usr/bin/python3
"""Drives a conductor exactly as magnum-api does, and prints what it saw.

It runs under either Python release the tests use as a peer (15.0.1 on the
host, 23.0.0 in the sid chroot), with that release's client code.

It uses Magnum's own client code: the objects with MagnumObjectIndirectionAPI
(what the `magnum-api` binary switches on), and magnum.conductor.api.API for
the casts and calls. The Go tests run it once against the Python conductor and
once against ours, on identical data, and compare the two outputs.

Usage: magnum_api_client.py --config-file F SCENARIO SEED
Prints one JSON object per step on stdout: {"step", "ok", "value" | "error"}.
"""
import json
import sys
import time
import uuid

import magnum.conf

CONF = magnum.conf.CONF


def _parse_config():
    # magnum.conductor.api binds CONF.conductor.topic as a default argument
    # at import time, so the configuration must be parsed before it is
    # imported, exactly as magnum-api's prepare_service does.
    args = sys.argv[1:]
    conf_args = []
    while args and args[0] == '--config-file':
        conf_args += args[:2]
        args = args[2:]
    from magnum.common import config as magnum_config
    # parse_args also sets control_exchange=magnum, as magnum-api does.
    magnum_config.parse_args([sys.argv[0]] + conf_args)
    return args


SCENARIO_ARGS = _parse_config()

from magnum.common import context as magnum_context  # noqa: E402
from magnum.common import rpc  # noqa: E402
from magnum.conductor import api as conductor_api  # noqa: E402
from magnum import objects  # noqa: E402
from magnum.objects import base  # noqa: E402

VOLATILE = {'id', 'created_at', 'updated_at', 'ca_cert_ref', 'magnum_cert_ref',
            'etcd_ca_cert_ref', 'front_proxy_ca_cert_ref', 'last_seen_up',
            'report_count', 'host', 'stack_id', 'api_address', 'node_addresses',
            'coe_version', 'status_reason'}


def plain(value):
    """Turns objects into comparable dicts without volatile fields."""
    if isinstance(value, base.MagnumObject):
        out = {'_class': value.obj_name()}
        for name in sorted(value.fields):
            if name in VOLATILE or name == 'cluster_template':
                continue
            if value.obj_attr_is_set(name):
                out[name] = plain(getattr(value, name))
        return out
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    return value


def emit(step, fn):
    try:
        value = fn()
        print(json.dumps({'step': step, 'ok': True, 'value': plain(value)},
                         sort_keys=True, default=str), flush=True)
        return value
    except Exception as e:  # noqa: the class is what we compare
        cls = type(e).__name__
        msg = str(e).split('\n')[0]
        print(json.dumps({'step': step, 'ok': False,
                          'error': {'class': cls, 'message': msg}},
                         sort_keys=True), flush=True)
        return None


def ids(seed, n):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, '%s/%d' % (seed, n)))


def scenario_objects(ctx, seed):
    ct = objects.ClusterTemplate(ctx, uuid=ids(seed, 1), name='ct-' + seed,
                                 project_id=ctx.project_id,
                                 user_id=ctx.user_id, coe='kubernetes',
                                 server_type='vm', cluster_distro='simulated',
                                 image_id='img', flavor_id='m1.small',
                                 master_flavor_id='m1.medium',
                                 external_network_id='public',
                                 docker_volume_size=5, labels={'a': 'b'},
                                 network_driver='flannel', public=False,
                                 tls_disabled=False, registry_enabled=False)
    emit('clustertemplate.create', lambda: ct.create() or ct)
    emit('clustertemplate.get_by_uuid',
         lambda: objects.ClusterTemplate.get_by_uuid(ctx, ct.uuid))
    emit('clustertemplate.get_by_name',
         lambda: objects.ClusterTemplate.get_by_name(ctx, ct.name))
    emit('clustertemplate.list',
         lambda: [t for t in objects.ClusterTemplate.list(ctx)
                  if t.uuid == ct.uuid])

    def save_ct():
        ct.name = 'ct-renamed-' + seed
        ct.labels = {'a': 'c', 'n': '1'}
        ct.save()
        return ct
    emit('clustertemplate.save', save_ct)
    emit('clustertemplate.get_missing',
         lambda: objects.ClusterTemplate.get_by_uuid(ctx, ids(seed, 99)))

    cl = objects.Cluster(ctx, uuid=ids(seed, 2), name='cl-' + seed,
                         project_id=ctx.project_id, user_id=ctx.user_id,
                         cluster_template_id=ct.uuid, keypair='kp',
                         docker_volume_size=5, labels={'x': 'y'},
                         master_flavor_id='m1.medium', flavor_id='m1.small',
                         create_timeout=60, status='CREATE_COMPLETE',
                         floating_ip_enabled=True, master_lb_enabled=False)
    emit('cluster.create', lambda: cl.create() or cl)
    emit('cluster.get_by_uuid',
         lambda: objects.Cluster.get_by_uuid(ctx, cl.uuid))
    emit('cluster.get_by_name',
         lambda: objects.Cluster.get_by_name(ctx, cl.name))
    emit('cluster.list', lambda: [c for c in objects.Cluster.list(ctx)
                                  if c.uuid == cl.uuid])
    emit('cluster.get_count_all',
         lambda: objects.Cluster.get_count_all(
             ctx, filters={'cluster_template_id': ct.uuid}))

    def save_cl():
        cl.status = 'UPDATE_COMPLETE'
        cl.health_status = 'HEALTHY'
        cl.health_status_reason = {'api': 'ok'}
        cl.save()
        return cl
    emit('cluster.save', save_cl)
    emit('cluster.refresh', lambda: cl.refresh() or cl)
    emit('cluster.get_missing',
         lambda: objects.Cluster.get_by_uuid(ctx, ids(seed, 98)))

    ng = objects.NodeGroup(ctx, uuid=ids(seed, 3), name='ng-' + seed,
                           cluster_id=cl.uuid, project_id=ctx.project_id,
                           docker_volume_size=5, labels={}, flavor_id='m1',
                           image_id='img', node_count=2, role='worker',
                           max_node_count=5, min_node_count=1,
                           is_default=False)
    emit('nodegroup.create', lambda: ng.create() or ng)
    emit('nodegroup.get', lambda: objects.NodeGroup.get(ctx, cl.uuid, ng.name))
    emit('nodegroup.list', lambda: objects.NodeGroup.list(ctx, cl.uuid))
    emit('nodegroup.duplicate', lambda: objects.NodeGroup(
        ctx, uuid=ids(seed, 4), name=ng.name, cluster_id=cl.uuid,
        project_id=ctx.project_id, role='worker', node_count=1).create())

    def save_ng():
        ng.node_count = 3
        ng.save()
        return ng
    emit('nodegroup.save', save_ng)

    def save_listed_ng():
        # A list result (loaded read-only by the conductor) saved by the
        # API after a change, then read back.
        listed = [n for n in objects.NodeGroup.list(ctx, cl.uuid)
                  if n.uuid == ng.uuid][0]
        listed.max_node_count = 7
        listed.save()
        return objects.NodeGroup.get_by_uuid(ctx, cl.uuid, ng.uuid)
    emit('nodegroup.save_listed', save_listed_ng)
    emit('nodegroup.destroy', lambda: ng.destroy())
    emit('nodegroup.get_destroyed',
         lambda: objects.NodeGroup.get_by_uuid(ctx, cl.uuid, ng.uuid))
    emit('clustertemplate.destroy_referenced', lambda: ct.destroy())
    emit('cluster.destroy', lambda: cl.destroy())
    emit('clustertemplate.destroy', lambda: ct.destroy())
    emit('magnumservice.list',
         lambda: len(objects.MagnumService.list(ctx)) >= 1)


def wait_status(ctx, cluster_uuid, want, timeout=60):
    """Polls like a magnum client: a cast is processed asynchronously, so a
    cluster may not exist yet right after cluster_create_async."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            c = objects.Cluster.get_by_uuid(ctx, cluster_uuid)
        except Exception as e:
            if not type(e).__name__.startswith('ClusterNotFound'):
                raise
            if want == 'GONE':
                return 'GONE'
            time.sleep(0.2)
            continue
        if c.status == want:
            return c.status
        time.sleep(0.2)
    raise RuntimeError('timed out waiting for %s' % want)


def wait_until(ctx, cluster_uuid, check, timeout=60):
    """Polls the cluster and its nodegroups until check(cluster, nodegroups)
    returns a value (not None); a cast is processed asynchronously, so the
    state before it is not mistaken for the state after it."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        # Nodegroups first: the handlers mark the cluster in progress before
        # they touch a nodegroup, so a cluster read after its nodegroups is
        # never older than them (read the other way round, a nodegroup
        # delete could be seen done while the cluster still showed the
        # previous operation's COMPLETE).
        ngs = objects.NodeGroup.list(ctx, cluster_uuid)
        c = objects.Cluster.get_by_uuid(ctx, cluster_uuid)
        last = (c.status, sorted((n.name, n.status, n.node_count) for n in ngs))
        got = check(c, ngs)
        if got is not None:
            return got
        time.sleep(0.2)
    raise RuntimeError('timed out; last state %s' % (last,))


def scenario_lifecycle(ctx, seed):
    api = conductor_api.API(context=ctx)
    emit('ping', lambda: conductor_api.ListenerAPI(
        context=ctx, topic=CONF.conductor.topic).ping_conductor())
    ct = objects.ClusterTemplate(ctx, uuid=ids(seed, 11), name='lt-' + seed,
                                 project_id=ctx.project_id,
                                 user_id=ctx.user_id, coe='kubernetes',
                                 server_type='vm', cluster_distro='simulated',
                                 image_id='img', flavor_id='m1.small',
                                 master_flavor_id='m1.medium',
                                 docker_volume_size=5, labels={},
                                 public=False, tls_disabled=False,
                                 registry_enabled=False)
    ct.create()
    cl = objects.Cluster(ctx, uuid=ids(seed, 12), name='lc-' + seed,
                         project_id=ctx.project_id, user_id=ctx.user_id,
                         cluster_template_id=ct.uuid, keypair='kp',
                         docker_volume_size=5, labels={},
                         master_flavor_id='m1.medium', flavor_id='m1.small',
                         create_timeout=60, floating_ip_enabled=True,
                         master_lb_enabled=False)
    emit('cluster_create_async',
         lambda: api.cluster_create_async(cl, 1, 2, 60))
    emit('wait_create_complete',
         lambda: wait_status(ctx, cl.uuid, 'CREATE_COMPLETE'))
    emit('nodegroups_after_create', lambda: sorted(
        (n.name, n.role, n.node_count, n.is_default)
        for n in objects.NodeGroup.list(ctx, cl.uuid)))
    cl = objects.Cluster.get_by_uuid(ctx, cl.uuid)
    emit('get_ca_certificate', lambda: api.get_ca_certificate(
        cl, None).pem.startswith('-----BEGIN CERTIFICATE-----'))
    emit('cluster_update_async', lambda: api.cluster_update_async(
        cl, 3, None, None))
    emit('wait_update_complete',
         lambda: wait_status(ctx, cl.uuid, 'UPDATE_COMPLETE'))
    emit('worker_count_after_update', lambda: [
        n.node_count for n in objects.NodeGroup.list(ctx, cl.uuid)
        if n.role != 'master'])

    # cluster_resize of the default worker (the autoscaler's path).
    cl = objects.Cluster.get_by_uuid(ctx, cl.uuid)
    worker = [n for n in objects.NodeGroup.list(ctx, cl.uuid)
              if n.role != 'master' and n.is_default][0]
    emit('cluster_resize_async',
         lambda: api.cluster_resize_async(cl, 1, [], worker))
    # The nodegroup's own status too: Magnum saves the new node_count
    # before it marks the cluster in progress, so count and cluster status
    # alone can be seen before the resize was even handled.
    emit('wait_resize_complete', lambda: wait_until(
        ctx, cl.uuid, lambda c, ngs: (c.status, [
            n.node_count for n in ngs if n.uuid == worker.uuid])
        if c.status == 'UPDATE_COMPLETE' and [
            (n.node_count, n.status) for n in ngs if n.uuid == worker.uuid]
        == [(1, 'UPDATE_COMPLETE')]
        else None))

    # An extra nodegroup, created and deleted.
    cl = objects.Cluster.get_by_uuid(ctx, cl.uuid)
    ng = objects.NodeGroup(ctx, uuid=ids(seed, 13), name='np-' + seed,
                           cluster_id=cl.uuid, project_id=ctx.project_id,
                           docker_volume_size=5, labels={}, flavor_id='m1',
                           image_id='img', node_count=2, role='worker',
                           min_node_count=1, max_node_count=4,
                           is_default=False)
    emit('nodegroup_create_async', lambda: api.nodegroup_create_async(cl, ng))

    def ng_created(c, ngs):
        mine = [(n.name, n.status, n.node_count) for n in ngs
                if n.uuid == ng.uuid]
        if c.status == 'UPDATE_COMPLETE' and mine and \
                mine[0][1] == 'CREATE_COMPLETE':
            return [c.status, list(mine[0])]
        return None
    emit('wait_nodegroup_created', lambda: wait_until(ctx, cl.uuid, ng_created))
    cl = objects.Cluster.get_by_uuid(ctx, cl.uuid)
    ng_db = objects.NodeGroup.get_by_uuid(ctx, cl.uuid, ng.uuid)
    emit('nodegroup_delete_async', lambda: api.nodegroup_delete_async(cl, ng_db))
    emit('wait_nodegroup_deleted', lambda: wait_until(
        ctx, cl.uuid, lambda c, ngs: c.status
        if c.status == 'UPDATE_COMPLETE' and
        not [n for n in ngs if n.uuid == ng.uuid] else None))

    # cluster_upgrade is a call; its result is the cluster.
    ct2 = objects.ClusterTemplate(ctx, uuid=ids(seed, 14), name='lt2-' + seed,
                                  project_id=ctx.project_id,
                                  user_id=ctx.user_id, coe='kubernetes',
                                  server_type='vm', cluster_distro='simulated',
                                  image_id='img2', flavor_id='m1.small',
                                  master_flavor_id='m1.medium',
                                  docker_volume_size=5,
                                  labels={'kube_tag': 'v1.31.1'},
                                  public=False, tls_disabled=False,
                                  registry_enabled=False)
    ct2.create()
    cl = objects.Cluster.get_by_uuid(ctx, cl.uuid)
    worker = objects.NodeGroup.get_by_uuid(ctx, cl.uuid, worker.uuid)
    emit('cluster_upgrade', lambda: api.cluster_upgrade(
        cl, ct2, 1, worker).status)
    emit('wait_upgrade_complete', lambda: wait_until(
        ctx, cl.uuid, lambda c, ngs: c.status
        if c.status == 'UPDATE_COMPLETE' else None))
    emit('upgrade_while_in_progress_refused', lambda: refuse_upgrade(
        api, ctx, cl.uuid, ct2))

    emit('federation_create', lambda: api.federation_create(None, 1))
    scenario_unsupported(ctx, api, seed)
    emit('cluster_delete_missing', lambda: api.cluster_delete(ids(seed, 97)))
    emit('cluster_delete_async', lambda: api.cluster_delete_async(cl.uuid))
    emit('wait_deleted', lambda: wait_status(ctx, cl.uuid, 'GONE'))
    ct.destroy()
    ct2.destroy()


def scenario_unsupported(ctx, api, seed):
    """A cluster whose template no registered driver serves: the create
    (a cast) fails the cluster with the driver lookup's message as its
    status_reason, and a delete (a call) raises the lookup's exception.
    From 23.0.0 on, a template may name its driver: one that names no
    registered driver gets ClusterDriverNotSupported."""
    cases = [('unsupported_type', 21, {'cluster_distro': 'plan9'})]
    if 'driver' in objects.ClusterTemplate.fields:
        cases.append(('unregistered_driver', 23,
                      {'cluster_distro': 'simulated', 'driver': 'k8s_nope'}))
    for name, n, fields in cases:
        ct = objects.ClusterTemplate(
            ctx, uuid=ids(seed, n), name='ut-%s-%s' % (name, seed),
            project_id=ctx.project_id, user_id=ctx.user_id,
            coe='kubernetes', server_type='vm', image_id='img',
            flavor_id='m1.small', master_flavor_id='m1.medium',
            docker_volume_size=5, labels={}, public=False,
            tls_disabled=False, registry_enabled=False, **fields)
        ct.create()
        cl = objects.Cluster(ctx, uuid=ids(seed, n + 1),
                             name='uc-%s-%s' % (name, seed),
                             project_id=ctx.project_id, user_id=ctx.user_id,
                             cluster_template_id=ct.uuid, keypair='kp',
                             docker_volume_size=5, labels={},
                             master_flavor_id='m1.medium',
                             flavor_id='m1.small', create_timeout=60,
                             floating_ip_enabled=True,
                             master_lb_enabled=False)
        emit('cluster_create_' + name,
             lambda: api.cluster_create_async(cl, 1, 1, 60))
        emit('wait_create_failed_' + name,
             lambda: wait_create_failed(ctx, cl.uuid))
        emit('cluster_delete_' + name, lambda: api.cluster_delete(cl.uuid))


def wait_create_failed(ctx, cluster_uuid, timeout=60):
    """Polls until the cluster is CREATE_FAILED and returns its status and
    reason; the cast may not have created it yet."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            c = objects.Cluster.get_by_uuid(ctx, cluster_uuid)
            last = c.status
            if c.status == 'CREATE_FAILED':
                return [c.status, c.status_reason]
        except Exception as e:
            if not type(e).__name__.startswith('ClusterNotFound'):
                raise
        time.sleep(0.2)
    raise RuntimeError('timed out waiting for CREATE_FAILED; last %s' % last)


def refuse_upgrade(api, ctx, cluster_uuid, template):
    """Puts the cluster in UPDATE_IN_PROGRESS through the API's own object
    path, then asks for an upgrade, which the status gate refuses."""
    c = objects.Cluster.get_by_uuid(ctx, cluster_uuid)
    c.status = 'UPDATE_IN_PROGRESS'
    c.save()
    ng = [n for n in objects.NodeGroup.list(ctx, cluster_uuid)
          if n.role != 'master'][0]
    try:
        return api.cluster_upgrade(c, template, 1, ng).status
    finally:
        # The periodic sync completes it again (the driver has nothing to
        # do), so the delete that follows is allowed.
        wait_until(ctx, cluster_uuid, lambda c, ngs: c.status
                   if c.status == 'UPDATE_COMPLETE' else None)


def main():
    scenario, seed = SCENARIO_ARGS
    rpc.init(CONF)
    base.MagnumObject.indirection_api = base.MagnumObjectIndirectionAPI()
    ctx = magnum_context.RequestContext(
        user_id='0f1e2d3c4b5a69788796a5b4c3d2e1f0',
        project_id='a1b2c3d4e5f60718293a4b5c6d7e8f90',
        is_admin=True, all_tenants=True, roles=['admin', 'member'],
        auth_token='interop-token')
    {'objects': scenario_objects, 'lifecycle': scenario_lifecycle}[scenario](
        ctx, seed)


if __name__ == '__main__':
    main()
