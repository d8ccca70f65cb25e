// SPDX-License-Identifier: MIT

package main

// efap2p export --format nccl: the NCCL topology XML of package nccltopo,
// with export's options and errors.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// exportNCCL returns the NCCL topology XML of the machine o reads: blocked
// are the --peer-blocked NICs, force is --force.
func exportNCCL(o *p2p.Oracle, src *p2p.Sysfs, blocked []p2p.Addr, force bool) ([]byte, error) {
	model, _ := machineName(src)
	data, err := nccltopo.Marshal(o, src, nccltopo.Options{PeerBlocked: blocked, Force: force, Model: model, GeneratedBy: "efap2p export -format nccl"})
	switch {
	case errors.Is(err, nccltopo.ErrNotNIC):
		return nil, usagef("--peer-blocked %w", err)
	case errors.Is(err, nccltopo.ErrUncertain):
		return nil, fmt.Errorf("%w; run export as root, or pass --force", err)
	}
	return data, err
}

// machineName names the machine of an emulated tree from the emulator's
// configuration that efap2p sim write puts at its root ("# machine NAME;").
func machineName(src *p2p.Sysfs) (string, bool) {
	f, err := os.Open(filepath.Join(src.Root(), sim.EmulatorConfigName))
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 4 && sc.Scan(); i++ {
		if rest, ok := strings.CutPrefix(sc.Text(), "# machine "); ok {
			name, _, _ := strings.Cut(rest, ";")
			return strings.TrimSpace(name), name != ""
		}
	}
	return "", false
}
