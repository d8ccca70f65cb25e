// SPDX-License-Identifier: MIT

package p2p

// SetBootIDForTest makes the topology file checks see the given boot ID;
// the returned function restores the real one.
func SetBootIDForTest(bootID string) (restore func()) {
	b := currentBootID
	currentBootID = func() string { return bootID }
	return func() { currentBootID = b }
}
