#!/usr/bin/python3
"""Cross-language peer for api/oslo live tests (run with Debian's /usr/bin/python3).

Modes (argv[1]):
  client <url> <exchange> <topic>    call/cast the Go server, print one JSON line per check
  compressed_client <url> <exchange> <topic> <compression>
                                     a few calls and a cast with kombu_compression set
  server <url> <exchange> <topic> [compression]
                                     serve echo/fail methods until stdin closes; prints READY
  listener <url> <exchange> <topic> <n>   print n notifications as JSON lines
"""
import json
import sys
import threading

from oslo_config import cfg
import oslo_messaging as messaging

import magnum.common.exception as mexc


def transport(url, exchange, notify=False):
    conf = cfg.ConfigOpts()
    conf([], project='interop')
    from oslo_messaging._metrics import client as metrics_client
    conf.register_opts(metrics_client.oslo_messaging_metrics,
                       group='oslo_messaging_metrics')
    messaging.set_transport_defaults(control_exchange=exchange)
    if notify:
        return conf, messaging.get_notification_transport(conf, url=url)
    return conf, messaging.get_rpc_transport(
        conf, url=url, allowed_remote_exmods=['magnum.common.exception'])


CTX = {'request_id': 'req-from-python', 'global_request_id': 'req-global-py',
       'user_id': 'py-user', 'project_id': 'py-project', 'is_admin': True,
       'roles': ['admin'], 'auth_token': 'py-secret-token'}


def out(**kw):
    print(json.dumps(kw), flush=True)


def describe(exc):
    return {'type': type(exc).__name__, 'module': type(exc).__module__,
            'mro': [c.__module__ + '.' + c.__name__ for c in type(exc).__mro__],
            'str': str(exc).split('\n')[0],
            'kwargs': getattr(exc, 'kwargs', None),
            'exc_type': getattr(exc, 'exc_type', None),
            'value': getattr(exc, 'value', None),
            'code': getattr(exc, 'code', None)}


def client(url, exchange, topic):
    conf, tr = transport(url, exchange)
    target = messaging.Target(topic=topic)
    c = messaging.RPCClient(tr, target, timeout=10)
    checks = [
        ('ping', 'ping_conductor', {}),
        ('echo', 'echo', {'value': {'a': [1, 'é']}}),
        ('not_found', 'not_found', {'value': 'abc'}),
        ('plain_error', 'plain_error', {}),
        ('boom', 'boom', {}),
        ('no_such_method', 'nope', {}),
        ('type_error', 'ping_conductor', {'bogus': 1}),
        ('not_implemented', 'not_implemented', {}),
        ('not_supported', 'not_supported', {}),
    ]
    for name, method, args in checks:
        try:
            res = c.call(CTX, method, **args)
            out(check=name, ok=True, result=res)
        except Exception as exc:  # noqa
            out(check=name, ok=False, error=describe(exc))
    try:
        c.prepare(version='2.0').call(CTX, 'ping_conductor')
        out(check='version', ok=True)
    except Exception as exc:  # noqa
        out(check='version', ok=False, error=describe(exc))
    try:
        c.prepare(timeout=1).call(CTX, 'sleep', value=3000)
        out(check='timeout', ok=True)
    except Exception as exc:  # noqa
        out(check='timeout', ok=False, error=describe(exc))
    try:
        res = c.prepare(timeout=10, call_monitor_timeout=2).call(CTX, 'sleep', value=2600)
        out(check='call_monitor', ok=True, result=res)
    except Exception as exc:  # noqa
        out(check='call_monitor', ok=False, error=describe(exc))
    import os
    vectors = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'vectors', 'failure_reply.json')
    with open(vectors) as f:
        failures = json.load(f)['failures']
    for i, _ in enumerate(failures):
        try:
            c.call(CTX, 'raise_vector', value=i)
            out(check='vector_%d' % i, ok=True)
        except Exception as exc:  # noqa
            out(check='vector_%d' % i, ok=False, error=describe(exc))
    c.cast(CTX, 'record', value=1, note='python-cast')
    c.prepare(fanout=True).cast(CTX, 'record', value=1, note='python-fanout')
    out(check='casts', ok=True)
    tr.cleanup()


def compress(conf, compression):
    """Set [oslo_messaging_rabbit] kombu_compression (read when the
    driver opens its connections, after the transport is made)."""
    if compression:
        conf.set_override('kombu_compression', compression,
                          group='oslo_messaging_rabbit')


def compressed_client(url, exchange, topic, compression):
    conf, tr = transport(url, exchange)
    compress(conf, compression)
    c = messaging.RPCClient(tr, messaging.Target(topic=topic), timeout=10)
    for name, method, args in [('ping', 'ping_conductor', {}),
                               ('echo', 'echo', {'value': {'a': [1, 'é']}}),
                               ('not_found', 'not_found', {'value': 'abc'})]:
        try:
            out(check=name, ok=True, result=c.call(CTX, method, **args))
        except Exception as exc:  # noqa
            out(check=name, ok=False, error=describe(exc))
    c.cast(CTX, 'record', value=1, note='python-compressed-cast')
    out(check='casts', ok=True)
    tr.cleanup()


class Endpoint(object):
    def echo(self, ctxt, value, note=None):
        return {'value': value, 'request_id': ctxt.get('request_id'),
                'user_id': ctxt.get('user_id'), 'note': note}

    def fail_not_supported(self, ctxt):
        raise mexc.NotSupported(operation='Resizing')

    def fail_conflict_message(self, ctxt):
        raise mexc.Conflict('Multiple clusters exist with same name.')

    def fail_value_error(self, ctxt):
        raise ValueError('bad value')

    def slow(self, ctxt, seconds):
        import time
        time.sleep(seconds)
        return 'slow done'


def server(url, exchange, topic, compression=None):
    conf, tr = transport(url, exchange)
    compress(conf, compression)
    target = messaging.Target(topic=topic, server='pyserver')
    srv = messaging.get_rpc_server(tr, target, [Endpoint()], executor='threading')
    srv.start()
    out(ready=True)
    sys.stdin.read()
    srv.stop()
    srv.wait()
    tr.cleanup()


class NotifEndpoint(object):
    def __init__(self, n, done):
        self.n = n
        self.done = done
        self.lock = threading.Lock()

    def _got(self, priority, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            out(priority=priority, ctxt=ctxt, publisher_id=publisher_id,
                event_type=event_type, payload=payload, metadata=metadata)
            self.n -= 1
            if self.n <= 0:
                self.done.set()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('info', ctxt, publisher_id, event_type, payload, metadata)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('error', ctxt, publisher_id, event_type, payload, metadata)


def listener(url, exchange, topic, n):
    conf, tr = transport(url, exchange, notify=True)
    done = threading.Event()
    lst = messaging.get_notification_listener(
        tr, [messaging.Target(topic=topic)], [NotifEndpoint(int(n), done)],
        executor='threading')
    lst.start()
    out(ready=True)
    done.wait(60)
    lst.stop()
    lst.wait()
    tr.cleanup()


if __name__ == '__main__':
    mode = sys.argv[1]
    {'client': client, 'compressed_client': compressed_client,
     'server': server, 'listener': listener}[mode](*sys.argv[2:])
