// SPDX-License-Identifier: MIT

package topoview

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/efap2p/efap2p/internal/textwrap"
	"github.com/efap2p/efap2p/p2p"
)

// WriteExplain writes efap2p explain's account of verdict v of the machine
// o reads from src: the pair's devices, the kernel's map type and
// distance, the exporter's policy and outcome, the peer-memory path, the
// path's figures, the source, and the reason and hint in words.
func WriteExplain(out io.Writer, o *p2p.Oracle, src *p2p.Sysfs, v *p2p.Verdict) {
	t := o.Topology()
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "provider\t%s\n", describe(t, src, v.Provider))
	fmt.Fprintf(w, "client\t%s\n", describe(t, src, v.Client))
	fmt.Fprintf(w, "p2p\t%s\n", Answer(v))
	fmt.Fprintf(w, "map type\t%s\n", v.MapType)
	fmt.Fprintf(w, "distance\t%d\n", v.Distance)
	fmt.Fprintf(w, "path\t%s\n", v.Path)
	fmt.Fprintf(w, "rule\t%s\n", v.Rule)
	fmt.Fprintf(w, "policy\t%s\n", v.Policy)
	fmt.Fprintf(w, "outcome\t%s (dma-buf: p2pdma and the exporter's rule)\n", v.Outcome)
	if v.DmabufUnavailable != "" {
		fmt.Fprintf(w, "dma-buf\tunavailable: %s\n", v.DmabufUnavailable)
	}
	fmt.Fprintf(w, "peer memory\t%s\n", peerMemLine(v.PeerMem, efaClient(t, v.Client)))
	fmt.Fprintf(w, "kernel\t%s\n", v.Kernel)
	fmt.Fprintf(w, "p2pdma\t%s\n", o.KernelConfig().Describe())
	if bw := v.BandwidthMBs(); bw > 0 {
		fmt.Fprintf(w, "bandwidth\t%d MB/s (narrowest link)\n", bw)
	}
	fmt.Fprintf(w, "latency\t~%d ns (estimate)\n", v.LatencyNs())
	fmt.Fprintf(w, "source\t%s\n", v.Source)
	if name, why := o.TopologyFileInUse(); name != "" {
		fmt.Fprintf(w, "topology file\t%s (trusted: %s)\n", name, why)
	}
	if v.CommonBridge != nil {
		fmt.Fprintf(w, "common bridge\t%s\n", v.CommonBridge)
	}
	fmt.Fprintf(w, "acs redirect\t%s\n", addrList(v.ACSRedirect))
	if len(v.ACSUnknown) > 0 {
		fmt.Fprintf(w, "acs unknown\t%s\n", addrList(v.ACSUnknown))
	}
	switch {
	case !v.Certain:
		fmt.Fprintf(w, "certain\tno: the outcome depends on %s, which could not be read\n", strings.Join(v.Unread, ", "))
	case !v.Exact:
		fmt.Fprintf(w, "certain\tyes, whatever %s is (the map type is the kernel-safe branch)\n", strings.Join(v.Unread, ", "))
	}
	w.Flush()
	fmt.Fprintf(out, "\n%s\n", textwrap.Wrap(v.Reason, 78))
	if v.Hint != "" {
		fmt.Fprintf(out, "\nhint: %s\n", v.Hint)
	}
	if v.Note != "" {
		fmt.Fprintf(out, "\n%s\n", textwrap.Wrap(v.Note, 78))
	}
}

// WriteAll writes the verdict of every ordered pair of functions that are
// not PCI-to-PCI bridges, in address order (efap2p explain --all): the
// pairs a kernel can be asked about, which kerneltruth compares with a
// booted kernel's. asJSON writes one JSON object a line.
func WriteAll(out io.Writer, o *p2p.Oracle, asJSON bool) error {
	t := o.Topology()
	addrs, err := t.Functions()
	if err != nil {
		return err
	}
	var ends []p2p.Addr
	for _, a := range addrs {
		f, err := t.Function(a)
		if err != nil {
			return err
		}
		at, err := f.Attrs()
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		if !at.IsBridge() {
			ends = append(ends, a)
		}
	}
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	w := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(w, "PROVIDER\tCLIENT\tMAP TYPE\tDISTANCE\tPATH\tRULE\tPOLICY\tOUTCOME\tP2P VIA")
	}
	for _, p := range ends {
		for _, c := range ends {
			v, err := o.Verdict(p, c)
			if err != nil {
				return err
			}
			if asJSON {
				if err := enc.Encode(v); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p, c, v.MapType, v.Distance, v.Path, v.Rule, v.Policy, v.Outcome, v.Via())
		}
	}
	if !asJSON {
		w.Flush()
	}
	return bw.Flush()
}

// Answer is a verdict's answer over both registration paths, in words:
// "yes, by dma-buf and peer memory", "yes, by peer memory only (dma-buf:
// refused)", "no: refused by every registration path"; "(uncertain)"
// after it where it rests on what could not be read.
func Answer(v *p2p.Verdict) string {
	var s string
	switch via := v.Via(); {
	case via == p2p.RegDmabuf|p2p.RegPeerMem:
		s = "yes, by dma-buf and peer memory"
	case via == p2p.RegDmabuf:
		s = "yes, by dma-buf"
	case via == p2p.RegPeerMem:
		s = fmt.Sprintf("yes, by peer memory only (dma-buf: %s)", v.Outcome)
	case v.Effective() == p2p.OutcomeBounced:
		s = "no: registration works, but the exporter bounces the DMA through system memory"
	case v.Effective() == p2p.OutcomeRefused && v.DmabufUnavailable != "":
		s = "no: the NIC cannot register dma-buf memory here (dma-buf line), and no other path gives true P2P"
	case v.Effective() == p2p.OutcomeRefused:
		s = "no: refused by every registration path"
	default:
		s = "unknown: no registration path could be decided"
	}
	if !v.Certain {
		s += " (uncertain)"
	}
	return s
}

// efaClient reports a client bound to the efa driver: the clients with a
// peer-memory path, where the out-of-tree driver has one.
func efaClient(t *p2p.Topology, a p2p.Addr) bool {
	f, err := t.Function(a)
	if err != nil {
		return false
	}
	at, err := f.Attrs()
	return err == nil && at.Class>>16 == 0x02 && at.Driver == "efa"
}

// peerMemLine describes the peer-memory path; efa says whether the
// client is an EFA NIC (the only client that has the path).
func peerMemLine(pm p2p.PeerMem, efa bool) string {
	switch {
	case !efa && !pm.Present:
		return "none (the client is not an EFA NIC: the path is the EFA driver's)"
	case !pm.Present && pm.Outcome == p2p.OutcomeUnknown && pm.Provider == "":
		return "unknown (no p2p attribute on the NIC: the in-tree EFA driver registers by dma-buf only)"
	case pm.Provider == "":
		return pm.Outcome.String() + " (the EFA driver has no peer-memory provider)"
	}
	return fmt.Sprintf("%s (provider %q of the out-of-tree EFA driver)", pm.Outcome, pm.Provider)
}

func addrList(as []p2p.Addr) string {
	if len(as) == 0 {
		return "none"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// describe names a function for people: address, IDs, class and driver.
func describe(t *p2p.Topology, src *p2p.Sysfs, a p2p.Addr) string {
	f, err := t.Function(a)
	if err != nil {
		return a.String()
	}
	at, err := f.Attrs()
	if err != nil {
		return a.String()
	}
	s := fmt.Sprintf("%s  %04x:%04x %s", a, at.Vendor, at.Device, className(at.Class))
	var extra []string
	if at.Driver != "" {
		extra = append(extra, at.Driver)
	}
	if ib := src.RDMAName(a); ib != "" {
		extra = append(extra, ib)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func className(class uint32) string {
	switch class >> 8 {
	case 0x0300:
		return "VGA controller"
	case 0x0302:
		return "3D controller"
	case 0x0380:
		return "display controller"
	case 0x1200:
		return "processing accelerator"
	case 0x0200:
		return "Ethernet controller"
	case 0x0207:
		return "InfiniBand controller"
	case 0x0280:
		return "network controller"
	case 0x0604:
		return "PCI bridge"
	case 0x0600:
		return "host bridge"
	case 0x0108:
		return "NVMe controller"
	}
	return fmt.Sprintf("class %06x", class)
}
