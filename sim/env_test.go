// SPDX-License-Identifier: MIT

package sim

import (
	"errors"
	"slices"
	"strings"
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

func TestCommandPreload(t *testing.T) {
	const lib = "/lib/libefasim.so"
	for _, tc := range []struct {
		name    string
		command []string
		want    []string // nil: refused
	}{
		{"not env", []string{"sh", "-c", "LD_PRELOAD=/a.so prog"}, []string{"sh", "-c", "LD_PRELOAD=/a.so prog"}},
		{"env without LD_PRELOAD", []string{"env", "A=1", "prog", "LD_PRELOAD=/x"}, []string{"env", "A=1", "prog", "LD_PRELOAD=/x"}},
		{"env LD_PRELOAD", []string{"env", "LD_PRELOAD=/a.so", "prog"}, []string{"env", "LD_PRELOAD=/a.so:" + lib, "prog"}},
		{"by path, after other variables", []string{"/usr/bin/env", "A=1", "LD_PRELOAD=/a.so /b.so", "prog", "LD_PRELOAD=arg"},
			[]string{"/usr/bin/env", "A=1", "LD_PRELOAD=/a.so /b.so:" + lib, "prog", "LD_PRELOAD=arg"}},
		{"empty", []string{"env", "LD_PRELOAD=", "prog"}, []string{"env", "LD_PRELOAD=" + lib, "prog"}},
		{"after options", []string{"env", "-v", "-u", "HOME", "-C", "/tmp", "--unset=X", "--", "LD_PRELOAD=/a.so", "prog"},
			[]string{"env", "-v", "-u", "HOME", "-C", "/tmp", "--unset=X", "--", "LD_PRELOAD=/a.so:" + lib, "prog"}},
		{"short cluster", []string{"env", "-0uHOME", "LD_PRELOAD=/a.so", "prog"}, []string{"env", "-0uHOME", "LD_PRELOAD=/a.so:" + lib, "prog"}},
		{"split string", []string{"env", "-S", "LD_PRELOAD=/a.so prog"}, []string{"env", "-S", "LD_PRELOAD=/a.so prog"}},
		{"unknown option", []string{"env", "--frobnicate", "LD_PRELOAD=/a.so", "prog"}, []string{"env", "--frobnicate", "LD_PRELOAD=/a.so", "prog"}},
		{"env -i", []string{"env", "-i", "LD_PRELOAD=/a.so", "prog"}, nil},
		{"env -", []string{"env", "-", "prog"}, nil},
		{"env --ignore-environment", []string{"env", "--ignore-environment", "prog"}, nil},
		{"env -vi", []string{"env", "-vi", "prog"}, nil},
		{"env -u LD_PRELOAD", []string{"env", "-u", "LD_PRELOAD", "prog"}, nil},
		{"env -uLD_PRELOAD", []string{"env", "-uLD_PRELOAD", "prog"}, nil},
		{"env --unset=LD_PRELOAD", []string{"env", "--unset=LD_PRELOAD", "prog"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CommandPreload(tc.command, lib)
			if tc.want == nil {
				if !errors.Is(err, ErrDropsEmulator) || strings.Contains(err.Error(), "\n") {
					t.Errorf("got %q, %v; want one line wrapping ErrDropsEmulator", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}
