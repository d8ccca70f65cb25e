#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-image.sh DEB_DIR IMAGE ARCHIVE: the OCI image the DaemonSet runs
# (dist/efap2p-check.daemonset.yaml), without a registry: a Debian 12 root
# from Debian's archive (mmdebstrap, the essential set) with the efap2p
# package of DEB_DIR, imported into a podman store of its own as IMAGE and
# saved as an OCI archive, ARCHIVE. No rdma-core: which EFA devices
# libibverbs lists depends on each workload's image, not on the check's,
# so the check says it did not look. Load it where the
# DaemonSet runs (podman load -i ARCHIVE; ctr images import, or a push to a
# registry with the manifest's image changed to match). Root (mmdebstrap,
# podman). make image runs it; make fleet-test runs the image.
#   EFAP2P_DEBIAN_MIRROR  the Debian mirror (default deb.debian.org)
set -euo pipefail
debs=$(cd "$1" && pwd) image=$2 archive=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/podman.sh"
mirror=${EFAP2P_DEBIAN_MIRROR:-http://deb.debian.org/debian}
deb=$(ls "$debs"/efap2p_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "build-image.sh: no efap2p package in $debs (make deb)" >&2; exit 1; }
work=$(dirname "$archive")/image.tmp
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
# the packages' files, not their documentation (but efap2p's, which its
# help names) nor manuals and translations
SOURCE_DATE_EPOCH=$(stat -c %Y "$deb") mmdebstrap --variant=essential --include="$deb" \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/efap2p/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	bookworm "$work/root.tar" "$mirror"
efap2p_podman "$work/store" image rm -f "$image" >/dev/null 2>&1 || true
efap2p_podman "$work/store" import --change 'CMD ["/usr/bin/efap2p", "check"]' "$work/root.tar" "$image" >/dev/null
rm -f "$archive"
efap2p_podman "$work/store" save --format oci-archive -o "$archive" "$image"
echo "$image: $archive ($(du -m "$archive" | cut -f1) MB)"
