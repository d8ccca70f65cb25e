// SPDX-License-Identifier: MIT

package sim

// Whether the installed rdma-core's libefa claims a model's EFA devices:
// libibverbs lists only the devices whose PCI ID a provider's table holds,
// so a model whose NICs are newer than the installed libefa shows no
// device at all, which looks like a broken emulator.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/models"
)

// efaFirstRelease is, for each EFA device ID, the first rdma-core release
// whose libefa claims it (providers/efa/efa.c's PCI table: 0xefa3 came in
// 53.0, 0xefa4 in 64.0; the older ones were there before 44.0).
var efaFirstRelease = map[uint16][2]int{
	0xefa0: {0, 0}, 0xefa1: {0, 0}, 0xefa2: {0, 0},
	0xefa3: {53, 0}, 0xefa4: {64, 0},
}

// providerGlobs are where libibverbs' provider libraries are installed
// (Debian's multiarch libdir, the others' lib64 and lib); tests replace
// them.
var providerGlobs = []string{
	"/usr/lib/*-linux-gnu/libibverbs/libefa-rdmav*.so",
	"/usr/lib64/libibverbs/libefa-rdmav*.so",
	"/usr/lib/libibverbs/libefa-rdmav*.so",
	"/usr/local/lib/libibverbs/libefa-rdmav*.so",
}

// rdma-core names its libraries libNAME.so.ABI.MINOR.RELEASE.FIX
// (libefa.so.1.2.44.0 for rdma-core 44.0).
var libRelease = regexp.MustCompile(`\.so\.\d+\.\d+\.(\d+)\.(\d+)$`)

// installedEFARelease is the rdma-core release of the installed libefa
// provider, and whether one was found and named.
func installedEFARelease() ([2]int, string, bool) {
	for _, g := range providerGlobs {
		matches, _ := filepath.Glob(g)
		for _, p := range matches {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			m := libRelease.FindStringSubmatch(filepath.Base(real))
			if m == nil {
				continue
			}
			major, _ := strconv.Atoi(m[1])
			minor, _ := strconv.Atoi(m[2])
			return [2]int{major, minor}, m[1] + "." + m[2], true
		}
	}
	return [2]int{}, "", false
}

// ProviderNote says, in one line, when the installed libefa does not claim
// the EFA devices of machine m (libibverbs inside the emulated host then
// lists none of them), naming the rdma-core release that does; "" when it
// claims them all, or when the installed release cannot be told.
func ProviderNote(m *models.Machine) string {
	have, name, ok := installedEFARelease()
	if !ok {
		return ""
	}
	var ids []string
	var need [2]int
	count := 0
	for _, f := range m.EFANICs() {
		first, known := efaFirstRelease[uint16(f.Device)]
		if known && !before(have, first) {
			continue
		}
		count++
		id := fmt.Sprintf("1d0f:%04x", uint32(f.Device))
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		if known && before(need, first) {
			need = first
		}
	}
	if count == 0 {
		return ""
	}
	newer := "no rdma-core release efap2p knows of claims it"
	if need != [2]int{} {
		newer = fmt.Sprintf("rdma-core %d.%d and newer claim it", need[0], need[1])
	}
	listed := "none of its " + counted.Noun(count, "EFA NIC")
	if all := len(m.EFANICs()); count < all {
		listed = fmt.Sprintf("%d of its %s", all-count, counted.Noun(all, "EFA NIC"))
	}
	return fmt.Sprintf("the installed libefa (rdma-core %s) does not claim %s, the EFA device of %s: libibverbs lists %s; %s",
		name, strings.Join(ids, ", "), m.Name, listed, newer)
}

func before(a, b [2]int) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }
