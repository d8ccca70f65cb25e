# SPDX-License-Identifier: MIT
# Sourced by the scripts that build and run the OCI image (build-image.sh,
# ctests/fleet/fleet.sh).

# efap2p_podman STORE ARGS...: podman, as root, with a store of its own in
# STORE (made if missing), so that nothing of the machine's podman is read
# or changed: the vfs storage driver, runc and cgroupfs, events and logs
# in files, and no default ulimits (crun, overlay and the default ulimits
# fail in containers and on hosts with hybrid cgroups).
efap2p_podman() {
	local store=$1
	shift
	mkdir -p "$store"
	[ -e "$store/containers.conf" ] || cat > "$store/containers.conf" <<-CONF
	[containers]
	default_ulimits = []
	log_driver = "k8s-file"
	[engine]
	events_logger = "file"
	events_logfile_path = "$store/events.log"
	cgroup_manager = "cgroupfs"
	runtime = "runc"
	CONF
	CONTAINERS_CONF=$store/containers.conf \
		podman --root "$store/root" --runroot "$store/run" --storage-driver vfs --runtime runc \
		--cgroup-manager cgroupfs --tmpdir "$store/tmp" "$@"
}
