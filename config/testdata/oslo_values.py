#!/usr/bin/python3
"""Print option values as oslo.config parses them, as JSON, for config tests.

usage: oslo_values.py spec|real SPEC.json [--config-file F ...] [--config-dir D ...]

SPEC.json is a list of option definitions written by the Go test
({"group", "name", "kind", "default", "min", "max", "choices", "deprecated"}).

  spec: register exactly those options with oslo.config's own types, so the
        Go parser is compared with oslo.config on the same definitions.
  real: register Magnum's real options (magnum.conf, oslo.messaging rabbit,
        transport and notifier options, oslo.db, keystoneauth) as
        magnum-conductor does, and report the listed ones that exist.

Output: {"values": {"group.name": value}, "errors": {"group.name": "msg"},
"missing": ["group.name", ...]}. A load error prints {"fatal": "msg"}.
"""
import json
import sys

from oslo_config import cfg
from oslo_config import types


def spec_opt(d):
    kw = {}
    if d.get("deprecated"):
        kw["deprecated_opts"] = [cfg.DeprecatedOpt(n, group=g)
                                 for g, n in d["deprecated"]]
    default = d.get("default")
    kind = d["kind"]
    name = d["name"]
    if kind == "string":
        t = types.String(choices=d.get("choices"))
        if d.get("syntax") == "hostaddress":
            t = types.HostAddress()
        return cfg.Opt(name, type=t, default=default, **kw)
    if kind == "bool":
        return cfg.BoolOpt(name, default=default, **kw)
    if kind == "int":
        return cfg.IntOpt(name, default=default, min=d.get("min"),
                          max=d.get("max"), **kw)
    if kind == "float":
        return cfg.FloatOpt(name, default=default, min=d.get("min"),
                            max=d.get("max"), **kw)
    if kind == "list":
        return cfg.ListOpt(name, default=default, **kw)
    if kind == "multi":
        return cfg.MultiStrOpt(name, default=default, **kw)
    if kind == "dict":
        return cfg.DictOpt(name, default=default, **kw)
    raise SystemExit("unknown kind %r" % kind)


def register_real(conf):
    import magnum.conf  # noqa: F401  registers on cfg.CONF
    import oslo_messaging
    from oslo_messaging._drivers import impl_rabbit
    from oslo_messaging.notify import notifier
    from oslo_messaging import transport
    conf.register_opts(transport._transport_opts)
    from oslo_messaging._drivers import amqp
    from oslo_messaging import server
    conf.register_opts(impl_rabbit.rabbit_opts, group="oslo_messaging_rabbit")
    conf.register_opts(amqp.amqp_opts, group="oslo_messaging_rabbit")
    conf.register_opts(server._pool_opts)
    # What ka_loading.load_auth_from_conf_options registers for the
    # password plugin that [keystone_auth] auth_type selects.
    from keystoneauth1 import loading as ka_loading
    plugin = ka_loading.get_plugin_loader("password")
    plugin_opts = [o._to_oslo_opt() for o in plugin.get_options()]
    for o in plugin_opts:
        o.required = False  # checked when the plugin loads, not at parse
    conf.register_opts(plugin_opts, group="keystone_auth")
    conf.register_opts(notifier._notifier_opts,
                       group="oslo_messaging_notifications")
    # magnum.common.config.parse_args → rpc.set_defaults(control_exchange=...)
    oslo_messaging.set_transport_defaults("magnum")
    try:
        from oslo_messaging._drivers import base
        conf.register_opts(base.base_opts, group="oslo_messaging_rabbit")  # impl_rabbit does
    except Exception:  # pragma: no cover - older layouts
        pass
    try:
        from oslo_messaging.rpc import client
        conf.register_opts(client._client_opts)
    except Exception:  # pragma: no cover
        pass
    # magnum.common.service.prepare_service -> oslo_log.log.register_options
    from oslo_log import log as oslo_logging
    oslo_logging.register_options(conf)
    # oslo.reports' [oslo_reports] group
    from oslo_reports import opts as reports_opts
    reports_opts.set_defaults(conf)
    try:
        from pycadf import identifier  # noqa: F401  registers [audit]
    except Exception:  # pragma: no cover
        pass


def main():
    mode, spec_path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(spec_path) as f:
        spec = json.load(f)
    if mode == "spec":
        conf = cfg.ConfigOpts()
        for d in spec:
            conf.register_opt(spec_opt(d),
                              group=None if d["group"] == "DEFAULT"
                              else d["group"])
    elif mode == "real":
        conf = cfg.CONF
        register_real(conf)
    else:
        raise SystemExit("mode must be spec or real")

    out = {"values": {}, "errors": {}, "missing": []}
    try:
        conf(args, project="magnum", default_config_files=[],
             default_config_dirs=[])
    except Exception as e:
        print(json.dumps({"fatal": "%s: %s" % (type(e).__name__, e)}))
        return
    for d in spec:
        key = "%s.%s" % (d["group"], d["name"])
        g = None if d["group"] == "DEFAULT" else d["group"]
        try:
            conf._get_opt_info(d["name"], g)
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            out["missing"].append(key)
            continue
        try:
            # A NoSuchOptError here comes from interpolating $unknown.
            v = conf[d["name"]] if g is None else conf[g][d["name"]]
        except Exception as e:
            out["errors"][key] = "%s: %s" % (type(e).__name__, e)
            continue
        out["values"][key] = v
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
