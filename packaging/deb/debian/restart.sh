# restart_conductor restarts Debian's magnum-conductor service if it is
# running, under systemd (which also rereads our unit drop-in) or under
# sysvinit (/etc/init.d/magnum-conductor's pid file), through
# deb-systemd-invoke or invoke-rc.d so that policy-rc.d is obeyed.
restart_conductor() {
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		if [ -e /lib/systemd/system/magnum-conductor.service ]; then
			deb-systemd-invoke try-restart magnum-conductor.service || true
		fi
	elif [ -x /etc/init.d/magnum-conductor ] &&
		start-stop-daemon --status --pidfile /var/run/magnum/magnum-conductor.pid; then
		invoke-rc.d magnum-conductor restart || true
	fi
}
