// SPDX-License-Identifier: MIT

// Package sim is the EFA host emulator's Go half: it writes the tree of an
// emulated host (a machine model's sysfs tree, package models, with the
// preload emulator's configuration at its root: WriteTree), runs commands
// inside one (Run, with the environment of EmulatorEnv and the library
// FindLibrary finds), and joins emulated hosts into a fabric through which
// their devices reach each other (JoinFabric). The emulated kernel itself
// is the preload library in sim/preload/ (libefasim.so).
package sim
