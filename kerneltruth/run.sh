#!/bin/bash
# SPDX-License-Identifier: MIT
# make kernel-truth: boot real kernels under QEMU and hold efap2p's oracle
# to their p2pdma verdicts (docs/kernel-releases.md, "Checked against
# booted kernels"). Run as root from the repository root.
#
#   kerneltruth/run.sh            build what is missing, boot every kernel in
#                                 every scenario, write kerneltruth/fixtures/
#   KT_BUILDS="6.1" KT_SCENARIOS="epyc amd-iommu" kerneltruth/run.sh
#                                 a subset (fixtures of the others are kept)
#   KT_REPLAY_ONLY=1 kerneltruth/run.sh
#                                 only compare the recorded fixtures again
#
# Kernel sources, build trees and images live in the cache
# (${XDG_CACHE_HOME:-$HOME/.cache}/efap2p/kernel-truth, or $KT_CACHE) and
# are reused; a clean cache costs two kernel builds (10-20 minutes each on
# 2 cores). Each boot runs under qemu-system-x86_64 -accel tcg (KVM does
# not work on these machines) and ends with its fixture and one line:
# "N/N pairs match the kernel". Any disagreement, in the guest or from the
# dump, makes the exit status 1.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
kt=$repo/kerneltruth
cache=${KT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/efap2p/kernel-truth}
fixtures=${KT_FIXTURES:-$kt/fixtures}
builds=${KT_BUILDS:-"6.1 6.12 debian-stock"}
jobs=${KT_JOBS:-$(nproc)}
boot_timeout=${KT_BOOT_TIMEOUT:-900}
go=${GO:-go}
command -v "$go" >/dev/null || go=/usr/local/go/bin/go

say() { printf 'kernel-truth: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

if [ -z "${KT_REPLAY_ONLY:-}" ] && [ "$(id -u)" != 0 ]; then
	die "run as root (it installs packages and boots the guests), or KT_REPLAY_ONLY=1 to compare the fixtures only"
fi

# --- packages -----------------------------------------------------------
packages="linux-source-6.1 linux-source-6.12 qemu-system-x86 busybox-static
	bc flex bison libelf-dev libssl-dev cpio xz-utils kmod gcc make dwarves"
install_packages() {
	local missing=()
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		say "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
}

# --- kernels --------------------------------------------------------------
# build_kernel VERSION: Debian's linux-source-VERSION, allnoconfig plus
# kernel.config, in $cache/build/VERSION; rebuilt when the fragment changed.
build_kernel() {
	local v=$1 src=$cache/src/linux-source-$1 out=$cache/build/$1
	local stamp
	stamp=$(sha256sum "$kt/kernel.config" | cut -c1-16)
	if [ ! -d "$src" ]; then
		say "unpacking linux-source-$v"
		mkdir -p "$cache/src"
		tar -C "$cache/src" -xf "/usr/src/linux-source-$v.tar.xz"
	fi
	if [ -f "$out/arch/x86/boot/bzImage" ] && [ "$(cat "$out/.kt-stamp" 2>/dev/null)" = "$stamp" ]; then
		return
	fi
	mkdir -p "$out"
	say "configuring $v (allnoconfig + kernel.config)"
	KCONFIG_ALLCONFIG=$kt/kernel.config make -C "$src" O="$out" allnoconfig >"$out/config.log" 2>&1
	local l bad=0
	while read -r l; do
		case $l in CONFIG_*) grep -qxF "$l" "$out/.config" || { say "$v: $l did not take"; bad=1; } ;; esac
	done <"$kt/kernel.config"
	[ $bad = 0 ] || die "$v: the config fragment did not apply (see $out/.config)"
	say "building $v in $out (log: $out/build.log)"
	nice -n 19 make -C "$src" O="$out" -j"$jobs" >"$out/build.log" 2>&1 || die "$v: build failed (see $out/build.log)"
	echo "$stamp" >"$out/.kt-stamp"
}

# stock_kernel: the Debian 12 kernel linux-image-amd64 points to, unpacked
# with its headers (no installation): built without PCI_P2PDMA.
stock_kernel() {
	local abi dir
	abi=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -1)
	[ -n "$abi" ] || die "cannot tell which kernel linux-image-amd64 depends on"
	dir=$cache/debian-stock
	if [ "$(cat "$dir/.kt-abi" 2>/dev/null)" != "$abi" ]; then
		say "fetching Debian's linux-image-$abi-amd64 and its headers"
		rm -rf "$dir" && mkdir -p "$dir/debs"
		local kb
		kb=$(apt-cache depends "linux-headers-$abi-amd64" | sed -n 's/.*Depends: \(linux-kbuild-[0-9.]*\)$/\1/p' | head -1)
		(cd "$dir/debs" && apt-get download "linux-image-$abi-amd64" "linux-headers-$abi-amd64" \
			"linux-headers-$abi-common" "$kb" >&2)
		for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root"; done
		echo "$abi" >"$dir/.kt-abi"
	fi
	stock_release=$abi-amd64
	stock_image=$dir/root/boot/vmlinuz-$stock_release
	stock_config=$dir/root/boot/config-$stock_release
	stock_headers=$dir/root/usr/src/linux-headers-$stock_release
	stock_common=$dir/root/usr/src/linux-headers-$abi-common
}

# build_module BUILD: the test module against that kernel, in $cache/module/BUILD.
build_module() {
	local b=$1 mdir=$cache/module/$1
	rm -rf "$mdir" && mkdir -p "$mdir"
	cp "$kt/module/p2ptruth.c" "$kt/module/Kbuild" "$mdir/"
	if [ "$b" = debian-stock ]; then
		# Debian's headers split the tree: common sources, per-flavour output
		make -C "$stock_common" O="$stock_headers" M="$mdir" modules >"$mdir/build.log" 2>&1
	else
		make -C "$cache/build/$b" M="$mdir" modules >"$mdir/build.log" 2>&1
	fi || die "$b: module build failed (see $mdir/build.log)"
}

kernel_image() {
	case $1 in
	debian-stock) echo "$stock_image" ;;
	*) echo "$cache/build/$1/arch/x86/boot/bzImage" ;;
	esac
}

kernel_config() {
	case $1 in
	debian-stock) echo "$stock_config" ;;
	*) echo "$cache/build/$1/.config" ;;
	esac
}

# --- guest userland -------------------------------------------------------
build_tools() {
	mkdir -p "$cache/bin"
	say "building static efap2p and ktool"
	(cd "$repo" && CGO_ENABLED=0 "$go" build -trimpath -o "$cache/bin/efap2p" ./cmd/efap2p)
	(cd "$repo" && CGO_ENABLED=0 "$go" build -trimpath -o "$cache/bin/ktool" ./kerneltruth/ktool)
}

# build_initramfs BUILD: busybox, efap2p, ktool, the module and init.
build_initramfs() {
	local b=$1 stage=$cache/initramfs/$1
	rm -rf "$stage" && mkdir -p "$stage"/{bin,dev,proc,sys,boot}
	cp /bin/busybox "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"
	cp "$kt/init" "$stage/init"
	cp "$cache/bin/efap2p" "$cache/bin/ktool" "$stage/"
	cp "$cache/module/$b/p2ptruth.ko" "$stage/"
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$cache/initramfs/$b.cpio.gz"
}

# --- scenarios --------------------------------------------------------------
# One PCIe topology of QEMU's devices, booted under several CPUs, IOMMUs and
# command lines. Root bus 00: the q35 host bridge and its built-in 1f.x
# functions, integrated endpoints (a display at 07.0, edu at 08.0), a pxb-pcie
# expander (host bridge of root bus 80); root ports 03.0 (NVMe), 04.0 (a
# switch with a second switch below one of its downstream ports), 05.0 (a
# PCIe-to-PCI bridge with two conventional devices), 06.0 (a multi-function
# device); root port 80:00.0 below the expander (an NVMe).
topology=(
	-device pcie-root-port,id=rp1,bus=pcie.0,addr=03.0,chassis=1,slot=1
	-device nvme,bus=rp1,serial=kt1
	-device pcie-root-port,id=rp2,bus=pcie.0,addr=04.0,chassis=2,slot=2
	-device x3130-upstream,id=up1,bus=rp2
	-device xio3130-downstream,id=dn1,bus=up1,chassis=3,slot=0
	-device xio3130-downstream,id=dn2,bus=up1,chassis=4,slot=1
	-device xio3130-downstream,id=dn3,bus=up1,chassis=5,slot=2
	-device e1000e,bus=dn1
	-device virtio-net-pci,bus=dn2,disable-legacy=on
	-device x3130-upstream,id=up2,bus=dn3
	-device xio3130-downstream,id=dn4,bus=up2,chassis=6,slot=0
	-device xio3130-downstream,id=dn5,bus=up2,chassis=7,slot=1
	-device nvme,bus=dn4,serial=kt2
	-device e1000e,bus=dn5
	-device pcie-root-port,id=rp3,bus=pcie.0,addr=05.0,chassis=8,slot=3
	-device pcie-pci-bridge,id=pb1,bus=rp3
	-device e1000,bus=pb1,addr=01.0
	-device rtl8139,bus=pb1,addr=02.0
	-device pcie-root-port,id=rp4,bus=pcie.0,addr=06.0,chassis=9,slot=4
	-device e1000e,bus=rp4,addr=00.0,multifunction=on
	-device e1000e,bus=rp4,addr=00.1
	-device bochs-display,bus=pcie.0,addr=07.0
	-device edu,bus=pcie.0,addr=08.0
	-device pxb-pcie,id=pxb1,bus_nr=0x80,bus=pcie.0,addr=09.0
	-device pcie-root-port,id=rp5,bus=pxb1,addr=00.0,chassis=10,slot=5
	-device nvme,bus=rp5,serial=kt3
)

# NAME|CPU|IOMMU device|extra kernel command line|what it shows
scenarios=(
	"epyc|EPYC|||AMD family 0x17: the CPU rule allows every through-host-bridge path"
	"amd-fam-0f|qemu64|||AMD family 0x0f, below Zen: no CPU rule, nothing whitelisted"
	"hygon|Dhyana|||Hygon is not X86_VENDOR_AMD: no CPU rule"
	"skylake|Skylake-Server|||Intel server CPU, no IOMMU: ACS redirect off"
	"intel-iommu|Skylake-Server|intel-iommu|intel_iommu=on|ACS redirect (0x001d) on every root port"
	"intel-iommu-acs-off|Skylake-Server|intel-iommu|intel_iommu=on pci=disable_acs_redir=0000:00:06.0|the multi-function device's root port left at 0x0011: its two functions BUS_ADDR again"
	"amd-iommu|EPYC|amd-iommu||AMD IOMMU: ACS redirect, allowed by the CPU rule"
)
# the kernel without PCI_P2PDMA needs two looks, not seven
stock_scenarios="epyc intel-iommu"

scenario_field() { # LINE INDEX
	local IFS='|'
	local f
	read -ra f <<<"$1"
	echo "${f[$2]:-}"
}

# boot BUILD SCENARIO-LINE: one boot, one fixture.
boot() {
	local b=$1 line=$2 name cpu iommu extra
	name=$(scenario_field "$line" 0)
	cpu=$(scenario_field "$line" 1)
	iommu=$(scenario_field "$line" 2)
	extra=$(scenario_field "$line" 3)
	local run=$cache/runs/$b-$name
	rm -rf "$run" && mkdir -p "$run"
	local machine=(-machine q35 -accel tcg -cpu "$cpu" -m 1024 -smp 1 -nodefaults -display none -no-reboot)
	[ -n "$iommu" ] && machine+=(-device "$iommu")
	local cmdline="console=ttyS0 rdinit=/init panic=-1 loglevel=4 $extra"
	cmdline=${cmdline% }
	say "booting $b in $name (-cpu $cpu${iommu:+, -device $iommu}${extra:+, $extra})"
	local rc=0
	timeout "$boot_timeout" qemu-system-x86_64 "${machine[@]}" "${topology[@]}" \
		-kernel "$(kernel_image "$b")" -initrd "$cache/initramfs/$b.cpio.gz" -append "$cmdline" \
		-serial "file:$run/console.log" -serial "file:$run/capture" </dev/null >"$run/qemu.log" 2>&1 || rc=$?
	[ $rc = 0 ] || say "$b $name: qemu exited with $rc (see $run/qemu.log, $run/console.log)"
	local p2pdma=true
	grep -qx "CONFIG_PCI_P2PDMA=y" "$(kernel_config "$b")" || p2pdma=false
	local qemu_desc="-machine q35 -cpu $cpu${iommu:+ -device $iommu} (kerneltruth/run.sh topology)"
	"$cache/bin/ktool-host" record -o "$fixtures/$b-$name.kt" --scenario "$name" --build "$b" \
		--p2pdma="$p2pdma" --qemu "$qemu_desc" --cmdline "$cmdline" "$run/capture" || return 1
}

# --- main -------------------------------------------------------------------
mkdir -p "$cache" "$fixtures"
if [ -z "${KT_REPLAY_ONLY:-}" ]; then
	install_packages
	build_tools
	for b in $builds; do
		case $b in
		debian-stock) stock_kernel ;;
		*) build_kernel "$b" ;;
		esac
		build_module "$b"
		build_initramfs "$b"
	done
fi
# the host side runs the same tool, built from this tree
(cd "$repo" && "$go" build -trimpath -o "$cache/bin/ktool-host" ./kerneltruth/ktool)
(cd "$repo" && "$go" build -trimpath -o "$cache/bin/efap2p-host" ./cmd/efap2p)

failed=0
if [ -z "${KT_REPLAY_ONLY:-}" ]; then
	for b in $builds; do
		for line in "${scenarios[@]}"; do
			name=$(scenario_field "$line" 0)
			if [ -n "${KT_SCENARIOS:-}" ] && ! [[ " $KT_SCENARIOS " == *" $name "* ]]; then continue; fi
			if [ "$b" = debian-stock ] && ! [[ " $stock_scenarios " == *" $name "* ]]; then continue; fi
			boot "$b" "$line" || failed=1
		done
	done
fi
shopt -s nullglob
all=("$fixtures"/*.kt)
[ ${#all[@]} -gt 0 ] || die "no fixtures in $fixtures"
"$cache/bin/ktool-host" replay --efap2p "$cache/bin/efap2p-host" "${all[@]}" || failed=1
if [ $failed != 0 ]; then
	die "the oracle disagrees with the kernel (above)"
fi
say "every recorded pair matches the kernel"
