// SPDX-License-Identifier: MIT

package p2p

// SetMachineForTest makes the topology file checks see the given kernel
// release and boot ID; the returned function restores the real ones.
func SetMachineForTest(kernel, bootID string) (restore func()) {
	k, b := runningKernel, currentBootID
	runningKernel = func() string { return kernel }
	currentBootID = func() string { return bootID }
	return func() { runningKernel, currentBootID = k, b }
}
