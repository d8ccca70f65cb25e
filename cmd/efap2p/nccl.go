// SPDX-License-Identifier: MIT

package main

// efap2p export --format nccl: the NCCL topology XML of package nccltopo,
// with export's options and errors.

import (
	"errors"
	"fmt"

	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// exportNCCL returns the NCCL topology XML of the machine o reads: blocked
// are the --peer-blocked NICs, force is --force.
func exportNCCL(o *p2p.Oracle, src *p2p.Sysfs, blocked []p2p.Addr, force bool) ([]byte, error) {
	model, _ := sim.TreeMachine(src.Root())
	data, err := nccltopo.Marshal(o, src, nccltopo.Options{PeerBlocked: blocked, Force: force, Model: model, GeneratedBy: "efap2p export --format nccl"})
	switch {
	case errors.Is(err, nccltopo.ErrNotNIC):
		return nil, usagef("--peer-blocked %w", err)
	case errors.Is(err, nccltopo.ErrUncertain):
		return nil, fmt.Errorf("%w; run export as root, or pass --force", err)
	}
	return data, err
}
