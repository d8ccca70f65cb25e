// SPDX-License-Identifier: MIT

package topoview

// efap2p topo --dot: the machine's PCI paths between accelerators and NICs
// as a Graphviz digraph, laid out left to right. Only the chains from the
// root buses down to the accelerators (class 03, 12) and NICs (class 02)
// are drawn: root buses grouped by NUMA node, root ports, switches
// (upstream port and downstream ports in one box), the devices
// (accelerators with rounded corners, NICs with square ones). Each
// accelerator and NIC is filled with its best outcome with a device of the
// other kind (green: true P2P, orange: bounced through system memory, red:
// refused, white: no device of the other kind). A bold green edge runs
// from each NIC to its nearest accelerator with true P2P, labelled with the
// path class; dashed edges mark the pairs that share an upstream bridge
// and are still refused (red) or bounced (orange): the surprising ones.
// Functions whose ACS redirects peer traffic have a red border.

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/internal/pcicfg"
	"github.com/efap2p/efap2p/p2p"
)

// Fill colours of the outcomes.
const (
	dotGreen  = "#a6dba0"
	dotOrange = "#fdc086"
	dotRed    = "#f4a3a3"
	dotNone   = "#ffffff"
	dotEdgeOK = "#1b7837"
	dotEdgeNo = "#c0392b"
	dotEdgeBo = "#e08214"
)

// dotGraph collects what the digraph shows.
type dotGraph struct {
	o   *p2p.Oracle
	t   *p2p.Topology
	src *p2p.Sysfs
	m   *devices.Matrix
	fns map[p2p.Addr]*p2p.Function   // every function drawn
	dev map[p2p.Addr]*devices.Device // accelerators and NICs
}

// WriteDOT writes the digraph of the machine o reads from src (efap2p topo
// --dot); m is its matrix. machine names the machine in the title; "" names
// this host (its host name).
func WriteDOT(w io.Writer, o *p2p.Oracle, src *p2p.Sysfs, m *devices.Matrix, machine string) error {
	g := &dotGraph{o: o, t: o.Topology(), src: src, m: m, fns: map[p2p.Addr]*p2p.Function{}, dev: map[p2p.Addr]*devices.Device{}}
	for i := range m.Devices {
		d := &m.Devices[i]
		g.dev[d.Addr] = d
		f, err := g.t.Function(d.Addr)
		if err != nil {
			return err
		}
		for ; f != nil; f = f.Upstream {
			g.fns[f.Addr] = f
		}
	}
	var b strings.Builder
	title := "PCI paths of accelerators and NICs"
	if machine != "" {
		title = machine + ": " + title
	} else if host, err := os.Hostname(); err == nil {
		title = host + ": " + title
	}
	fmt.Fprintf(&b, "digraph efap2p {\n")
	fmt.Fprintf(&b, "  graph [label=%s, labelloc=t, fontname=\"Helvetica\", fontsize=16, rankdir=LR, nodesep=0.12, ranksep=0.35];\n", dotQuote(title+"  (efap2p topo --dot)"))
	fmt.Fprintf(&b, "  node [fontname=\"Helvetica\", fontsize=9, shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", margin=\"0.06,0.03\"];\n")
	fmt.Fprintf(&b, "  edge [color=\"#909090\", arrowhead=none];\n")

	// Root buses by NUMA node.
	roots := map[int][]p2p.RootBus{}
	rootFns := map[p2p.RootBus][]*p2p.Function{}
	for _, f := range g.sorted() {
		if f.Upstream == nil {
			if _, ok := rootFns[f.Root]; !ok {
				n := f.NUMANode()
				roots[n] = append(roots[n], f.Root)
			}
			rootFns[f.Root] = append(rootFns[f.Root], f)
		}
	}
	numas := make([]int, 0, len(roots))
	for n := range roots {
		numas = append(numas, n)
	}
	// Graphviz stacks the clusters of a left-to-right graph bottom up:
	// declare the last NUMA node first.
	sort.Sort(sort.Reverse(sort.IntSlice(numas)))
	for _, n := range numas {
		label := fmt.Sprintf("NUMA node %d", n)
		if n < 0 {
			label = "NUMA node unknown"
		}
		fmt.Fprintf(&b, "  subgraph cluster_numa%d {\n    label=%s; style=\"rounded\"; color=\"#b0b0b0\"; fontsize=12;\n", n+1, dotQuote(label))
		for _, r := range roots[n] {
			fmt.Fprintf(&b, "    %s [label=%s, shape=box, style=\"filled\", fillcolor=\"#e8e8e8\"];\n", rootID(r), dotQuote(g.rootLabel(r)))
			for _, f := range rootFns[r] {
				g.writeSubtree(&b, f, "    ")
			}
		}
		b.WriteString("  }\n")
	}

	// The tree's edges.
	for _, f := range g.sorted() {
		from := rootID(f.Root)
		if f.Upstream != nil {
			from = fnID(f.Upstream.Addr)
		}
		fmt.Fprintf(&b, "  %s -> %s;\n", from, fnID(f.Addr))
	}

	// Verdict edges: NIC -> nearest accelerator with true P2P, and the
	// refused or bounced pairs under a common bridge.
	for _, d := range m.Devices {
		if d.Kind != devices.KindNIC {
			continue
		}
		ok, v, err := o.ReachesAccelerator(d.Addr)
		if err != nil {
			return err
		}
		if ok && g.fns[v.Provider] != nil {
			fmt.Fprintf(&b, "  %s -> %s [color=%q, penwidth=2.2, arrowhead=normal, arrowsize=0.6, constraint=false, xlabel=%s, fontsize=8, fontcolor=%q];\n",
				fnID(d.Addr), fnID(v.Provider), dotEdgeOK, dotQuote(v.Path.String()), dotEdgeOK)
		}
		for _, a := range m.Devices {
			if a.Kind != devices.KindAccelerator {
				continue
			}
			v, err := o.Verdict(a.Addr, d.Addr)
			if err != nil {
				return err
			}
			if v.CommonBridge == nil || v.P2P() {
				continue
			}
			colour := dotEdgeNo
			if v.Effective() == p2p.OutcomeBounced {
				colour = dotEdgeBo
			}
			fmt.Fprintf(&b, "  %s -> %s [color=%q, style=dashed, arrowhead=normal, arrowsize=0.6, constraint=false, xlabel=%s, fontsize=8, fontcolor=%q];\n",
				fnID(d.Addr), fnID(a.Addr), colour, dotQuote(v.Effective().String()), colour)
		}
	}

	writeLegend(&b)
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// sorted returns the drawn functions in enumeration order.
func (g *dotGraph) sorted() []*p2p.Function {
	out := make([]*p2p.Function, 0, len(g.fns))
	for _, f := range g.fns {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// children returns the drawn functions right below f, in order.
func (g *dotGraph) children(f *p2p.Function) []*p2p.Function {
	var out []*p2p.Function
	for _, c := range g.sorted() {
		if c.Upstream == f {
			out = append(out, c)
		}
	}
	return out
}

// role names a function's place in the tree. Bridges are named by where
// they sit (a bridge on a root bus is a root port, one below a root port
// or a downstream port is a switch's upstream port, one below an upstream
// port a downstream port), which is how PCIe builds trees.
func (g *dotGraph) role(f *p2p.Function) string {
	if _, ok := g.dev[f.Addr]; ok {
		return g.dev[f.Addr].Kind
	}
	at, _ := f.Attrs()
	if !at.IsBridge() {
		return "function"
	}
	switch {
	case f.Upstream == nil:
		return "root port"
	case g.role(f.Upstream) == "upstream port":
		return "downstream port"
	default:
		return "upstream port"
	}
}

// writeSubtree declares f and what is drawn below it; a switch (upstream
// port and its downstream ports) is a cluster.
func (g *dotGraph) writeSubtree(b *strings.Builder, f *p2p.Function, pad string) {
	role := g.role(f)
	if role == "upstream port" {
		fmt.Fprintf(b, "%ssubgraph cluster_%s {\n%s  label=\"\"; style=\"rounded,filled\"; fillcolor=\"#f4f4fb\"; color=\"#9090c0\";\n", pad, fnID(f.Addr)[1:len(fnID(f.Addr))-1], pad)
		g.writeNode(b, f, role, pad+"  ")
		var below []*p2p.Function
		for _, c := range g.children(f) {
			g.writeNode(b, c, g.role(c), pad+"  ")
			below = append(below, g.children(c)...)
		}
		fmt.Fprintf(b, "%s}\n", pad)
		for _, c := range below {
			g.writeSubtree(b, c, pad)
		}
		return
	}
	g.writeNode(b, f, role, pad)
	for _, c := range g.children(f) {
		g.writeSubtree(b, c, pad)
	}
}

// writeNode declares one function.
func (g *dotGraph) writeNode(b *strings.Builder, f *p2p.Function, role, pad string) {
	at, _ := f.Attrs()
	link := linkText(f)
	var lines []string
	attrs := ""
	switch role {
	case "accelerator", "nic":
		d := g.dev[f.Addr]
		lines = append(lines, d.Name+"  "+f.Addr.Short(), d.Vendor+":"+d.Device+" "+className(at.Class))
		var extra []string
		if d.Driver != "" {
			extra = append(extra, d.Driver)
		}
		if d.IBDev != "" {
			extra = append(extra, d.IBDev)
		}
		if len(extra) > 0 {
			lines = append(lines, strings.Join(extra, "  "))
		}
		if link != "" {
			lines = append(lines, link)
		}
		style := "rounded,filled" // accelerators: rounded, NICs: square
		if role == "nic" {
			style = "filled"
		}
		attrs = fmt.Sprintf(", style=%q, fillcolor=%q, fontsize=10", style, g.bestColour(d))
	default:
		lines = append(lines, role+" "+f.Addr.Short(), fmt.Sprintf("%04x:%04x", at.Vendor, at.Device))
		if link != "" {
			lines = append(lines, link)
		}
		if role == "downstream port" {
			attrs += ", fontsize=8"
		}
	}
	if acs := f.ACS(); acs.Known && acs.Redirects() {
		lines = append(lines, "ACS redirect "+pcicfg.ACSBits(acs.Control&pcicfg.ACSRedirectMask))
		attrs += ", color=\"#c0392b\", penwidth=2"
	} else if !acs.Known && at.IsBridge() {
		lines = append(lines, "ACS unknown")
	}
	fmt.Fprintf(b, "%s%s [label=%s%s];\n", pad, fnID(f.Addr), dotQuote(strings.Join(lines, "\n")), attrs)
}

// bestColour is the fill of an accelerator or NIC: the best outcome it
// gets with a device of the other kind.
func (g *dotGraph) bestColour(d *devices.Device) string {
	best := p2p.OutcomeUnknown
	for _, o := range g.m.Devices {
		if o.Kind == d.Kind {
			continue
		}
		provider, client := d.Addr, o.Addr
		if d.Kind == devices.KindNIC {
			provider, client = o.Addr, d.Addr
		}
		v, err := g.o.Verdict(provider, client)
		if err != nil {
			continue
		}
		switch e := v.Effective(); {
		case e == p2p.OutcomeP2P:
			return dotGreen
		case e == p2p.OutcomeBounced:
			best = p2p.OutcomeBounced
		case best == p2p.OutcomeUnknown:
			best = e
		}
	}
	switch best {
	case p2p.OutcomeBounced:
		return dotOrange
	case p2p.OutcomeRefused:
		return dotRed
	}
	return dotNone
}

// rootLabel names a root bus and the function the kernel's host-bridge
// whitelist takes for its host bridge: the one at 00.0, if any.
func (g *dotGraph) rootLabel(r p2p.RootBus) string {
	s := "root bus " + strings.TrimPrefix(r.String(), "pci")
	hb, err := g.t.HostBridge(r)
	switch {
	case err != nil || !hb.HasFirst:
		return s
	case hb.First.DevFn() == 0:
		return s + fmt.Sprintf("\nhost bridge %s %04x:%04x", hb.First.Short(), hb.Vendor, hb.Device)
	}
	return s + "\nno host-bridge function\n(first: " + hb.First.Short() + ")"
}

// linkText is "16.0 GT/s x8", or "" when the link is unknown.
func linkText(f *p2p.Function) string {
	gts, w := f.Link()
	if gts <= 0 || w <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f GT/s x%d", gts, w)
}

// writeLegend draws the legend as its own cluster.
func writeLegend(b *strings.Builder) {
	b.WriteString("  subgraph cluster_legend {\n    label=\"Legend\"; style=\"rounded\"; color=\"#b0b0b0\"; fontsize=12;\n")
	for _, n := range []struct{ id, label, attrs string }{
		{"legend_p2p", "true P2P with at least one\\naccelerator (NIC) or NIC (accelerator)", "fillcolor=\"" + dotGreen + "\""},
		{"legend_bounced", "best: bounced through system\\nmemory by the exporter (amdgpu)", "fillcolor=\"" + dotOrange + "\""},
		{"legend_refused", "refused with every device\\nof the other kind", "fillcolor=\"" + dotRed + "\""},
		{"legend_none", "no device of the other kind", "fillcolor=\"" + dotNone + "\""},
		{"legend_acs", "function with ACS redirect\\n(peer traffic goes up)", "color=\"#c0392b\", penwidth=2"},
	} {
		fmt.Fprintf(b, "    %s [label=\"%s\", %s];\n", n.id, n.label, n.attrs)
	}
	for i, e := range []struct{ label, attrs string }{
		{"NIC to its nearest accelerator\\nwith true P2P (path class)", fmt.Sprintf("color=%q, penwidth=2.2", dotEdgeOK)},
		{"refused, although the pair\\nshares an upstream bridge", fmt.Sprintf("color=%q, style=dashed", dotEdgeNo)},
		{"bounced, although the pair\\nshares an upstream bridge", fmt.Sprintf("color=%q, style=dashed", dotEdgeBo)},
	} {
		fmt.Fprintf(b, "    legend_e%da [label=\"\", shape=point, width=0.05];\n", i)
		fmt.Fprintf(b, "    legend_e%db [label=\"%s\", shape=plaintext, style=\"\"];\n", i, e.label)
		fmt.Fprintf(b, "    legend_e%da -> legend_e%db [%s, arrowhead=normal, arrowsize=0.6];\n", i, i, e.attrs)
	}
	b.WriteString("    legend_p2p -> legend_bounced -> legend_refused -> legend_none -> legend_acs [style=invis];\n")
	b.WriteString("  }\n")
}

// fnID and rootID are the node IDs of a function and a root bus.
func fnID(a p2p.Addr) string {
	return fmt.Sprintf("\"f_%04x_%02x_%02x_%d\"", a.Domain, a.Bus, a.Device, a.Function)
}

func rootID(r p2p.RootBus) string { return fmt.Sprintf("\"rb_%04x_%02x\"", r.Domain, r.Bus) }

// dotQuote quotes a DOT string; a newline becomes a centred line break.
func dotQuote(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "\"", "\\\"")
	s = strings.ReplaceAll(s, "\n", "\\n")
	return "\"" + s + "\""
}
