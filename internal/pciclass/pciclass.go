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

// IsAccelerator reports PCI class 0x03 (display) or 0x12 (processing
// accelerator): the devices whose memory a NIC would DMA into. class is
// base class << 16 | subclass << 8 | prog-if, as sysfs writes it.
func IsAccelerator(class uint32) bool {
	base := class >> 16
	return base == 0x03 || base == 0x12
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

// MaybeNeuron reports a class a Neuron device might have: anything but
// storage, network, display, bridges and processing accelerators, whose
// IDs must be read to find out (the others are decided by class alone).
func MaybeNeuron(class uint32) bool {
	switch class >> 16 {
	case 0x01, 0x02, 0x03, 0x06, 0x12:
		return false
	}
	return true
}
