// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WritePrometheus writes the report in the Prometheus text exposition
// format, as node_exporter's textfile collector reads it (a *.prom file):
// the status, the device counts, one gauge per (accelerator, EFA NIC)
// pair and one per finding, each with labels. now stamps the run
// (efap2p_check_timestamp_seconds); the zero time leaves that gauge out.
func (r *Report) WritePrometheus(w io.Writer, now time.Time) error {
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
	it := r.Host.InstanceType
	gauge("efap2p_check_status", "Outcome of efap2p check: 0 ok, 1 degraded (findings), 3 could not tell; the status label names it.")
	sample("efap2p_check_status", [][2]string{{"status", string(r.Status)}, {"instance_type", it}, {"kernel", r.Host.Kernel}}, float64(r.ExitCode))
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
	gauge("efap2p_check_dmabuf_supported", "1 when the kernel and the EFA driver register dma-buf memory.")
	sample("efap2p_check_dmabuf_supported", [][2]string{{"efa_driver", r.Host.EFADriver.Kind}}, boolValue(r.Host.DMABuf.Supported))
	if len(r.Pairs) > 0 {
		names := map[string]string{}
		for _, a := range r.Accelerators {
			names[a.Addr.String()] = a.Name
		}
		ibdev := map[string]string{}
		for _, n := range r.NICs {
			ibdev[n.Addr.String()] = n.IBDev
		}
		gauge("efap2p_check_pair_p2p", "1 when the EFA NIC gets true P2P DMA into the accelerator's memory (by dma-buf or by the driver's peer memory).")
		for _, p := range r.Pairs {
			peer := "none"
			if p.PeerMemory != nil {
				peer = p.PeerMemory.Outcome
			}
			sample("efap2p_check_pair_p2p", [][2]string{
				{"accelerator", p.Accelerator.String()}, {"accelerator_name", names[p.Accelerator.String()]},
				{"nic", p.NIC.String()}, {"ibdev", ibdev[p.NIC.String()]}, {"path", p.Path.String()},
				{"local", strconv.FormatBool(p.Local)}, {"certain", strconv.FormatBool(p.Certain)},
				{"dmabuf", p.DMABuf.Outcome}, {"peer_memory", peer},
			}, boolValue(p.P2P))
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

// escapeLabel escapes a label value as the text format wants: backslash,
// double quote and line feed.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
