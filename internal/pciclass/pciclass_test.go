// SPDX-License-Identifier: MIT

package pciclass

import "testing"

func TestAccelerators(t *testing.T) {
	for _, tt := range []struct {
		name           string
		class          uint32
		vendor, device uint16
		accel          bool
	}{
		{"H100, 3D controller", 0x030200, 0x10de, 0x2330, true},
		{"a VGA-class GPU", 0x030000, 0x1002, 0x744c, true},
		{"Gaudi2, processing accelerator", 0x120000, 0x1da3, 0x1020, true},
		{"EC2 Nitro VGA", 0x030000, 0x1d0f, 0x1111, false},
		{"ASPEED BMC graphics", 0x030000, 0x1a03, 0x2000, false},
		{"QEMU standard VGA", 0x030000, 0x1234, 0x1111, false},
		{"Trainium2, other class", 0x088000, 0x1d0f, 0x7364, true},
		{"EFA, Ethernet", 0x020000, 0x1d0f, 0xefa1, false},
		{"PCI bridge", 0x060400, 0x1000, 0xc030, false},
		{"NVMe", 0x010802, 0x1d0f, 0x8061, false},
		{"a system peripheral", 0x088000, 0x8086, 0x0b00, false},
	} {
		if got := IsAccelerator(tt.class, tt.vendor, tt.device); got != tt.accel {
			t.Errorf("%s: IsAccelerator(%06x, %04x:%04x) = %v", tt.name, tt.class, tt.vendor, tt.device, got)
		}
		// Where the class decides, it decides as the IDs would.
		if accel, decided := ByClass(tt.class); decided && accel != tt.accel {
			t.Errorf("%s: ByClass(%06x) = %v, decided, want %v", tt.name, tt.class, accel, tt.accel)
		}
	}
	if !IsNeuron(0x1d0f, 0x7364) || !IsNeuron(0x1d0f, 0x7064) || IsNeuron(0x10de, 0x7364) || IsNeuron(0x1d0f, 0xefa1) {
		t.Error("IsNeuron")
	}
}
