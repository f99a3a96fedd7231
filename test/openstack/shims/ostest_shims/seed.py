"""Seeds the control plane: python3 -m ostest_shims.seed identity|resources|wait

Not a shim: test/openstack/up's seeding step, through openstacksdk as the
cloud admin (OSTEST_* variables, see up). Idempotent: what exists is kept.

identity:  the service project, the roles Octavia's policy and the service
           tokens need, a user per service (admin and service roles on the
           service project), the catalogue with 127.0.0.1 endpoints.
wait:      until nova-compute is mapped to a cell and cinder-volume is up.
resources: flavors, a 1 MiB raw image, a volume type, the external network
           "public" with a loopback subnet; prints the state as JSON.
"""
import json
import os
import sys
import time

import openstack

E = os.environ
REGION = E["OSTEST_REGION"]
SERVICES = [
    # name, type, port, path
    ("keystone", "identity", E["PORT_KEYSTONE"], "/v3"),
    ("nova", "compute", E["PORT_NOVA"], "/v2.1"),
    ("placement", "placement", E["PORT_PLACEMENT"], ""),
    ("neutron", "network", E["PORT_NEUTRON"], ""),
    ("glance", "image", E["PORT_GLANCE"], ""),
    ("cinder", "volumev3", E["PORT_CINDER"], "/v3/%(project_id)s"),
    ("octavia", "load-balancer", E["PORT_OCTAVIA"], ""),
]
SERVICE_USERS = ["nova", "placement", "neutron", "glance", "cinder", "octavia"]
# Octavia's policy names its own roles; "service" is what a service token
# must carry for Cinder and Neutron to accept it.
ROLES = ["admin", "member", "reader", "service", "load-balancer_member", "load-balancer_observer",
         "load-balancer_admin", "load-balancer_global_observer", "load-balancer_quota_admin"]
MEMBER_ROLES = ["member", "reader", "load-balancer_member"]
FLAVORS = [("m1.small", 1, 2048, 20), ("m1.medium", 2, 4096, 40)]
IMAGE = "ostest-raw"
VOLUME_TYPE = "ostest"
EXTERNAL = "public"
EXTERNAL_CIDR = E.get("OSTEST_EXTERNAL_CIDR", "127.77.0.0/16")


def connect():
    return openstack.connect(
        auth_url=E["OSTEST_AUTH_URL"], username="admin", password=E["ADMIN_PASSWORD"],
        project_name="admin", user_domain_name="Default", project_domain_name="Default",
        region_name=REGION, interface="public", identity_api_version="3")


def identity(conn):
    idc = conn.identity
    domain = idc.find_domain("default")
    service_project = idc.find_project("service", domain_id=domain.id) or \
        idc.create_project(name="service", domain_id=domain.id, description="OpenStack services")
    roles = {}
    for r in ROLES:
        roles[r] = idc.find_role(r) or idc.create_role(name=r)
    for name in SERVICE_USERS:
        u = idc.find_user(name, domain_id=domain.id)
        if u is None:
            u = idc.create_user(name=name, domain_id=domain.id, password=E["SERVICE_PASSWORD"])
        else:
            idc.update_user(u, password=E["SERVICE_PASSWORD"])
        for r in ("admin", "service"):
            idc.assign_project_role_to_user(service_project, u, roles[r])
    for name, typ, port, path in SERVICES:
        svc = next((s for s in idc.services() if s.type == typ), None) or \
            idc.create_service(name=name, type=typ, is_enabled=True)
        url = "http://127.0.0.1:%s%s" % (port, path)
        have = {e.interface: e for e in idc.endpoints(service_id=svc.id)}
        for iface in ("public", "internal", "admin"):
            e = have.get(iface)
            if e is None:
                idc.create_endpoint(service_id=svc.id, interface=iface, url=url, region_id=REGION)
            elif e.url != url:
                idc.update_endpoint(e, url=url)


def until(what, cond, timeout=300):
    deadline = time.time() + timeout
    while True:
        try:
            if cond():
                return
        except Exception as e:  # a service still starting answers 503 or refuses
            last = e
        else:
            last = None
        if time.time() > deadline:
            sys.exit("timed out waiting for %s (%s)" % (what, last))
        time.sleep(1)


def wait(conn):
    until("a hypervisor (nova-compute registered and mapped to cell1)",
          lambda: any(True for _ in conn.compute.hypervisors()))
    until("cinder-volume up",
          lambda: any(s["binary"] == "cinder-volume" and s["state"] == "up"
                      for s in conn.block_storage.get("/os-services").json()["services"]))
    until("the load-balancer API", lambda: list(conn.load_balancer.providers()) is not None)
    until("the network API", lambda: conn.network.find_extension("router") is not None)
    until("the image API", lambda: list(conn.image.images()) is not None)


def resources(conn):
    for name, vcpus, ram, disk in FLAVORS:
        if conn.compute.find_flavor(name) is None:
            conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram, disk=disk, is_public=True)
    image = conn.image.find_image(IMAGE)
    if image is not None and image.status != "active":
        conn.image.delete_image(image)
        image = None
    if image is None:
        image = conn.image.create_image(name=IMAGE, disk_format="raw", container_format="bare",
                                        visibility="public", data=b"\0" * (1 << 20))
    vt = conn.block_storage.find_type(VOLUME_TYPE)
    if vt is None:
        vt = conn.block_storage.create_type(name=VOLUME_TYPE, is_public=True,
                                            extra_specs={"volume_backend_name": "fake"})
    net = conn.network.find_network(EXTERNAL)
    if net is None:
        net = conn.network.create_network(
            name=EXTERNAL, is_router_external=True, is_shared=False,
            provider_network_type="flat", provider_physical_network="public")
    subnets = list(conn.network.subnets(network_id=net.id))
    if not subnets:
        prefix = EXTERNAL_CIDR.split("/")[0].rsplit(".", 2)[0]  # 127.77
        conn.network.create_subnet(
            name=EXTERNAL + "-subnet", network_id=net.id, ip_version=4, cidr=EXTERNAL_CIDR,
            gateway_ip=prefix + ".0.1", is_dhcp_enabled=False,
            allocation_pools=[{"start": prefix + ".0.10", "end": prefix + ".255.250"}])
    json.dump({
        "auth_url": E["OSTEST_AUTH_URL"],
        "endpoints": {typ: "http://127.0.0.1:%s%s" % (port, path) for _, typ, port, path in SERVICES},
        "region": REGION,
        "admin": {"username": "admin", "password": E["ADMIN_PASSWORD"], "project_name": "admin",
                  "user_domain_name": "Default", "project_domain_name": "Default"},
        "external_network_id": net.id,
        "external_network_name": EXTERNAL,
        "external_subnet_cidr": EXTERNAL_CIDR,
        "image_name": IMAGE,
        "image_id": image.id,
        "flavors": [f[0] for f in FLAVORS],
        "volume_type": VOLUME_TYPE,
        "member_roles": MEMBER_ROLES,
        "log_dir": E["OSTEST_HOST_LOG"],
        "release": E["OSTEST_RELEASE"],
    }, sys.stdout, indent=2)
    print()


def main():
    conn = connect()
    {"identity": identity, "wait": wait, "resources": resources}[sys.argv[1]](conn)


if __name__ == "__main__":
    main()
