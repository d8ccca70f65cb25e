// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/internal/textwrap"
	"github.com/efap2p/efap2p/p2p"
)

// Line words of the line mode, by status.
var lineWords = map[Status]string{StatusOK: "OK", StatusNotApplicable: "OK", StatusDegraded: "PROBLEM", StatusUnknown: "UNKNOWN"}

// MaxLine bounds the line mode's message (node-problem-detector cuts a
// plugin's output at its max_output_length).
const MaxLine = 120

// Line returns the one-line answer: "OK: ...", "OK: not applicable: ...",
// "PROBLEM <code>: ..." or "UNKNOWN <code>: ...", at most MaxLine bytes,
// on one line whatever the strings read from sysfs hold.
func (r *Report) Line() string {
	word := lineWords[r.Status]
	if r.Status == StatusOK || r.Status == StatusNotApplicable || len(r.Findings) == 0 {
		return clip(word+": "+Escape(r.Summary), MaxLine)
	}
	f := r.Findings[0]
	more := ""
	if n := len(r.Findings) - 1; n > 0 {
		more = fmt.Sprintf(" (+%d more)", n)
	}
	return clip(word+" "+f.Code+": "+Escape(f.Message), MaxLine-len(more)) + more
}

// LineExitCode is the line mode's exit status, node-problem-detector's
// custom plugin protocol: 0 OK, 1 problem, 2 unknown.
func (r *Report) LineExitCode() int {
	switch r.Status {
	case StatusOK, StatusNotApplicable:
		return 0
	case StatusDegraded:
		return 1
	}
	return 2
}

// clip cuts s to at most n bytes at a word boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n-3]
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1] // never half a character
	}
	return strings.TrimRight(cut, " ,:;") + "..."
}

// headline words, by status.
var headlines = map[Status]string{
	StatusOK:       "GPUDirect RDMA works on this node",
	StatusDegraded: "GPUDirect RDMA is degraded on this node",
	StatusUnknown:  "could not tell whether GPUDirect RDMA works on this node",
	// not a problem: a CPU node of the cluster
	StatusNotApplicable: "GPUDirect RDMA does not apply to this node",
}

// WriteText writes the report for people: the answer, the host, one line
// per accelerator, the findings with their fixes, and the notes. Strings
// read from sysfs or DMI reach the terminal escaped (Escape).
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "efap2p check: %s.\n", headlines[r.Status])
	b.WriteString(Escape(r.Summary) + "\n\n")
	h := &r.Host
	host := h.ProductName
	if h.SysVendor != "" {
		host = strings.TrimSpace(h.SysVendor + " " + h.ProductName)
	}
	if host == "" {
		host = "unknown machine (no DMI identity)"
	}
	kv := func(k, v string) { fmt.Fprintf(&b, "%-9s %s\n", k, Escape(v)) }
	kv("host", fmt.Sprintf("%s, kernel %s", host, h.Kernel))
	if e := r.Expected; e != nil {
		if e.DevicesMatch {
			s := fmt.Sprintf("as expected for %s: %s, %s", e.Model, counted.Noun(e.FoundAccelerators, "accelerator"), counted.Noun(e.FoundEFADevices, "EFA device"))
			missing := 0
			for _, l := range e.LocalNICs {
				missing += len(l.Missing)
			}
			if missing > 0 {
				s += fmt.Sprintf("; %s without true P2P", counted.Noun(missing, "expected local pair"))
			}
			kv("layout", s)
		} else {
			// each kind: what the node has, and where the model differs
			kind := func(found, model, matching int, what string) string {
				s := counted.Noun(found, what)
				if found != model || matching != model {
					s += fmt.Sprintf(" (the model has %d; %d at its addresses)", model, matching)
				}
				return s
			}
			kv("layout", fmt.Sprintf("differs from %s: %s, %s", e.Model, kind(e.FoundAccelerators, e.Accelerators, e.MatchingAccelerators, "accelerator"),
				kind(e.FoundEFADevices, e.EFADevices, e.MatchingEFADevices, "EFA device")))
		}
	} else {
		kv("layout", fmt.Sprintf("%s, %s (no machine model compared)", counted.Noun(len(r.Accelerators), "accelerator"), counted.Noun(len(r.NICs), "EFA device")))
	}
	kv("EFA", efaLine(h))
	kv("verdicts", verdictLine(r))
	if len(r.Accelerators) > 0 && len(r.NICs) > 0 {
		b.WriteByte('\n')
		all := true
		for i := range r.Accelerators {
			b.WriteString(Escape(accelLine(r, &r.Accelerators[i])))
			b.WriteByte('\n')
			all = all && len(r.Accelerators[i].P2PNICs) == len(r.NICs) && len(r.Accelerators[i].LocalNICs) < len(r.NICs)
		}
		if all && len(r.Accelerators) > 1 {
			fmt.Fprintf(&b, "Each also has true P2P with every other EFA NIC of the node (%d/%d in all).\n", len(r.NICs), len(r.NICs))
		}
	}
	b.WriteByte('\n')
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	} else {
		fmt.Fprintf(&b, "Findings (%d):\n", len(r.Findings))
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "  %s %s\n", f.Severity, f.Code)
			b.WriteString("    " + Escape(f.Message) + "\n") // one line: grep finds it whole
			if f.Reason != "" {
				b.WriteString(indent(textwrap.Wrap("why: "+Escape(f.Reason), 74), "    "))
			}
			b.WriteString(indent(textwrap.Wrap("fix: "+Escape(f.Fix), 74), "    "))
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Notes {
			// the lines after the first under the text, not the dash
			b.WriteString("  - " + strings.TrimPrefix(indent(textwrap.Wrap(Escape(n), 74), "    "), "    "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func efaLine(h *Host) string {
	d := h.EFADriver
	var s string
	switch d.Kind {
	case DriverOutOfTree:
		s = "out-of-tree driver"
		if d.Version != "" {
			s += " " + d.Version
		}
		if d.PeerMemory != nil {
			if *d.PeerMemory == "" {
				s += "; peer memory: none"
			} else {
				s += "; peer memory: " + *d.PeerMemory
			}
		}
	case DriverInTree:
		s = "in-tree driver"
	case DriverNone:
		s = "no driver bound"
		if d.Evidence == evidenceNoNIC {
			s = "no EFA device"
		}
	default:
		s = "driver in use unknown (" + d.Evidence + ")"
	}
	switch {
	case !h.DMABuf.Judged:
		return s + "; dma-buf: not judged"
	case h.DMABuf.Supported:
		return s + "; dma-buf: supported"
	}
	return s + "; dma-buf: unavailable"
}

func verdictLine(r *Report) string {
	n, uncertain, assumed := len(r.Pairs), 0, 0
	for _, p := range r.Pairs {
		if !p.Certain {
			uncertain++
		}
		if p.DMABuf.Assumed {
			assumed++
		}
	}
	var srcs []string
	for s, k := range r.Host.Sources {
		srcs = append(srcs, fmt.Sprintf("%d %s", k, s))
	}
	sort.Strings(srcs)
	s := counted.Noun(n, "pair")
	if len(srcs) > 0 {
		s += " (" + strings.Join(srcs, ", ") + ")"
	}
	switch {
	case n == 0:
	case uncertain == 0:
		s += ", all certain"
	default:
		s += fmt.Sprintf(", %d uncertain", uncertain)
	}
	if assumed > 0 {
		// the outcome can be certain where the map type is a guess: a
		// topology file records map types, so export needs them read
		s += fmt.Sprintf("; %d with the map type assumed (what decides it is hidden without root: export needs root)", assumed)
	}
	if r.Host.TopologyFile != "" && r.Host.TopologyFileError == "" {
		s += "; topology file " + r.Host.TopologyFile
	}
	return s
}

// accelLine: "GPU0  53:00.0 nvidia  P2P with 4/4 switch-local NICs:
// rdmap79s0 rdmap80s0 ...", saying "by peer memory only" where that is
// the only registration path that gives it. The NICs are named by their
// RDMA devices alone, so that eight GPUs with four NICs each fit one
// screen of 100 columns; the findings and the JSON give their addresses
// beside them, and 'efap2p topo' maps each to its address.
func accelLine(r *Report, a *Accelerator) string {
	drv := a.Driver
	if drv == "" {
		drv = "(no driver)"
	}
	word := localWord(a.LocalPath)
	head := fmt.Sprintf("%-5s %s %-7s", a.Name, a.Addr.Short(), drv)
	uncertain := ""
	if !a.Certain {
		uncertain = " (uncertain)"
	}
	if len(a.LocalP2P) == 0 {
		return fmt.Sprintf("%s no P2P%s with %s: %s", head, uncertain, its(len(a.LocalNICs), word+" NIC"), r.shortNICs(a.LocalNICs))
	}
	if peerMemoryOnly(r, a) {
		uncertain += " by peer memory only"
	}
	s := fmt.Sprintf("%s P2P%s with %d/%d %s NICs: %s", head, uncertain, len(a.LocalP2P), len(a.LocalNICs), word, r.shortNICs(a.LocalP2P))
	var without []p2p.Addr
	for _, n := range a.LocalNICs {
		if !containsAddr(a.LocalP2P, n) {
			without = append(without, n)
		}
	}
	if len(without) > 0 {
		s += "; not with " + r.shortNICs(without)
	}
	if len(a.P2PNICs) != len(r.NICs) || len(r.Accelerators) == 1 {
		s += fmt.Sprintf(" (%d/%d in all)", len(a.P2PNICs), len(r.NICs))
	}
	return s
}

// peerMemoryOnly reports an accelerator whose true P2P with its local
// NICs comes by the EFA driver's peer memory alone.
func peerMemoryOnly(r *Report, a *Accelerator) bool {
	n := 0
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Accelerator != a.Addr || !p.Local || !p.P2P {
			continue
		}
		if p.Via != p2p.RegPeerMem {
			return false
		}
		n++
	}
	return n > 0
}

// shortNICs names NICs by their RDMA devices ("rdmap79s0 rdmap80s0"), a
// NIC without one by its short address.
func (r *Report) shortNICs(as []p2p.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.Short()
		for j := range r.NICs {
			if r.NICs[j].Addr == a && r.NICs[j].IBDev != "" {
				s[i] = r.NICs[j].IBDev
			}
		}
	}
	return strings.Join(s, " ")
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
