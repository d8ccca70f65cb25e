// SPDX-License-Identifier: MIT

package nodecheck

// What the node has: its accelerators and EFA NICs, and the drivers and
// RDMA devices they need.

import (
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// scan lists the accelerators and the EFA NICs.
func (c *checker) scan() error {
	accels, err := c.t.Accelerators()
	if err != nil {
		return fmt.Errorf("listing accelerators: %w", err)
	}
	gpus, accs := 0, 0
	for _, f := range accels {
		at, err := f.Attrs()
		if err != nil {
			return fmt.Errorf("accelerator %s: %w", f.Addr, err)
		}
		a := Accelerator{Addr: f.Addr, Vendor: fmt.Sprintf("%04x", at.Vendor), Device: fmt.Sprintf("%04x", at.Device),
			Driver: at.Driver, NUMANode: at.NUMANode, LocalNICs: []p2p.Addr{}, P2PNICs: []p2p.Addr{}, LocalP2P: []p2p.Addr{}, Certain: true}
		if at.Class>>16 == 0x12 {
			a.Name = fmt.Sprintf("ACC%d", accs)
			accs++
		} else {
			a.Name = fmt.Sprintf("GPU%d", gpus)
			gpus++
		}
		c.r.Accelerators = append(c.r.Accelerators, a)
	}
	all, err := c.t.Functions()
	if err != nil {
		return fmt.Errorf("listing PCI functions: %w", err)
	}
	for _, addr := range all {
		f, err := c.t.Function(addr)
		if err != nil {
			continue // a function whose chain cannot be read is not a NIC the check can judge
		}
		cl, err := f.Class()
		if err != nil || cl>>16 != 0x02 {
			continue
		}
		at, err := f.Attrs()
		if err != nil {
			return fmt.Errorf("NIC %s: %w", addr, err)
		}
		if !(at.Vendor == 0x1d0f && efaDevices[at.Device]) && at.Driver != "efa" {
			continue
		}
		n := NIC{Addr: addr, Driver: at.Driver, NUMANode: at.NUMANode}
		n.IBDev, n.Uverbs = c.ibdevs(addr)
		c.r.NICs = append(c.r.NICs, n)
	}
	for i := range c.r.Accelerators {
		c.accIndex[c.r.Accelerators[i].Addr] = &c.r.Accelerators[i]
	}
	for i := range c.r.NICs {
		c.nicIndex[c.r.NICs[i].Addr] = &c.r.NICs[i]
	}
	return nil
}

// deviceFindings: no EFA device, no accelerator, NICs without a driver or
// an RDMA device, accelerators without a driver.
func (c *checker) deviceFindings() {
	if len(c.r.NICs) == 0 {
		c.add(Finding{Code: CodeNoEFADevice, Severity: SeverityError,
			Message: "no EFA device on this node (no PCI function 1d0f:efa0..efa3)",
			Fix:     "Launch the instance with EFA network interfaces (InterfaceType efa or efa-only, one per network card) on an instance type that supports EFA; `lspci -d 1d0f:` lists them."})
	}
	if len(c.r.Accelerators) == 0 {
		c.add(Finding{Code: CodeNoAccelerator, Severity: SeverityError,
			Message: "no accelerator on this node (no PCI class 03 display or 12 processing accelerator function)",
			Fix:     "Run the check on accelerator nodes only (the DaemonSet's node selector); if the node should have GPUs, `lspci -d 10de:` lists them: a GPU missing from the bus needs the instance stopped and started (new hardware)."})
	}
	var noDriver, noRDMA []p2p.Addr
	var rdmaWhy []string
	for _, n := range c.r.NICs {
		switch {
		case n.Driver != "efa":
			noDriver = append(noDriver, n.Addr)
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFADriverMissing)
		case n.IBDev == "":
			noRDMA = append(noRDMA, n.Addr)
			rdmaWhy = append(rdmaWhy, n.Addr.String()+" (no RDMA device)")
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFARDMADeviceMissing)
		case n.Uverbs == "":
			noRDMA = append(noRDMA, n.Addr)
			rdmaWhy = append(rdmaWhy, n.Addr.String()+" ("+n.IBDev+" has no uverbs device)")
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFARDMADeviceMissing)
		}
	}
	if len(noDriver) > 0 {
		c.add(Finding{Code: CodeEFADriverMissing, Severity: SeverityError, Subjects: noDriver,
			Message: fmt.Sprintf("%s without the efa driver: %s", count(len(noDriver), "EFA NIC"), addrList(noDriver)),
			Fix:     "Load the EFA driver (`modprobe efa`); install it with the AWS EFA installer, or use a kernel built with CONFIG_INFINIBAND_EFA; `dmesg | grep -i efa` says why a probe failed."})
	}
	if len(noRDMA) > 0 {
		c.add(Finding{Code: CodeEFARDMADeviceMissing, Severity: SeverityError, Subjects: noRDMA,
			Message: fmt.Sprintf("%s not usable from user space: %s", count(len(noRDMA), "EFA NIC"), strings.Join(rdmaWhy, ", ")),
			Fix:     "Load the RDMA user-space access module (`modprobe ib_uverbs`); `ibv_devices` should then list every EFA device."})
	}
	var noAccDriver []p2p.Addr
	var want []string
	for _, a := range c.r.Accelerators {
		if a.Driver == "" {
			noAccDriver = append(noAccDriver, a.Addr)
			c.accBlocked[a.Addr] = append(c.accBlocked[a.Addr], CodeAccelDriverMissing)
			if d := expectedDriver(a.Vendor); d != "" && !contains(want, d) {
				want = append(want, d)
			}
		}
	}
	if len(noAccDriver) > 0 {
		fix := "Bind the accelerator's driver"
		if len(want) > 0 {
			fix = "Load its driver (`modprobe " + strings.Join(want, "`, `modprobe ") + "`)"
		}
		fix += "; its kernel log (`dmesg`) says why it did not bind. Without a driver nothing exports the accelerator's memory."
		c.add(Finding{Code: CodeAccelDriverMissing, Severity: SeverityError, Subjects: noAccDriver,
			Message: fmt.Sprintf("%s without a driver: %s", count(len(noAccDriver), "accelerator"), c.accList(noAccDriver)),
			Fix:     fix})
	}
}
