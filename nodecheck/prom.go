// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// PromOptions tune WritePrometheusWith.
type PromOptions struct {
	// AllPairs writes the pair series of every (accelerator, EFA NIC)
	// pair: 6 gauges a pair, 1536 series on a p5.48xlarge. Without it,
	// only the pairs that are not OK (no true P2P, or an uncertain answer)
	// have pair series; the per-accelerator and per-NIC gauges and the
	// counts say the rest.
	AllPairs bool
}

// WritePrometheus writes the report in the Prometheus text exposition
// format, as node_exporter's textfile collector reads it (a *.prom file):
// what an operator alerts on (WritePrometheusWith with the zero
// PromOptions).
func (r *Report) WritePrometheus(w io.Writer, now time.Time) error {
	return r.WritePrometheusWith(w, now, PromOptions{})
}

// pairOK reports a pair that needs no series of its own: true P2P, for
// certain.
func pairOK(p *Pair) bool { return p.P2P && p.Certain }

// WritePrometheusWith writes the report as WritePrometheus does, tuned by
// opt. The status is a plain value (Status.Value); what identifies the
// node (version, kernel, instance type) is on efap2p_check_info; every
// accelerator and every EFA NIC has its gauges (its P2P NICs or
// accelerators, by count), the pairs are counted, and the pairs that are
// not OK (all of them with PromOptions.AllPairs) have series that carry
// identity labels only (the accelerator and the NIC), one gauge per fact.
// Every label value is valid UTF-8 whatever sysfs or DMI holds. now stamps
// the run (efap2p_check_timestamp_seconds); the zero time leaves that
// gauge out.
func (r *Report) WritePrometheusWith(w io.Writer, now time.Time, opt PromOptions) error {
	var b strings.Builder
	gauge := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	sample := func(name string, labels [][2]string, v float64) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i, l := range labels {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(l[0])
				b.WriteString(`="`)
				b.WriteString(escapeLabel(l[1]))
				b.WriteByte('"')
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		b.WriteByte('\n')
	}
	h := &r.Host
	gauge("efap2p_check_info", "Always 1: the efap2p version, the kernel judged, the EC2 instance type (DMI) and the EFA driver kind.")
	sample("efap2p_check_info", [][2]string{{"version", r.ToolVersion}, {"kernel", h.Kernel}, {"instance_type", h.InstanceType}, {"efa_driver", h.EFADriver.Kind}}, 1)
	gauge("efap2p_check_status", "Outcome of efap2p check: 0 ok, 1 degraded (findings), 2 not applicable (no EFA device or no accelerator), 3 could not tell.")
	sample("efap2p_check_status", nil, float64(r.Status.Value()))
	gauge("efap2p_check_accelerators", "Accelerators (PCI class 03 or 12) found on the node.")
	sample("efap2p_check_accelerators", nil, float64(len(r.Accelerators)))
	gauge("efap2p_check_efa_devices", "EFA devices found on the node.")
	sample("efap2p_check_efa_devices", nil, float64(len(r.NICs)))
	if e := r.Expected; e != nil {
		gauge("efap2p_check_expected_accelerators", "Accelerators the machine model of the instance type has.")
		sample("efap2p_check_expected_accelerators", [][2]string{{"model", e.Model}}, float64(e.Accelerators))
		gauge("efap2p_check_expected_efa_devices", "EFA devices the machine model of the instance type has.")
		sample("efap2p_check_expected_efa_devices", [][2]string{{"model", e.Model}}, float64(e.EFADevices))
	}
	if h.DMABuf.Judged {
		gauge("efap2p_check_dmabuf_supported", "1 when the kernel and the EFA driver register dma-buf memory.")
		sample("efap2p_check_dmabuf_supported", nil, boolValue(h.DMABuf.Supported))
	}
	if len(r.NICs) > 0 {
		nicLabels := func(n *NIC) [][2]string { return [][2]string{{"nic", n.Addr.String()}, {"ibdev", n.IBDev}} }
		gauge("efap2p_check_efa_port_active", "1 when at least one port of the EFA device is ACTIVE.")
		for i := range r.NICs {
			n := &r.NICs[i]
			active := false
			for _, p := range n.Ports {
				active = active || p.Active()
			}
			sample("efap2p_check_efa_port_active", nicLabels(n), boolValue(active))
		}
		checked := false
		for _, n := range r.NICs {
			checked = checked || n.Userspace != ""
		}
		if checked {
			gauge("efap2p_check_efa_userspace_listed", "1 when libibverbs lists the EFA device (its provider claims the PCI ID).")
			for i := range r.NICs {
				if n := &r.NICs[i]; n.Userspace != "" {
					sample("efap2p_check_efa_userspace_listed", nicLabels(n), boolValue(n.Userspace == UserspaceListed))
				}
			}
		}
	}
	if len(r.Accelerators) > 0 && len(r.NICs) > 0 {
		accLabels := func(a *Accelerator) [][2]string {
			return [][2]string{{"accelerator", a.Addr.String()}, {"accelerator_name", a.Name}}
		}
		for _, g := range []struct {
			name, help string
			value      func(a *Accelerator) int
		}{
			{"efap2p_check_accelerator_local_nics", "The accelerator's nearest EFA NICs (its PCIe switch's on p5.48xlarge).",
				func(a *Accelerator) int { return len(a.LocalNICs) }},
			{"efap2p_check_accelerator_local_p2p_nics", "Its nearest EFA NICs it gets true P2P DMA with (by dma-buf or peer memory); fewer than efap2p_check_accelerator_local_nics is a problem.",
				func(a *Accelerator) int { return len(a.LocalP2P) }},
			{"efap2p_check_accelerator_p2p_nics", "The EFA NICs it gets true P2P DMA with, near or not.",
				func(a *Accelerator) int { return len(a.P2PNICs) }},
		} {
			gauge(g.name, g.help)
			for i := range r.Accelerators {
				sample(g.name, accLabels(&r.Accelerators[i]), float64(g.value(&r.Accelerators[i])))
			}
		}
		gauge("efap2p_check_efa_p2p_accelerators", "The accelerators the EFA NIC gets true P2P DMA into.")
		for i := range r.NICs {
			n, k := &r.NICs[i], 0
			for j := range r.Pairs {
				if r.Pairs[j].NIC == n.Addr && r.Pairs[j].P2P {
					k++
				}
			}
			sample("efap2p_check_efa_p2p_accelerators", [][2]string{{"nic", n.Addr.String()}, {"ibdev", n.IBDev}}, float64(k))
		}
		p2pPairs, uncertain := 0, 0
		for i := range r.Pairs {
			if r.Pairs[i].P2P {
				p2pPairs++
			}
			if !r.Pairs[i].Certain {
				uncertain++
			}
		}
		gauge("efap2p_check_pairs", "(accelerator, EFA NIC) pairs on the node.")
		sample("efap2p_check_pairs", nil, float64(len(r.Pairs)))
		gauge("efap2p_check_pairs_p2p", "Pairs with true P2P DMA (by dma-buf or peer memory).")
		sample("efap2p_check_pairs_p2p", nil, float64(p2pPairs))
		gauge("efap2p_check_pairs_uncertain", "Pairs whose answer rests on something the check could not read.")
		sample("efap2p_check_pairs_uncertain", nil, float64(uncertain))
	}
	if len(r.Pairs) > 0 {
		names := map[string]string{}
		for _, a := range r.Accelerators {
			names[a.Addr.String()] = a.Name
		}
		ibdev := map[string]string{}
		for _, n := range r.NICs {
			ibdev[n.Addr.String()] = n.IBDev
		}
		id := func(p *Pair) [][2]string {
			return [][2]string{{"accelerator", p.Accelerator.String()}, {"accelerator_name", names[p.Accelerator.String()]},
				{"nic", p.NIC.String()}, {"ibdev", ibdev[p.NIC.String()]}}
		}
		series := []struct {
			name, help string
			value      func(p *Pair) (float64, bool)
		}{
			{"efap2p_check_pair_p2p", "1 when the EFA NIC gets true P2P DMA into the accelerator's memory (by dma-buf or by the driver's peer memory).",
				func(p *Pair) (float64, bool) { return boolValue(p.P2P), true }},
			{"efap2p_check_pair_local", "1 when the NIC is one of the accelerator's nearest EFA NICs (its PCIe switch on p5.48xlarge).",
				func(p *Pair) (float64, bool) { return boolValue(p.Local), true }},
			{"efap2p_check_pair_certain", "1 when the pair's answer does not rest on something the check could not read.",
				func(p *Pair) (float64, bool) { return boolValue(p.Certain), true }},
			{"efap2p_check_pair_dmabuf_p2p", "1 when the dma-buf path (ibv_reg_dmabuf_mr) gives true P2P.",
				func(p *Pair) (float64, bool) { return boolValue(p.DMABuf.Outcome == "p2p"), true }},
			{"efap2p_check_pair_peer_memory_p2p", "1 when the out-of-tree EFA driver's peer-memory path gives true P2P (present with that driver only).",
				func(p *Pair) (float64, bool) {
					if p.PeerMemory == nil {
						return 0, false
					}
					return boolValue(p.PeerMemory.Outcome == "p2p"), true
				}},
			{"efap2p_check_pair_distance", "The kernel's p2pdma distance of the pair (hops of the PCI path; -1 when the kernel refuses the mapping).",
				func(p *Pair) (float64, bool) {
					if p.DMABuf.Distance == nil {
						return 0, false
					}
					if p.DMABuf.MapType == "NOT_SUPPORTED" {
						return -1, true
					}
					return float64(*p.DMABuf.Distance), true
				}},
		}
		for _, s := range series {
			header := false
			for i := range r.Pairs {
				if !opt.AllPairs && pairOK(&r.Pairs[i]) {
					continue
				}
				v, ok := s.value(&r.Pairs[i])
				if !ok {
					continue
				}
				if !header {
					gauge(s.name, s.help)
					header = true
				}
				sample(s.name, id(&r.Pairs[i]), v)
			}
		}
	}
	gauge("efap2p_check_findings", "Findings of efap2p check, by severity.")
	for _, s := range []Severity{SeverityError, SeverityWarning, SeverityUnknown} {
		n := 0
		for _, f := range r.Findings {
			if f.Severity == s {
				n++
			}
		}
		sample("efap2p_check_findings", [][2]string{{"severity", string(s)}}, float64(n))
	}
	if len(r.Findings) > 0 {
		gauge("efap2p_check_finding", "1 for each finding of efap2p check: what stands in the way of GPUDirect RDMA (code, severity, the PCI functions concerned).")
		seen := map[string]int{}
		for _, f := range r.Findings {
			subj := addrList(f.Subjects)
			key := f.Code + "|" + subj
			seen[key]++
			labels := [][2]string{{"code", f.Code}, {"severity", string(f.Severity)}, {"subjects", subj}}
			if seen[key] > 1 {
				labels = append(labels, [2]string{"n", strconv.Itoa(seen[key])})
			}
			sample("efap2p_check_finding", labels, 1)
		}
	}
	if !now.IsZero() {
		gauge("efap2p_check_timestamp_seconds", "When efap2p check ran, in seconds since the Unix epoch.")
		sample("efap2p_check_timestamp_seconds", nil, float64(now.Unix()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// escapeLabel makes s a label value of the text format: valid UTF-8
// without control characters (Escape), then backslash, double quote and
// line feed escaped as the format wants.
func escapeLabel(s string) string { return labelEscaper.Replace(Escape(s)) }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
