// SPDX-License-Identifier: MIT

package p2p

import "strings"

// LocalCPUList returns PCI function a's local_cpulist, the CPUs near it
// ("0-47,96-143"), or "" where sysfs does not say.
func (s *Sysfs) LocalCPUList(a Addr) string {
	// A list of single CPUs on a large machine runs past readAttr's 128
	// bytes; sysfs attributes hold at most a page.
	b, err := readFileLimited(s.devPath(a, "local_cpulist"), 4096)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
