// SPDX-License-Identifier: MIT

// Package efadv is efap2p's Go API for Go callers: libefa's
// efadv_query_device with the P2P_DMA capability, and the pairwise
// question behind it — can this EFA NIC DMA straight into that
// accelerator's memory, or into the device that exported this dma-buf? —
// answered from the PCI topology, without any GPU runtime.
//
// # Answers
//
// QueryDevice returns what libefa returns, errors included, plus
// CapP2PDMA when the NIC gets true peer-to-peer DMA (not refused, not
// bounced through system memory) into at least one accelerator of the
// host. QueryP2P returns the verdict for one peer PCI function: the
// kernel's map type and distance, the path class, the answer over both
// ways of registering the accelerator's memory (p2p.Verdict.Effective,
// and Via: dma-buf, the out-of-tree EFA driver's peer memory, or both),
// each path's own outcome (Outcome is the dma-buf path's), where the
// answer came from and why. QueryP2PDmabuf does the
// same for a dma-buf descriptor, whose exporter it identifies through
// libc (fstatfs, /proc/self/fdinfo), so that interposers see the calls.
//
// # Libraries and sources
//
// libefa.so.1 and libibverbs.so.1 are loaded at run time with purego
// (see package verbs); no cgo is needed. The verdicts come from one
// oracle per process (package p2p), built on first use from the sysfs
// tree libibverbs reads ($SYSFS_PATH, else /sys) and from the machine's
// topology file, whose verdicts take precedence: $EFAP2P_TOPOLOGY, else
// the boot-time /run/efap2p/topology.json, else the operator's
// /etc/efap2p/topology.json (the variables are ignored in secure-execution
// programs: setuid, setgid, file capabilities). A file that does not
// describe this machine, or that others than root and the user could have
// written, is set aside. Problems the oracle works around, such as an
// unusable topology file, are reported once on standard error unless
// EFAP2P_LOG=off.
//
// # Threads and cost
//
// Every function is safe for concurrent use. Verdicts, and each NIC's
// P2P_DMA bit, are cached for the life of the process, as the kernel
// caches its own: a warm QueryP2P is a map lookup and a copy of the
// verdict (the caller's to keep and change), and a warm QueryDevice costs
// the libefa call plus a lookup. The first answer for a NIC reads
// sysfs (a few files per PCI function on the paths asked about).
package efadv
