#!/usr/bin/python3
"""Drive Magnum 15.0.1's conductor cert_manager on the x509keypair backend.

Usage: cert_manager_db.py <magnum.conf> <op>, JSON request on stdin, JSON
answer on stdout. magnum.conf sets [database]connection,
[certificates]cert_manager_type = x509keypair and [cluster]temp_cache_dir.

op "use": the cluster's refs were written by the Go conductor; sign the CSR
  with each CA type, read the CAs, write the client files and return them.
op "generate": generate_certificates_to_cluster for a new cluster, return
  its refs.
op "delete": delete_certificates_from_cluster (Magnum deletes only the CA
  and the client certificate).
"""
import json
import sys
import types

import magnum.conf

CONF = magnum.conf.CONF
CONF(['--config-file', sys.argv[1]], project='magnum')

from magnum.common import context  # noqa: E402
from magnum.conductor.handlers.common import cert_manager  # noqa: E402


def cluster_of(req):
    return types.SimpleNamespace(
        uuid=req['uuid'], name=req.get('name'),
        ca_cert_ref=req.get('ca_cert_ref'),
        magnum_cert_ref=req.get('magnum_cert_ref'),
        etcd_ca_cert_ref=req.get('etcd_ca_cert_ref'),
        front_proxy_ca_cert_ref=req.get('front_proxy_ca_cert_ref'))


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def main():
    op = sys.argv[2]
    req = json.load(sys.stdin)
    ctx = context.make_admin_context(all_tenants=True)
    cluster = cluster_of(req)
    out = {}
    if op == 'use':
        for t in (None, 'etcd', 'front-proxy'):
            out['signed_%s' % t] = text(cert_manager.sign_node_certificate(
                cluster, req['csr'], ca_cert_type=t, context=ctx))
            out['ca_%s' % t] = text(cert_manager.get_cluster_ca_certificate(
                cluster, context=ctx, ca_cert_type=t).get_certificate())
        ca, key, cert = cert_manager.create_client_files(cluster, context=ctx)
        for name, f in (('client_ca', ca), ('client_key', key),
                        ('client_cert', cert)):
            f.seek(0)
            out[name] = f.read()
    elif op == 'generate':
        cert_manager.generate_certificates_to_cluster(cluster, context=ctx)
        for k in ('ca_cert_ref', 'magnum_cert_ref', 'etcd_ca_cert_ref',
                  'front_proxy_ca_cert_ref'):
            out[k] = getattr(cluster, k)
    elif op == 'delete':
        cert_manager.delete_certificates_from_cluster(cluster, context=ctx)
    json.dump(out, sys.stdout)


if __name__ == '__main__':
    main()
