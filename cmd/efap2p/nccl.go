// SPDX-License-Identifier: MIT

package main

// efap2p export --format nccl: the NCCL topology XML of package nccltopo,
// with export's options and errors.

import (
	"errors"
	"fmt"
	"io"

	"github.com/efap2p/efap2p/answer"

	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// exportNCCL returns the NCCL topology XML of the machine o reads: blocked
// are the --peer-blocked NICs, force is --force.
func exportNCCL(o *p2p.Oracle, src *p2p.Sysfs, blocked []p2p.Addr, force bool) ([]byte, error) {
	return marshalNCCL(o, src, nccltopo.Options{PeerBlocked: blocked, Force: force, GeneratedBy: "efap2p export --format nccl"})
}

// writeBootNCCL writes the NCCL topology beside the boot-time file
// topologyFile (export --boot), bound to this boot, as the topology file
// is written: atomically, mode 0644.
func writeBootNCCL(o *p2p.Oracle, src *p2p.Sysfs, blocked []p2p.Addr, force bool, topologyFile string, stderr io.Writer) error {
	boot := p2p.CurrentBootID()
	if boot == "" {
		return errors.New("export --boot: this boot's ID cannot be read (/proc/sys/kernel/random/boot_id)")
	}
	data, err := marshalNCCL(o, src, nccltopo.Options{PeerBlocked: blocked, Force: force, BootID: boot, GeneratedBy: "efap2p export --boot"})
	if err != nil {
		return err
	}
	name := nccltopo.BootFile(topologyFile)
	if err := answer.WriteFileAtomic(name, data); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "efap2p: wrote %s\n", name)
	return nil
}

func marshalNCCL(o *p2p.Oracle, src *p2p.Sysfs, opts nccltopo.Options) ([]byte, error) {
	opts.Model, _ = sim.TreeMachine(src.Root())
	data, err := nccltopo.Marshal(o, src, opts)
	switch {
	case errors.Is(err, nccltopo.ErrNotNIC):
		return nil, usagef("--peer-blocked %w", err)
	case errors.Is(err, nccltopo.ErrUncertain):
		return nil, fmt.Errorf("%w; run export as root, or pass --force", err)
	}
	return data, err
}
