// SPDX-License-Identifier: MIT

package nodecheck

// What the node has: its accelerators and EFA NICs, and the drivers and
// RDMA devices they need.

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/internal/counted"
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
		n := NIC{Addr: addr, Driver: at.Driver, NUMANode: at.NUMANode, Device: fmt.Sprintf("%04x", at.Device), Ports: []Port{}}
		n.IBDev, n.Uverbs = c.ibdevs(addr)
		if n.IBDev != "" {
			n.Ports = c.ports(addr, n.IBDev)
		}
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

// applicability: a node without EFA devices or without accelerators is not
// one GPUDirect RDMA applies to (every CPU node of a cluster). That is not
// a problem; a node whose instance type should have them gets the layout
// findings (compare) as well.
func (c *checker) applicability() {
	var na NotApplicable
	switch {
	case len(c.r.NICs) == 0 && len(c.r.Accelerators) == 0:
		na = NotApplicable{CodeNoEFADevice, "no EFA device and no accelerator"}
	case len(c.r.NICs) == 0:
		na = NotApplicable{CodeNoEFADevice, "no EFA device (no PCI function 1d0f:efa0..efa3)"}
	case len(c.r.Accelerators) == 0:
		na = NotApplicable{CodeNoAccelerator, "no accelerator (no PCI class 03 or 12 function but framebuffer-only display controllers)"}
	default:
		return
	}
	c.r.NotApplicable = &na
}

// applies reports whether the node has both EFA devices and accelerators.
func (c *checker) applies() bool { return c.r.NotApplicable == nil }

// deviceFindings: NICs without a driver, an RDMA device, an active port
// or a userspace provider; accelerators without a driver (where there is
// an EFA NIC to use them with).
func (c *checker) deviceFindings() {
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
			rdmaWhy = append(rdmaWhy, n.IBDev+" ("+n.Addr.String()+", no uverbs device)")
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFARDMADeviceMissing)
		}
	}
	if len(noDriver) > 0 {
		c.add(Finding{Code: CodeEFADriverMissing, Severity: SeverityError, Subjects: noDriver,
			Message: fmt.Sprintf("%s without the efa driver: %s", counted.Noun(len(noDriver), "EFA NIC"), addrList(noDriver)),
			Fix:     "Load the EFA driver (`modprobe efa`); install it with the AWS EFA installer, or use a kernel built with CONFIG_INFINIBAND_EFA; `dmesg | grep -i efa` says why a probe failed."})
	}
	if len(noRDMA) > 0 {
		c.add(Finding{Code: CodeEFARDMADeviceMissing, Severity: SeverityError, Subjects: noRDMA,
			Message: fmt.Sprintf("%s not usable from user space: %s", counted.Noun(len(noRDMA), "EFA NIC"), strings.Join(rdmaWhy, ", ")),
			Fix:     "Load the RDMA user-space access module (`modprobe ib_uverbs`); `ibv_devices` should then list every EFA device."})
	}
	c.portFindings()
	c.userspaceFindings()
	if len(c.r.NICs) == 0 {
		return // an accelerator's driver is not this check's business then
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
			Message: fmt.Sprintf("%s without a driver: %s", counted.Noun(len(noAccDriver), "accelerator"), c.accList(noAccDriver)),
			Fix:     fix})
	}
}

// ports reads the ports of a NIC's RDMA device (ports/N/state, "4: ACTIVE").
func (c *checker) ports(a p2p.Addr, ibdev string) []Port {
	dir := filepath.Join(c.root, "bus/pci/devices", a.String(), "infiniband", ibdev, "ports")
	names, err := readDirNames(dir)
	if err != nil {
		return []Port{}
	}
	out := []Port{}
	for _, name := range names {
		n, err := strconv.Atoi(name)
		if err != nil || n <= 0 {
			continue
		}
		p := Port{Num: n}
		if st, err := readAttr(filepath.Join(dir, name, "state")); err == nil {
			p.State = stateName(st)
		}
		if st, err := readAttr(filepath.Join(dir, name, "phys_state")); err == nil {
			p.PhysState = stateName(st)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Num < out[j].Num })
	return out
}

// stateName takes "4: ACTIVE" to "ACTIVE".
func stateName(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// portFindings: an EFA device none of whose ports is active carries no
// traffic, GPUDirect or not.
func (c *checker) portFindings() {
	var down []p2p.Addr
	var why []string
	for _, n := range c.r.NICs {
		if len(n.Ports) == 0 || len(c.nicBlocked[n.Addr]) > 0 {
			continue // no RDMA device: its finding says so
		}
		active := false
		var states []string
		for _, p := range n.Ports {
			active = active || p.Active()
			st := p.State
			if st == "" {
				st = "unreadable"
			}
			states = append(states, fmt.Sprintf("port %d %s", p.Num, st))
		}
		if active {
			continue
		}
		down = append(down, n.Addr)
		why = append(why, fmt.Sprintf("%s (%s; %s)", n.IBDev, n.Addr, strings.Join(states, ", ")))
		c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFAPortDown)
	}
	if len(down) == 0 {
		return
	}
	c.add(Finding{Code: CodeEFAPortDown, Severity: SeverityError, Subjects: down,
		Message: fmt.Sprintf("%s without an active port: %s", counted.Noun(len(down), "EFA device"), strings.Join(why, ", ")),
		Fix:     "A port that is not ACTIVE carries no traffic: `ibv_devinfo -d DEVICE` shows its state; check that the EFA interface is attached and its security group allows all traffic to and from itself, then reload the driver (`modprobe -r efa && modprobe efa`) or stop and start the instance."})
}

// userspaceFindings: an EFA device that libibverbs does not list is
// invisible to every RDMA program (its provider, libefa, does not claim
// the PCI ID: rdma-core 44's claims 1d0f:efa0..efa2, not a trn2's efa3).
func (c *checker) userspaceFindings() {
	if c.opt.Userspace == nil || len(c.r.NICs) == 0 {
		return
	}
	names, err := c.opt.Userspace()
	if err != nil {
		c.note("Whether libibverbs lists the EFA devices was not checked: %v.", err)
		return
	}
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	var missing []p2p.Addr
	ids := map[string]bool{}
	for i := range c.r.NICs {
		n := &c.r.NICs[i]
		if n.IBDev == "" || n.Uverbs == "" {
			continue // the kernel has no device for it: another finding
		}
		if listed[n.IBDev] {
			n.Userspace = UserspaceListed
			continue
		}
		n.Userspace = UserspaceUnlisted
		missing = append(missing, n.Addr)
		ids["1d0f:"+n.Device] = true
		c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFAUnclaimed)
	}
	if len(missing) == 0 {
		return
	}
	idList := make([]string, 0, len(ids))
	for id := range ids {
		idList = append(idList, id)
	}
	sort.Strings(idList)
	c.add(Finding{Code: CodeEFAUnclaimed, Severity: SeverityError, Subjects: missing,
		Message: fmt.Sprintf("%d of %s are not listed by libibverbs (its EFA provider does not claim PCI ID %s): %s", len(missing), counted.Noun(len(c.r.NICs), "EFA device"), strings.Join(idList, ", "), c.nicList(missing)),
		Fix:     "Install an rdma-core whose libefa claims the device (the AWS EFA installer's; Debian 12's rdma-core 44 claims 1d0f:efa0..efa2 only); `ibv_devices` then lists every EFA device."})
}
