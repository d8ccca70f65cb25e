// SPDX-License-Identifier: MIT

package sim

import (
	"errors"
	"fmt"
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

// ErrDropsEmulator is the error of a command that would run outside the
// emulated host it was given: env(1) told to empty the environment or to
// unset LD_PRELOAD, which hold the host (CommandPreload).
var ErrDropsEmulator = errors.New("would drop the emulated host")

// CommandPreload returns command as it must run inside an emulated host
// whose library is lib. A command that sets LD_PRELOAD for itself through
// env(1) (efap2p sim -- env LD_PRELOAD=X PROG) would replace the
// LD_PRELOAD that holds the emulator's library, and PROG would find no RDMA
// device: lib is appended to the value it sets, after the command's own
// libraries, as EmulatorEnv appends it to the caller's. env told to start
// from an empty environment (-i, -) or to unset LD_PRELOAD (-u) would drop
// the emulated host whatever is appended: an error wrapping
// ErrDropsEmulator says how to do without. env's -S (one string split
// into arguments) and options it does not know leave command as it is.
// Other commands are returned as they are. (A shell inside the host that
// sets LD_PRELOAD itself must keep $LD_PRELOAD in it: efap2p sim does not
// read scripts.)
func CommandPreload(command []string, lib string) ([]string, error) {
	if len(command) < 2 || filepath.Base(command[0]) != "env" {
		return command, nil
	}
	out := append([]string(nil), command...)
	options := true
	for i := 1; i < len(out); i++ {
		a := out[i]
		if options {
			switch {
			case a == "--":
				options = false
				continue
			case a == "-" || a == "-i" || a == "--ignore-environment":
				return nil, errEmptyEnv(a)
			case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
				if i+1 < len(out) && out[i+1] == "LD_PRELOAD" && (a == "-u" || a == "--unset") {
					return nil, errUnsetPreload()
				}
				i++
				continue
			case strings.HasPrefix(a, "--unset="):
				if strings.TrimPrefix(a, "--unset=") == "LD_PRELOAD" {
					return nil, errUnsetPreload()
				}
				continue
			case a == "-S" || strings.HasPrefix(a, "--split-string"):
				return command, nil
			case strings.HasPrefix(a, "--"):
				if strings.HasPrefix(a, "--chdir=") || a == "--null" || a == "--debug" || strings.HasPrefix(a, "--ignore-signal") ||
					strings.HasPrefix(a, "--default-signal") || strings.HasPrefix(a, "--block-signal") || a == "--list-signal-handling" {
					continue
				}
				return command, nil
			case len(a) > 1 && a[0] == '-':
				// a cluster of short options: -0v, -iu NAME, -uNAME, -CDIR
				next, err := shortEnvOptions(a[1:], out, i)
				if err != nil {
					return nil, err
				}
				if next < 0 {
					return command, nil
				}
				i = next
				continue
			}
			options = false
		}
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			break // the program env runs, and its arguments
		}
		if name == "LD_PRELOAD" {
			if value = strings.TrimSpace(value); value == "" {
				value = lib
			} else {
				value += ":" + lib
			}
			out[i] = "LD_PRELOAD=" + value
		}
	}
	return out, nil
}

// shortEnvOptions reads env's cluster of short options opts (out[i]
// without its dash) and returns the index of the last argument it takes:
// -u and -C take the rest of the cluster or the next argument. It returns
// -1 for an option it does not know or -S, and an error for -i or -u
// LD_PRELOAD.
func shortEnvOptions(opts string, out []string, i int) (int, error) {
	for j := 0; j < len(opts); j++ {
		switch opts[j] {
		case '0', 'v':
		case 'i':
			return 0, errEmptyEnv("-i")
		case 'u', 'C':
			arg := opts[j+1:]
			if arg == "" && i+1 < len(out) {
				i++
				arg = out[i]
			}
			if opts[j] == 'u' && arg == "LD_PRELOAD" {
				return 0, errUnsetPreload()
			}
			return i, nil
		default:
			return -1, nil
		}
	}
	return i, nil
}

func errEmptyEnv(opt string) error {
	return fmt.Errorf("env %s %w (SYSFS_PATH, the emulator's library in LD_PRELOAD): unset only what you must, with env -u NAME", opt, ErrDropsEmulator)
}

func errUnsetPreload() error {
	return fmt.Errorf("env -u LD_PRELOAD %w (the emulator's library): start efap2p sim without LD_PRELOAD instead", ErrDropsEmulator)
}
