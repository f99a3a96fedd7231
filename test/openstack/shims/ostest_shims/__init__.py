"""Shims the tests' OpenStack control plane needs (test/openstack).

Each module says why it exists. They are put on the services' PYTHONPATH by
test/openstack/up, with ostest_shims-0.dist-info/entry_points.txt beside
them so that stevedore finds the drivers by name, as it finds the services'
own.
"""
