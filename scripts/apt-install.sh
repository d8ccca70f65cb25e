#!/bin/sh
# SPDX-License-Identifier: MIT
# apt-install.sh WHAT LOG PACKAGE...: installs the Debian packages of the
# list that are not installed yet (make deps, make test-deps, make
# fleet-test), as root or through sudo, in one line: apt-get's output goes
# to LOG, shown whole when it fails. A fresh cloud host's unattended
# upgrades hold the dpkg lock for minutes after boot: apt-get waits for it
# (DPkg::Lock::Timeout) instead of failing, and the package lists are read
# again (apt-get update, retried while another apt holds their lock) only
# when they lack a package of the list, as on a host that never read them.
#   APT_LOCK_TIMEOUT  seconds to wait for a lock (default 900)
set -eu
what=$1 log=$2
shift 2
wait=${APT_LOCK_TIMEOUT:-900}
missing=
for p in "$@"; do
	s=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null) || s=
	[ "$s" = installed ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "$what: the $# Debian packages are installed"
	exit 0
fi
if [ "$(id -u)" = 0 ]; then
	sudo=
elif command -v sudo >/dev/null; then
	sudo=sudo
else
	echo "$what: installing packages needs root, and there is no sudo: run it as root" >&2
	exit 1
fi
n=$(echo $missing | wc -w)
echo "$what: installing $n Debian packages (apt-get; its output in $log)"
mkdir -p "$(dirname "$log")"
apt() { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" "$@"; }
(
	# shellcheck disable=SC2086
	if ! apt-get -s install --no-install-recommends $missing >/dev/null 2>&1; then
		end=$(($(date +%s) + wait))
		until apt update; do
			[ "$(date +%s)" -lt "$end" ] || exit 1
			echo "apt-install.sh: apt-get update failed (another apt holding the lists' lock?): again in 10 s"
			sleep 10
		done
	fi
	# shellcheck disable=SC2086
	apt install -y --no-install-recommends $missing
) > "$log" 2>&1 || {
	cat "$log"
	echo "$what: apt-get failed (its output above, also in $log)" >&2
	exit 1
}
