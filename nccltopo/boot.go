// SPDX-License-Identifier: MIT

package nccltopo

// The boot-time NCCL topology: `efap2p export --boot` writes it beside the
// boot-time topology file, bound to the boot it was written in, and
// `efap2p env` names it in NCCL_TOPO_FILE only in that boot.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
)

// BootFileName is the boot-time NCCL topology's name, in the folder of the
// boot-time topology file (/run/efap2p/nccl-topology.xml).
const BootFileName = "nccl-topology.xml"

// BootFile returns where the NCCL topology goes beside the topology file
// named topologyFile.
func BootFile(topologyFile string) string {
	return filepath.Join(filepath.Dir(topologyFile), BootFileName)
}

// bootPrefix starts the header line that binds a file to a boot
// (Options.BootID).
const bootPrefix = "Boot ID "

// ErrNoBootID is wrapped by ReadBootID when the file's header binds it to
// no boot.
var ErrNoBootID = errors.New("no boot ID in its header")

// maxHeader bounds what ReadBootID reads: the boot line comes before the
// header's paragraphs.
const maxHeader = 4096

// ReadBootID returns the boot ID a file Marshal wrote with Options.BootID
// names in its header; the error wraps ErrNoBootID for a file without one.
// It reads at most the first 4 KiB of r.
func ReadBootID(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHeader))
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if first {
			if l != "<!--" {
				break
			}
			first = false
			continue
		}
		if l == "-->" {
			break
		}
		if rest, ok := strings.CutPrefix(l, bootPrefix); ok {
			id, _, _ := strings.Cut(rest, ":")
			if id = strings.TrimSpace(id); id != "" {
				return id, nil
			}
		}
	}
	return "", ErrNoBootID
}

// bootLine is the header line of a file bound to boot id.
func bootLine(id string) string {
	return bootPrefix + id + ": written at boot by efap2p export -boot, for this boot only."
}
