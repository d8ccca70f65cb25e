// SPDX-License-Identifier: MIT

package answer

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
)

// ExportOptions tune Export.
type ExportOptions struct {
	// PeerBlocked are NICs whose firmware refuses DMA to every peer, a
	// fact sysfs cannot show: the file records them.
	PeerBlocked []p2p.Addr
	// Force writes verdicts that are uncertain (config space not
	// readable) instead of failing.
	Force bool
	// Boot binds the file to this boot (the boot-time file).
	Boot bool
	// Reasons writes each pair's explanation into the file (it then
	// grows tenfold); without it a reader explains a pair from the
	// recorded facts alone.
	Reasons bool
}

// ErrUncertain is wrapped when the map type of some verdicts between the
// machine's accelerators and the other devices is the kernel-safe
// assumption, not the kernel's own (p2p.Verdict.Exact is false: what
// decides it could not be read), and ExportOptions.Force is not set. A
// topology file records map types: it would record the assumption as
// fact, even where the outcome is certain.
var ErrUncertain = errors.New("some map types are assumed")

// ErrNotNIC is wrapped when ExportOptions.PeerBlocked names a function that
// is not a NIC of the machine.
var ErrNotNIC = errors.New("not a NIC of this machine")

// Export works out the topology file of the machine o reads from src
// (efap2p export): its accelerators and NICs (devices.List), the verdict
// of every accelerator with every NIC and every other accelerator, and the
// machine it describes (p2p.TopologyFile.RecordMachine). The NIC and
// accelerator facts of the topology file o reads, if any (the operator's,
// for the boot-time file), are carried into it; its pairs come in through
// o's verdicts. Each pair is worked out once and not cached (o.Compute), so
// time and memory grow with the pairs written; an oracle made with
// p2p.Options.NoReasons spares the sentences ExportOptions.Reasons does
// not write.
func Export(o *p2p.Oracle, src *p2p.Sysfs, opts ExportOptions) (*p2p.TopologyFile, error) {
	devs, err := devices.List(o, src)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tf := p2p.NewTopologyFile(host)
	operator := operatorFacts(o)
	isNIC := map[p2p.Addr]bool{}
	var accels []p2p.Addr
	for _, d := range devs {
		switch d.Kind {
		case devices.KindNIC:
			isNIC[d.Addr] = true
			tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: d.Addr, IBDev: d.IBDev})
		case devices.KindAccelerator:
			accels = append(accels, d.Addr)
			tf.Accelerators = append(tf.Accelerators, p2p.TopoAccelerator{Addr: d.Addr, Driver: d.Driver, Vendor: d.Vendor, Device: d.Device})
		}
	}
	for i := range tf.NICs {
		if n, ok := operator.nics[tf.NICs[i].Addr]; ok && n.PeerAccessBlocked {
			tf.NICs[i].PeerAccessBlocked, tf.NICs[i].Note = true, n.Note
		}
	}
	for _, a := range operator.accels {
		if !slices.ContainsFunc(tf.Accelerators, func(x p2p.TopoAccelerator) bool { return x.Addr == a.Addr }) {
			tf.Accelerators = append(tf.Accelerators, a)
		}
	}
	for _, b := range opts.PeerBlocked {
		if !isNIC[b] {
			return nil, fmt.Errorf("%s: %w", b, ErrNotNIC)
		}
		for i := range tf.NICs {
			if tf.NICs[i].Addr == b {
				tf.NICs[i].PeerAccessBlocked = true
				tf.NICs[i].Note = "recorded by efap2p export --peer-blocked"
			}
		}
	}
	verdict := o.Compute
	if opts.Reasons {
		verdict = o.Explain
	}
	// Each accelerator's row of pairs is its own (every device but
	// itself, as devs lists them): worked out side by side, in place.
	row := max(len(devs)-1, 0)
	tf.Pairs = make([]p2p.TopoPair, len(accels)*row)
	uncertain := make([]int, len(accels))
	examples := make([]string, len(accels))
	unread := make([][]string, len(accels))
	errs := make([]error, len(accels))
	each(len(accels), func(i int) {
		p, out := accels[i], tf.Pairs[i*row:(i+1)*row]
		j := 0
		for _, c := range devs {
			if c.Addr == p {
				continue
			}
			v, err := verdict(p, c.Addr)
			if err != nil {
				errs[i] = err
				return
			}
			// The file records map types: a kernel-safe guess is not one,
			// even where the outcome would be the same.
			if !v.Exact {
				if uncertain[i]++; examples[i] == "" {
					examples[i] = p.String() + " -> " + c.Addr.String()
					unread[i] = v.Unread
				}
			}
			out[j] = p2p.TopoPair{
				Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance, Path: v.Path,
				Policy: v.Policy, Outcome: v.Outcome, BandwidthMBs: v.BandwidthMBs(), LatencyNs: v.LatencyNs(),
				ACSRedirect: v.ACSRedirect,
			}
			if opts.Reasons {
				out[j].Reason = v.Reason
			}
			j++
		}
	})
	total, example, what := 0, "", []string(nil)
	for i := range accels {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if total += uncertain[i]; example == "" {
			example, what = examples[i], unread[i]
		}
	}
	if total > 0 && !opts.Force {
		pairs := "pairs"
		if len(tf.Pairs) == 1 {
			pairs = "pair"
		}
		return nil, fmt.Errorf("%w: for %d of %d %s the map type rests on what this user cannot read (e.g. %s: %s; PCI config space past 64 bytes needs root); a topology file records the kernel's map types, not the kernel-safe guess, even where the outcome is certain (as efap2p check reports it)",
			ErrUncertain, total, len(tf.Pairs), pairs, example, strings.Join(what, ", "))
	}
	if err := tf.RecordMachine(o, opts.Boot); err != nil {
		return nil, err
	}
	return tf, nil
}

// facts are what an operator's topology file says beyond its pairs.
type facts struct {
	nics   map[p2p.Addr]p2p.TopoNIC
	accels []p2p.TopoAccelerator
}

// operatorFacts returns the NIC and accelerator facts of the topology file
// the oracle reads, to carry them into the file written.
func operatorFacts(o *p2p.Oracle) facts {
	f := facts{nics: map[p2p.Addr]p2p.TopoNIC{}}
	name, _ := o.TopologyFileInUse()
	if name == "" {
		return f
	}
	tf, err := p2p.ReadTopologyFile(name)
	if err != nil {
		return f
	}
	for _, n := range tf.NICs {
		f.nics[n.Addr] = n
	}
	f.accels = tf.Accelerators
	return f
}
