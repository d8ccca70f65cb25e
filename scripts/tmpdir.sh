# Sourced by the scripts: a temporary directory on tmpfs when there is one
# (writing a model's sysfs tree makes thousands of small files).
efap2p_tmpdir() {
	local base=${TMPDIR:-/tmp}
	if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; fi
	mktemp -d "$base/efap2p.XXXXXX"
}
