#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_dist.sh CASE: the files of dist/ as the engines read them.
#   udev EFAP2P  udevadm test runs the rule's RUN for an RDMA device added,
#              removed and renamed (move), for an EFA function and every
#              accelerator of every machine model (as the oracle classifies
#              them: efap2p topo inside efap2p sim) added, bound, unbound and
#              removed, and not for other events (root: a private /sys)
#   unit       the boot unit orders itself before its readers
#   rules      promtool checks and tests the alerting rules
#   daemonset  the DaemonSet mounts /run/efap2p, leaves EFAP2P_TOPOLOGY
#              alone, runs the tool where the package puts it, and names
#              the image make image builds (make fleet-test runs it)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
case=$1
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

case $case in
udev)
	[ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace)"
	command -v udevadm >/dev/null && command -v unshare >/dev/null || skip "udevadm or unshare missing"
	# udevadm test DEVPATH ACTION [ENV...] in a namespace whose /sys and
	# /run/udev are private tmpfs; prints the commands RUN would start
	# (systemd 252 says "run: 'CMD'", 257 "RUN{program} : CMD").
	run() {
		unshare -m bash -s "$src/dist/70-efap2p-topology.rules.in" "$@" <<-'SH'
		set -e
		rules=$1 dev=$2 action=$3 subsystem=$4
		shift 4
		mount -t tmpfs tmpfs /sys
		mkdir -p /run/udev && mount -t tmpfs tmpfs /run/udev && mkdir /run/udev/rules.d
		sed 's|@systemctl@|/bin/systemctl|' "$rules" >/run/udev/rules.d/70-efap2p-topology.rules
		mkdir -p "/sys$dev" "/sys/class/$subsystem"
		ln -s "/sys/class/$subsystem" "/sys$dev/subsystem"
		printf '%s\n' "$@" >"/sys$dev/uevent"
		SYSTEMD_DEVICE_VERIFY_SYSFS=0 udevadm test --action="$action" "$dev" 2>/dev/null |
			sed -n -e "s/^run: '\\(.*\\)'\$/\\1/p" -e 's/^ *RUN{program} *: *//p' || true
		SH
	}
	want="/bin/systemctl --no-block try-restart efap2p-topology.service"
	ib=/devices/pci0000:00/0000:00:05.0/infiniband/rdmap0s5
	gpu=/devices/pci0000:00/0000:00:1e.0
	for a in add remove move; do
		[ "$(run "$ib" $a infiniband NAME=rdmap0s5)" = "$want" ] || fail "infiniband $a does not refresh the file"
	done
	[ -z "$(run "$ib" change infiniband NAME=rdmap0s5)" ] || fail "infiniband change refreshes the file"
	for a in add bind unbind remove; do
		[ "$(run "$gpu" $a pci PCI_CLASS=30200 PCI_ID=10DE:2330)" = "$want" ] || fail "GPU $a does not refresh the file"
		[ "$(run "$gpu" $a pci PCI_CLASS=20000 PCI_ID=1D0F:EFA1)" = "$want" ] || fail "EFA $a does not refresh the file"
	done
	# every device the oracle counts as an accelerator, in every machine
	# model: what `efap2p topo --json` lists as one inside the emulated
	# host (p2p's classification), with the class its sysfs tree gives it
	efap2p=${2:-}
	[ -x "$efap2p" ] || fail "usage: test_dist.sh udev EFAP2P (the built efap2p)"
	models=$("$efap2p" sim list | awk '{print $1}')
	[ -n "$models" ] || fail "efap2p sim list lists no model"
	accels=$(for m in $models; do
		"$efap2p" sim --machine "$m" -- sh -c '"$0" topo --json | python3 -c "$1"' "$efap2p" '
import json, os, sys
for d in json.load(sys.stdin)["devices"]:
    if d["kind"] != "accelerator":
        continue
    with open(os.path.join(os.environ["SYSFS_PATH"], "bus/pci/devices", d["addr"], "class")) as f:
        cls = int(f.read(), 16)
    print("PCI_CLASS=%X PCI_ID=%s:%s" % (cls, d["vendor"].upper(), d["device"].upper()))
' 2>/dev/null || echo "FAILED $m"
	done | sort -u)
	case $accels in *FAILED*) fail "listing the accelerators of the models: $accels" ;; esac
	echo "$accels" | grep -q "PCI_ID=1D0F:7364" || fail "no model has a Trainium2 (1d0f:7364): $accels"
	while read -r class id; do
		for a in add bind unbind remove; do
			[ "$(run "$gpu" $a pci "$class" "$id")" = "$want" ] ||
				fail "accelerator $class $id: $a does not refresh the file"
		done
	done <<<"$accels"
	echo "udev: the rule refreshes the file for the $(echo "$accels" | wc -l) kinds of accelerator of $(echo $models | wc -w) models"
	[ -z "$(run "$gpu" move pci PCI_CLASS=30200 PCI_ID=10DE:2330)" ] || fail "a PCI move refreshes the file"
	[ -z "$(run "$gpu" add pci PCI_CLASS=10802 PCI_ID=1D0F:8061)" ] || fail "an NVMe device refreshes the file"
	;;
unit)
	unit=$src/dist/efap2p-topology.service.in
	before=$(sed -n 's/^Before=//p' "$unit")
	for u in slurmd.service kubelet.service containerd.service; do
		[[ " $before " == *" $u "* ]] || fail "the unit is not ordered before $u: Before=$before"
	done
	;;
rules)
	command -v promtool >/dev/null || skip "promtool missing (Debian package prometheus)"
	promtool check rules "$src/dist/efap2p.rules.yml" || fail "promtool check rules"
	(cd "$here" && promtool test rules rules_test.yml) || fail "promtool test rules"
	;;
daemonset)
	# the last line: make says first where it found Go when not on PATH
	image=$(make -s -C "$src" print-IMAGE | tail -1) || fail "make print-IMAGE"
	python3 - "$src/dist/efap2p-check.daemonset.yaml" "$src/debian/efap2p.install" "$image" <<-'PY' || fail "the DaemonSet"
	import sys, yaml
	ds = yaml.safe_load(open(sys.argv[1]))
	installed = ["/" + l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
	spec = ds["spec"]["template"]["spec"]
	c = spec["containers"][0]
	assert ds["kind"] == "DaemonSet", ds["kind"]
	assert not any(e["name"] == "EFAP2P_TOPOLOGY" for e in c.get("env", [])), "forces EFAP2P_TOPOLOGY"
	mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
	assert mounts.get("/run/efap2p", {}).get("readOnly"), "/run/efap2p is not mounted read-only"
	vols = {v["name"]: v for v in spec["volumes"]}
	assert vols[mounts["/run/efap2p"]["name"]]["hostPath"]["path"] == "/run/efap2p", "not the host's /run/efap2p"
	script = " ".join(c["command"] + c["args"])
	assert "/usr/local" not in script, "a /usr/local path"
	tools = {w for w in script.split() if w.endswith("bin/efap2p")}
	assert tools and all(t in installed for t in tools), f"{tools} not where the package installs it ({installed})"
	for fmt in ("prometheus", "nfd", "line"):
	    assert f"--format {fmt}" in script, f"no --format {fmt}"
	assert "nodeSelector" not in spec, "a node selector: CPU nodes are not applicable, and healthy"
	assert c["image"] == sys.argv[3], f"the image {c['image']} is not the one make image builds, {sys.argv[3]}"
	PY
	;;
*) fail "unknown case $case" ;;
esac
echo "fleet.$case: ok"
