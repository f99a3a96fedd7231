#!/usr/bin/python3
"""Python-compatibility helper for api/objects tests.

Uses the real python3-magnum (15.0.1) objects and oslo.versionedobjects.

  pyobjects.py gen    prints a JSON list of primitives made by the real objects
  pyobjects.py check  reads a JSON list of primitives on stdin, hydrates each
                      with obj_from_primitive and prints, for each, either
                      {"ok": primitive re-serialized, "set": [fields]} or
                      {"error": class name, "message": text}
"""
import datetime
import json
import sys

from magnum import objects
from magnum.objects import base

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 29, 21, 50, 15, 123456, tzinfo=UTC)


def gen():
    objects.register_all() if hasattr(objects, "register_all") else None
    out = []
    ct = objects.ClusterTemplate(
        id=7, uuid="e11d4c4b-e237-4fbe-850f-9ff2d51f0a3b", project_id="p1", user_id="u1",
        name="ct", image_id="fedora", flavor_id="m1.small", master_flavor_id=None,
        keypair_id="kp", dns_nameserver="8.8.8.8", external_network_id="public",
        fixed_network=None, fixed_subnet=None, network_driver="flannel", volume_driver=None,
        apiserver_port="6443", docker_volume_size=10, docker_storage_driver="overlay2",
        cluster_distro="fedora-coreos", coe="kubernetes", http_proxy=None, https_proxy=None,
        no_proxy=None, registry_enabled=False, labels={"kube_tag": "v1.23.3", "n": 3, "b": True, "f": 1.5},
        tls_disabled=False, public=True, server_type="vm", insecure_registry=None,
        master_lb_enabled=None, floating_ip_enabled=None, hidden=False, tags="a,b",
        created_at=NOW, updated_at=None)
    ct.obj_reset_changes()
    out.append(ct.obj_to_primitive())
    cl = objects.Cluster(
        id=1, uuid="f25bb310-48ca-470f-8bf1-31bf6726c090", name="c1", project_id="p1",
        user_id="u1", cluster_template_id=ct.uuid, keypair="kp", docker_volume_size="10",
        labels={"kube_tag": "v1.23.3"}, master_flavor_id="m1.medium", flavor_id="m1.small",
        stack_id=None, status="CREATE_COMPLETE", status_reason=None, health_status="HEALTHY",
        health_status_reason={"api": "ok", "nodes": 3}, create_timeout=60,
        api_address="https://10.0.0.1:6443", discovery_url=None, ca_cert_ref="ca",
        magnum_cert_ref="mc", etcd_ca_cert_ref=None, front_proxy_ca_cert_ref=None,
        trust_id=None, trustee_username=None, trustee_password=None, trustee_user_id=None,
        coe_version="v1.23.3", container_version="1.12.6", fixed_network=None,
        fixed_subnet=None, floating_ip_enabled=True, master_lb_enabled=False,
        created_at=NOW, updated_at=NOW)
    cl.obj_reset_changes()
    cl.status = "UPDATE_IN_PROGRESS"
    cl.labels = {"kube_tag": "v1.24.0"}
    out.append(cl.obj_to_primitive())
    cl2 = objects.Cluster(id=2, uuid="0b4f0c4e-5b1e-4b8a-9a4e-2a2e0d2f8b11", status=None,
                          cluster_template=ct)
    out.append(cl2.obj_to_primitive(target_version="1.23",
                                    version_manifest={"Cluster": "1.23", "ClusterTemplate": "1.20"}))
    ng = objects.NodeGroup(
        id=3, uuid="f173648b-de56-4302-9b99-5a4c73af6133", name="default-master",
        cluster_id=cl.uuid, project_id="p1", docker_volume_size=None, labels={},
        flavor_id="m1.medium", image_id="fedora", node_addresses=["10.0.0.5", "10.0.0.6"],
        node_count=None, role="master", max_node_count=None, min_node_count=None,
        is_default=True, stack_id=None, status="CREATE_COMPLETE", status_reason=None,
        version=None, created_at=NOW, updated_at=None)
    out.append(ng.obj_to_primitive())
    out.append(objects.X509KeyPair(id=4, uuid="a0b6d3c1-0f6e-4a57-8f0c-0d4a6a2b9f10",
                                   certificate="CERT", private_key="KEY", intermediates=None,
                                   private_key_passphrase="pass", project_id="p1",
                                   user_id="u1", created_at=NOW).obj_to_primitive())
    out.append(objects.MagnumService(id=5, host="h", binary="magnum-conductor", disabled=False,
                                     disabled_reason=None, last_seen_up=NOW, forced_down=False,
                                     report_count="12", created_at=NOW,
                                     updated_at=NOW).obj_to_primitive())
    out.append(objects.Certificate(project_id="p1", user_id="u1", cluster_uuid=cl.uuid,
                                   csr="CSR", ca_cert_type="etcd").obj_to_primitive())
    out.append(objects.Quota(id=6, project_id="p1", resource="Cluster", hard_limit=10,
                             created_at=NOW).obj_to_primitive())
    out.append(objects.Stats(clusters=3, nodes=None).obj_to_primitive())
    out.append(objects.Federation(id=8, uuid="5d12f6fd-a196-4bf0-ae4c-1f639a523a52", name="f",
                                  project_id="p1", hostcluster_id=cl.uuid,
                                  member_ids=["a", "b"], status="CREATE_IN_PROGRESS",
                                  status_reason=None, properties={"dns-zone": "example.com."},
                                  created_at=NOW).obj_to_primitive())
    json.dump(out, sys.stdout, sort_keys=True)


def check():
    prims = json.load(sys.stdin)
    res = []
    for p in prims:
        try:
            o = base.MagnumObject.obj_from_primitive(p)
            res.append({"ok": o.obj_to_primitive(),
                        "set": sorted(f for f in o.fields if o.obj_attr_is_set(f)),
                        "changes": sorted(o.obj_what_changed())})
        except Exception as e:  # report, do not fail the whole run
            res.append({"error": type(e).__name__, "message": str(e)})
    json.dump(res, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]]()
