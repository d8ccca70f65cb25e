// SPDX-License-Identifier: MIT

package pciclass

import "testing"

func TestClasses(t *testing.T) {
	for _, tt := range []struct {
		class        uint32
		accel, maybe bool
	}{
		{0x030200, true, false},  // 3D controller (H100)
		{0x030000, true, false},  // VGA
		{0x120000, true, false},  // processing accelerator
		{0x020000, false, false}, // Ethernet (EFA)
		{0x060400, false, false}, // PCI bridge
		{0x010802, false, false}, // NVMe
		{0x088000, false, true},  // system peripheral: a Neuron device could be one
		{0xff0000, false, true},
	} {
		if got := IsAccelerator(tt.class); got != tt.accel {
			t.Errorf("IsAccelerator(%06x) = %v", tt.class, got)
		}
		if got := MaybeNeuron(tt.class); got != tt.maybe {
			t.Errorf("MaybeNeuron(%06x) = %v", tt.class, got)
		}
	}
	if !IsNeuron(0x1d0f, 0x7364) || !IsNeuron(0x1d0f, 0x7064) || IsNeuron(0x10de, 0x7364) || IsNeuron(0x1d0f, 0xefa1) {
		t.Error("IsNeuron")
	}
}
