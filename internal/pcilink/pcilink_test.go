// SPDX-License-Identifier: MIT

package pcilink

import "testing"

func TestParseSpeed(t *testing.T) {
	for in, want := range map[string]float64{
		"16.0 GT/s PCIe": 16, "2.5 GT/s PCIe\n": 2.5, "32.0 GT/s": 32,
		"Unknown": 0, "": 0, "-8 GT/s": 0, "fast": 0,
	} {
		if got := ParseSpeed(in); got != want {
			t.Errorf("ParseSpeed(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestMBs: the figures worked out by hand from the line codes.
func TestMBs(t *testing.T) {
	for _, tt := range []struct {
		gts   float64
		width int
		want  int
	}{
		{2.5, 1, 250},   // 2.5 GT/s x 8/10 / 8 bits
		{5, 16, 8000},   // 5 x 0.8 x 16 / 8 GB/s
		{16, 16, 31507}, // 16 x 128/130 x 16 / 8 = 31.507 GB/s
		{32, 16, 63015}, // Gen5 x16
		{8, 4, 3938},    // Gen3 x4
		{0, 16, 0},      // unknown speed
		{16, 0, 0},      // unknown width
		{-1, 16, 0},
	} {
		if got := MBs(tt.gts, tt.width); got != tt.want {
			t.Errorf("MBs(%v, %d) = %d, want %d", tt.gts, tt.width, got, tt.want)
		}
	}
}
