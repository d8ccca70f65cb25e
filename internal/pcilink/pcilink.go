// SPDX-License-Identifier: MIT

// Package pcilink reads a PCIe link as sysfs shows it
// (current_link_speed, current_link_width) and works out its bandwidth.
//
// It imports nothing of this repository; package p2p and the machine
// models of package models share it.
package pcilink

import (
	"strconv"
	"strings"
)

// ParseSpeed parses a current_link_speed value ("16.0 GT/s PCIe") into
// GT/s; 0 when it is "Unknown" or malformed.
func ParseSpeed(s string) float64 {
	f, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// MBs returns a PCIe link's usable bandwidth in MB/s per direction: lanes
// x transfer rate x line-code efficiency (8b/10b up to 5 GT/s, 128b/130b
// from 8 GT/s). 0 when the link is unknown.
func MBs(gts float64, width int) int {
	if gts <= 0 || width <= 0 {
		return 0
	}
	eff := 128.0 / 130.0
	if gts < 8 {
		eff = 8.0 / 10.0
	}
	return int(gts * eff * float64(width) * 1000 / 8)
}
