# SPDX-License-Identifier: MIT
# Sourced by the scripts.

# efap2p_tmpdir makes a temporary directory on tmpfs when there is one
# (writing a model's sysfs tree makes thousands of small files).
efap2p_tmpdir() {
	local base=${TMPDIR:-/tmp}
	if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; fi
	mktemp -d "$base/efap2p.XXXXXX"
}

# field NAME LINE prints the value of NAME=value in a line of key=value
# words, as the C benchmark harnesses print them.
field() {
	local kv
	for kv in $2; do
		if [ "${kv%%=*}" = "$1" ]; then
			echo "${kv#*=}"
			return
		fi
	done
}
