#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs a command from copies of the files named before "--", put in a
# folder every user can enter and read: a test that drops privileges (uid
# 65534, root of a user namespace an unprivileged user made) then reads
# them wherever the checkout is (cloned below a 0700 folder, a 0750 home).
# Each argument of the command that names one of the files (alone, or as
# NAME=FILE, or in a list that LD_PRELOAD takes) names its copy instead.
# Files go into the folder under their own names, links followed, so that
# what is looked for next to another is found there (libefasim.so next to
# efap2p, libefap2p-core.so next to libefap2p.so). Exits 77 (skipped),
# saying why, when uid 65534 cannot read the copies either.
#   with_copies.sh FILE... -- COMMAND [ARGS...]
set -u
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
map=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	cp -L "$1" "$dir/" && chmod 755 "$dir/$(basename "$1")" || exit 1
	map="$map$1	$dir/$(basename "$1")
"
	shift
done
[ $# -gt 1 ] || { echo "usage: with_copies.sh FILE... -- COMMAND [ARGS...]" >&2; exit 2; }
shift
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	for f in "$dir"/*; do
		setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$f" || {
			echo "skipped: uid 65534 cannot read $f (a folder above $dir is closed to it: set TMPDIR)"
			exit 77
		}
	done
fi
# the arguments, each file's path replaced by its copy's: in each word of
# an argument (words apart by spaces), FILE or NAME=FILE
swap() {
	printf '%s\n' "$map" | awk -v arg="$1" -F '\t' '
		NF == 2 { to[$1] = $2 }
		END {
			n = split(arg, w, " ")
			for (i = 1; i <= n; i++) {
				eq = index(w[i], "=")
				if (w[i] in to)
					w[i] = to[w[i]]
				else if (eq && substr(w[i], eq + 1) in to)
					w[i] = substr(w[i], 1, eq) to[substr(w[i], eq + 1)]
				out = out (i > 1 ? " " : "") w[i]
			}
			print n ? out : arg
		}'
}
n=$#
while [ "$n" -gt 0 ]; do
	a=$(swap "$1")
	shift
	set -- "$@" "$a"
	n=$((n - 1))
done
"$@"
