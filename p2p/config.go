// SPDX-License-Identifier: MIT

package p2p

import "github.com/efap2p/efap2p/internal/pcicfg"

// ACS is what the oracle knows of a function's Access Control Services.
type ACS struct {
	// Known is false when config space past the first 64 bytes could not
	// be read (not root): ACS may or may not redirect.
	Known bool
	// Present: the function has the ACS extended capability.
	Present bool
	// Capability and Control are the ACS registers (valid when Present),
	// with the bits of the PCIe specification (PCI_ACS_* in the kernel:
	// RR 0x04, CR 0x08, EC 0x20 redirect).
	Capability uint16
	Control    uint16
}

// Redirects reports whether ACS sends peer traffic up to the root complex:
// the kernel's pci_bridge_has_acs_redir (RR, CR or EC set in Control).
func (a ACS) Redirects() bool { return pcicfg.ACS(a).Redirects() }
