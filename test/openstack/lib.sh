# Shared by build, up and down (sourced, not run). Paths of the OpenStack
# control plane the tests run: the chroot, its run directory (configuration,
# logs, pid files, state) and the lock that serialises build, up and down.

# OSTEST_ROOT may move the chroot (a developer's machine without /srv room);
# the tests read the state file under it (test/openstack: StateFile).
OSTEST_ROOT=${OSTEST_ROOT:-/srv/openstack-zed}
OSTEST_SUITE=bookworm
OSTEST_LOCK=$OSTEST_ROOT.lock

# The Debian packages of the control plane (OpenStack Zed in bookworm), with
# --no-install-recommends: the recommends pull systemd, udev, open-iscsi and
# ceph-common. The service packages themselves (nova-api, neutron-server…)
# run init scripts and create users on install; the chroot takes only their
# python3-* libraries, runs the services from their console scripts' entry
# points, and takes the configuration files it needs (api-paste.ini…) from
# the *-common packages unpacked with dpkg-deb -x (build: common_files).
OSTEST_PKGS="python3-keystone python3-nova python3-placement python3-neutron python3-glance
  python3-octavia python3-cinder python3-openstackclient python3-octaviaclient python3-pymysql
  python3-gunicorn python3-memcache"
OSTEST_COMMON_PKGS="nova-common neutron-common glance-common cinder-common octavia-common keystone"

# ostest_mirror prints the Debian mirror apt uses on this machine (the first
# deb822 URI or sources.list line that is not the security archive).
ostest_mirror() {
  local m=""
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    m=$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' /etc/apt/sources.list.d/*.sources |
      grep -v -- '-security' | grep '/debian/\?$' | head -n1 || true)
  fi
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" && $2 !~ /^\[/ {print $2} $1 == "deb" && $2 ~ /^\[/ {print $3}' /etc/apt/sources.list |
      grep -v -- '-security' | head -n1 || true)
  fi
  echo "${m%/}"
}

# ostest_probe exits 0 when the chroot at $1 holds every service at the
# release the templates are written for, and the files build unpacks.
ostest_probe() {
  [ -x "$1/usr/bin/python3" ] && [ -x "$1/usr/bin/openstack" ] || return 1
  [ -f "$1/usr/share/ostest/built" ] || return 1
  local f
  for f in usr/lib/python3/dist-packages/cinder/tests/fake_driver.py usr/lib/python3/dist-packages/nova/virt/fake.py \
    usr/share/nova-common/api-paste.ini usr/share/neutron-common/api-paste.ini \
    usr/share/glance-common/glance-api-paste.ini usr/share/cinder-common/api-paste.ini; do
    [ -f "$1/$f" ] || return 1
  done
  chroot "$1" /usr/bin/python3 -W ignore -c '
import importlib.metadata as m, sys
import keystone, nova, placement, neutron, glance, octavia, cinder, gunicorn, pymysql  # noqa
want = {"keystone": "22.", "nova": "26.", "openstack-placement": "8.", "neutron": "21.", "glance": "25.",
        "octavia": "11.", "cinder": "21."}
got = {k: m.version(k) for k in want}
bad = {k: v for k, v in got.items() if not v.startswith(want[k])}
sys.exit("unexpected releases: %s" % bad if bad else 0)
' >/dev/null 2>&1
}

# ostest_unmount_all unmounts every mount point below $1, deepest first, and
# fails if any is left (the tree may be removed next).
ostest_unmount_all() {
  local mp
  awk -v root="$1" '$2 == root || index($2, root "/") == 1 {print $2}' /proc/mounts | sort -r |
    while read -r mp; do umount -l "$mp"; done
  if awk -v root="$1" '$2 == root || index($2, root "/") == 1 {found = 1} END {exit !found}' /proc/mounts; then
    echo "cannot unmount everything below $1" >&2
    return 1
  fi
}

# ostest_mount gives the chroot /proc and /dev (with /dev/shm). Its network
# namespace is the host's: MariaDB and RabbitMQ on 127.0.0.1 are reached as
# they are, and the services listen on 127.0.0.1 for the tests.
ostest_mount() {
  mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"
  if ! mountpoint -q "$1/dev"; then
    mount --rbind /dev "$1/dev"
    # An unmount below the chroot's /dev must never reach the host's.
    mount --make-rslave "$1/dev"
  fi
  cp /etc/hosts "$1/etc/hosts"
}

# --- The running plane (up, down) ------------------------------------------

# The run directory as the chroot's processes see it, and on the host.
OSTEST_IN=/ostest
OSTEST_RUN=$OSTEST_ROOT$OSTEST_IN
OSTEST_STATE=$OSTEST_RUN/state.json
OSTEST_REGION=RegionOne
OSTEST_RELEASE="OpenStack Zed (Debian $OSTEST_SUITE)"

# The services' ports on 127.0.0.1: not the usual 5000, 8774, 9696…, which
# a developer's own devstack may hold, and none of MariaDB's, RabbitMQ's
# (5672, 15672, 25672, 4369), PostgreSQL's, Redis', MQTT's or NATS'.
PORT_KEYSTONE=${OSTEST_PORT_KEYSTONE:-15000}
PORT_NOVA=${OSTEST_PORT_NOVA:-18774}
PORT_PLACEMENT=${OSTEST_PORT_PLACEMENT:-18778}
PORT_NEUTRON=${OSTEST_PORT_NEUTRON:-19696}
PORT_GLANCE=${OSTEST_PORT_GLANCE:-19292}
PORT_CINDER=${OSTEST_PORT_CINDER:-18776}
PORT_OCTAVIA=${OSTEST_PORT_OCTAVIA:-19876}
OSTEST_PORTS="$PORT_KEYSTONE $PORT_NOVA $PORT_PLACEMENT $PORT_NEUTRON $PORT_GLANCE $PORT_CINDER $PORT_OCTAVIA"

OSTEST_SERVICES="keystone placement nova-api nova-conductor nova-scheduler nova-compute neutron-server glance-api
  cinder-api cinder-scheduler cinder-volume octavia-api octavia-worker"
OSTEST_DATABASES="ostest_keystone ostest_placement ostest_nova_api ostest_nova_cell0 ostest_nova ostest_neutron
  ostest_glance ostest_cinder ostest_octavia"

# ostest_chroot runs a command in the chroot with the shims importable.
ostest_chroot() {
  chroot "$OSTEST_ROOT" /usr/bin/env -u PYTHONHOME -u VIRTUAL_ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 PYTHONPATH="$OSTEST_IN/shims" PYTHONDONTWRITEBYTECODE=1 "$@"
}

# ostest_start starts a service in its own session (down stops the whole
# process group: gunicorn's and oslo.service's workers with it), its output
# in log/NAME.out and its pid in pid/NAME.pid. The lock descriptors are
# not inherited: a service holding them would block the next up or down.
ostest_start() {
  local name=$1
  shift
  setsid chroot "$OSTEST_ROOT" /usr/bin/env -u PYTHONHOME -u VIRTUAL_ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 PYTHONPATH="$OSTEST_IN/shims" PYTHONDONTWRITEBYTECODE=1 "$@" \
    >"$OSTEST_RUN/log/$name.out" 2>&1 </dev/null 8>&- 9>&- &
  echo $! >"$OSTEST_RUN/pid/$name.pid"
}

# ostest_pid prints the pid of service $1 when it runs (from the chroot:
# a pid reused by another process is not taken for it).
ostest_pid() {
  local pid
  pid=$(cat "$OSTEST_RUN/pid/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$OSTEST_ROOT" ] || return 1
  echo "$pid"
}

# ostest_stop_all stops every service up started: TERM to its process
# group, KILL after 20 s.
ostest_stop_all() {
  local name pid pids=() i
  for name in $OSTEST_SERVICES; do
    if pid=$(ostest_pid "$name"); then
      kill -TERM -- "-$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for i in $(seq 1 40); do
    local alive=()
    for pid in "${pids[@]}"; do
      if [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$OSTEST_ROOT" ]; then alive+=("$pid"); fi
    done
    pids=("${alive[@]}")
    [ "${#pids[@]}" -eq 0 ] && break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  rm -f "$OSTEST_RUN"/pid/*.pid 2>/dev/null || true
}

# ostest_await_http waits until 127.0.0.1:$1$2 answers HTTP, failing when
# the service $3 dies or after two minutes.
ostest_await_http() {
  local i
  for i in $(seq 1 240); do
    if [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1$2")" != 000 ]; then return 0; fi
    if ! ostest_pid "$3" >/dev/null; then
      echo "$3 exited; the end of $OSTEST_RUN/log/$3.out:" >&2
      tail -n 20 "$OSTEST_RUN/log/$3.out" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "$3 does not answer on 127.0.0.1:$1 after 2 minutes; see $OSTEST_RUN/log/" >&2
  return 1
}

# ostest_healthy says whether the plane is up: its state file written,
# every service running, every API answering.
ostest_healthy() {
  local name p
  [ -s "$OSTEST_STATE" ] || return 1
  for name in $OSTEST_SERVICES; do ostest_pid "$name" >/dev/null || return 1; done
  for p in $OSTEST_PORTS; do
    [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/")" != 000 ] || return 1
  done
}
