// SPDX-License-Identifier: MIT

// Package pciclass tells the PCI functions whose memory a NIC would DMA
// into (GPUs and accelerators) from their class and IDs.
//
// It imports nothing of this repository; package p2p, the node check and
// the machine models' tests share it.
package pciclass

// VendorAmazon is Amazon's PCI vendor ID (Annapurna Labs: EFA, ENA,
// Neuron).
const VendorAmazon = 0x1d0f

// IsAccelerator reports a function whose memory a NIC would DMA into:
// PCI class 0x03 (display) or 0x12 (processing accelerator), but not a
// display controller that is only a framebuffer (a hypervisor's or a
// BMC's VGA: every EC2 Nitro VM has one, 1d0f:1111), and an AWS Neuron
// device whatever its class. class is base class << 16 | subclass << 8 |
// prog-if, as sysfs writes it.
func IsAccelerator(class uint32, vendor, device uint16) bool {
	switch class >> 16 {
	case 0x12:
		return true
	case 0x03:
		return !framebufferOnly[uint32(vendor)<<16|uint32(device)]
	}
	return IsNeuron(vendor, device)
}

// ByClass tells what IsAccelerator answers from the class alone: decided
// is false when the IDs must be read (a display controller, which may be
// a framebuffer only, or a class a Neuron device might have).
func ByClass(class uint32) (accel, decided bool) {
	switch class >> 16 {
	case 0x12:
		return true, true
	case 0x03:
		return false, false
	case 0x01, 0x02, 0x06:
		return false, true
	}
	return false, false
}

// framebufferOnly are display controllers with no device memory of their
// own to export: emulated and BMC graphics, by vendor << 16 | device.
// Provenance: the PCI ID repository (pci.ids) names of each.
var framebufferOnly = map[uint32]bool{
	0x1d0f1111: true, // Amazon EC2 Nitro VGA
	0x12341111: true, // QEMU/Bochs standard VGA
	0x1b360100: true, // QEMU QXL paravirtual graphics
	0x101300b8: true, // Cirrus Logic GD 5446 (as QEMU emulates it)
	0x15ad0405: true, // VMware SVGA II
	0x14145353: true, // Microsoft Hyper-V virtual VGA
	0x80eebeef: true, // VirtualBox graphics
	0x1af41050: true, // virtio-gpu: its dma-bufs are guest system memory
	0x1a032000: true, // ASPEED graphics (AST2x00 BMC)
	0x102b0522: true, // Matrox MGA G200e (server BMC graphics)
	0x102b0532: true, // Matrox MGA G200eW
	0x102b0533: true, // Matrox MGA G200EH
	0x102b0534: true, // Matrox G200eR2
	0x102b0536: true, // Matrox MGA G200eW3
	0x102b0538: true, // Matrox MGA G200eH3
}

// neuronDevices are the AWS Neuron devices by device ID (vendor Amazon
// 1d0f). Provenance: aws-neuron-driver, neuron_device.h and the
// neuron_pci_dev_ids table of neuron_pci.c (aws-neuronx-dkms 2.24).
var neuronDevices = map[uint16]string{
	0x7064: "Inferentia", 0x7065: "Inferentia", 0x7066: "Inferentia", 0x7067: "Inferentia",
	0x7164: "Trainium", 0x7264: "Inferentia2", 0x7364: "Trainium2",
}

// IsNeuron reports an AWS Neuron device: an Inferentia or Trainium
// function, whatever its class.
func IsNeuron(vendor, device uint16) bool {
	_, ok := neuronDevices[device]
	return ok && vendor == VendorAmazon
}
