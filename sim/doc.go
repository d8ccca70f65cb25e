// SPDX-License-Identifier: MIT

// Package sim is the EFA host emulator's Go half: it writes the tree of an
// emulated host (a machine model's sysfs tree, package models, with the
// preload emulator's configuration at its root), gives the processes run
// inside it their environment (EmulatorEnv), and joins emulated hosts into
// a fabric through which their devices reach each other (JoinFabric). The
// emulated kernel itself is the preload library in sim/preload/
// (libefasim.so).
package sim
