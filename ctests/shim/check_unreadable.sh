#!/bin/sh
# SPDX-License-Identifier: MIT
# A file that is there but that this user cannot read is said to be so
# ("cannot be read (Permission denied)"), never "not found": the emulator's
# library as efap2p sim looks for it, the Go core as libefap2p looks for
# it, each either a file the user may not read or one in a folder it cannot
# enter. As uid 65534, from copies in a folder it can read; needs root and
# setpriv (exits 77, skipped, without them).
#   check_unreadable.sh EFAP2P LIBEFASIM LIBEFAP2P CORE P2P_CAPS
set -u
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || {
	echo "check_unreadable: skipped: needs root and setpriv"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir "$dir/closed"
for f in "$@"; do
	cp -L "$f" "$dir/" && cp -L "$f" "$dir/closed/" || exit 1
done
chmod 755 "$dir"/*
chmod 700 "$dir/closed"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" 2>&1; }
nobody test -r "$dir/efap2p" || {
	echo "check_unreadable: skipped: uid 65534 cannot read $dir (set TMPDIR)"; exit 77; }
fail=0
expect() {	# WHAT OUTPUT WORDS
	printf "%s: %s\n" "$1" "$(printf "%s\n" "$2" | grep -v "P2P_DMA")"
	if ! printf '%s\n' "$2" | grep -qi "$3"; then
		echo "FAIL: $1 does not say \"$3\""; fail=1
	elif printf '%s\n' "$2" | grep -qi "not found\|does not exist"; then
		echo "FAIL: $1 says \"not found\" of a file that is there"; fail=1
	fi
}
chmod 600 "$dir/libefasim.so"
expect "efap2p sim, its library unreadable" "$(nobody "$dir/efap2p" sim -- true)" \
	"libefasim.so cannot be read (permission denied)"
chmod 755 "$dir/libefasim.so"
expect "efap2p sim, EFASIM_LIBRARY in a closed folder" \
	"$(nobody env EFASIM_LIBRARY="$dir/closed/libefasim.so" "$dir/efap2p" sim -- true)" \
	"closed/libefasim.so cannot be read (permission denied)"
chmod 600 "$dir/libefap2p-core.so"
expect "libefap2p, its core unreadable" \
	"$(nobody env LD_PRELOAD="$dir/libefap2p.so" "$dir/efap2p" sim -- "$dir/p2p_caps")" \
	"libefap2p-core.so cannot be read (Permission denied)"
expect "libefap2p, EFAP2P_CORE in a closed folder" \
	"$(nobody env LD_PRELOAD="$dir/libefap2p.so" EFAP2P_CORE="$dir/closed/libefap2p-core.so" "$dir/efap2p" sim -- "$dir/p2p_caps")" \
	"closed/libefap2p-core.so cannot be read (Permission denied)"
exit $fail
