// SPDX-License-Identifier: MIT

// Package sim is the EFA host emulator's Go half: the environment of a
// process inside an emulated host (EmulatorEnv) and the fabric through
// which the emulated hosts reach each other (JoinFabric). The machines it
// emulates are package models'; the emulated kernel itself is the preload
// library in sim/preload/ (libefasim.so).
package sim
