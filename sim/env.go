// SPDX-License-Identifier: MIT

package sim

import (
	"path/filepath"
	"strings"
)

// EmulatorEnv returns environ as a process inside an emulated host needs
// it: SYSFS_PATH set to the tree at dir, EFAP2P_TOPOLOGY_ROOT too (the
// emulated host's default topology files are dir/run/efap2p/topology.json
// and dir/etc/efap2p/topology.json, never the real host's),
// EFAP2P_KERNEL_CONFIG naming the tree's kernel.config (the emulated
// kernel's build configuration, which the real host's /proc cannot tell),
// HWLOC_FSROOT naming the tree's FSRootDir (hwloc's own x86 discovery,
// which asks this machine's CPU, left out), the tree's BinDir first on
// PATH (when there is one), the emulator
// library lib appended to LD_PRELOAD (after whatever the caller preloads),
// and any earlier SYSFS_PATH, EFASIM_CONFIG, EFAP2P_TOPOLOGY_ROOT,
// HWLOC_FSROOT, HWLOC_COMPONENTS or variable named in drop removed. extra
// entries ("NAME=value") are appended.
func EmulatorEnv(environ []string, dir, lib string, drop []string, extra ...string) []string {
	out := make([]string, 0, len(environ)+5+len(extra))
	preload, path := "", ""
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "SYSFS_PATH", name == "EFASIM_CONFIG", name == "EFAP2P_TOPOLOGY_ROOT", name == "EFAP2P_KERNEL_CONFIG",
			name == "HWLOC_FSROOT", name == "HWLOC_COMPONENTS":
			continue
		case name == "LD_PRELOAD":
			preload = strings.TrimSpace(value)
			continue
		case name == "PATH":
			path = value
			continue
		}
		dropped := false
		for _, d := range drop {
			dropped = dropped || name == d
		}
		if !dropped {
			out = append(out, kv)
		}
	}
	if preload != "" {
		preload += ":" + lib
	} else {
		preload = lib
	}
	if path != "" {
		// without a PATH the command's own default stays
		out = append(out, "PATH="+filepath.Join(dir, BinDir)+":"+path)
	}
	out = append(out, "SYSFS_PATH="+dir, "EFAP2P_TOPOLOGY_ROOT="+dir, "EFAP2P_KERNEL_CONFIG="+dir+"/"+KernelConfigName,
		"HWLOC_FSROOT="+filepath.Join(dir, FSRootDir), "HWLOC_COMPONENTS=-x86", "LD_PRELOAD="+preload)
	return append(out, extra...)
}
