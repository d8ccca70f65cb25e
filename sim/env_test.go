// SPDX-License-Identifier: MIT

package sim

import (
	"slices"
	"testing"
)

func TestEmulatorEnv(t *testing.T) {
	env := []string{"HOME=/root", "SYSFS_PATH=/old", "EFASIM_CONFIG=/x", "LD_PRELOAD=/a.so", "EFAP2P_TOPOLOGY=/t", "EFAP2P_TOPOLOGY_ROOT=/r", "EFAP2P_KERNEL_CONFIG=/boot/config-x", "PATH=/bin"}
	got := EmulatorEnv(env, "/tree", "/lib/libefasim.so", []string{"EFAP2P_TOPOLOGY"}, "MARK=1")
	want := []string{"HOME=/root", "PATH=/tree/.bin:/bin", "SYSFS_PATH=/tree", "EFAP2P_TOPOLOGY_ROOT=/tree", "EFAP2P_KERNEL_CONFIG=/tree/kernel.config",
		"HWLOC_FSROOT=/tree/.fsroot", "HWLOC_COMPONENTS=-x86", "LD_PRELOAD=/a.so:/lib/libefasim.so", "MARK=1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = EmulatorEnv([]string{"LD_PRELOAD= "}, "/tree", "/e.so", nil)
	if !slices.Equal(got, []string{"SYSFS_PATH=/tree", "EFAP2P_TOPOLOGY_ROOT=/tree", "EFAP2P_KERNEL_CONFIG=/tree/kernel.config",
		"HWLOC_FSROOT=/tree/.fsroot", "HWLOC_COMPONENTS=-x86", "LD_PRELOAD=/e.so"}) {
		t.Errorf("empty preload: %q", got)
	}
}
