// SPDX-License-Identifier: MIT

// Package dmabuf knows what the kernel says of a dma-buf and of its
// exporter: the file system magic of a dma-buf descriptor, the exporter's
// name in /proc/<pid>/fdinfo/<fd>, and which exporters keep their buffers
// in system memory or belong to which PCI drivers.
//
// It imports nothing of this repository; package p2p, package efadv and
// the library's answer index share it.
package dmabuf

import (
	"sort"
	"strings"
)

// Magic is the f_type fstatfs reports for a dma-buf fd (DMA_BUF_MAGIC).
const Magic = 0x444d4142

// systemMemoryExporters name dma-buf exporters whose buffers live in host
// memory: a NIC registering them is not doing peer-to-peer DMA.
// Provenance: udmabuf, the dma-heap system heap, the CMA heaps (named
// after their area: "reserved" on x86 with cma=, device-tree names
// elsewhere, "default_cma_region" from Linux 6.17), and i915, which always
// migrates an attached buffer to system memory.
var systemMemoryExporters = map[string]bool{
	"udmabuf": true, "system": true, "system-uncached": true, "reserved": true,
	"linux,cma": true, "default-pool": true, "default_cma_region": true, "i915": true,
}

// exporterDrivers maps an exporter name, as /proc/<pid>/fdinfo/<fd> shows
// it (exp_name), to the PCI drivers whose devices may own such a buffer.
// Provenance: nvidia's open modules name their exports "nv_dmabuf" from
// 580.65.06 ("nvidia" before); amdgpu, xe, nouveau and radeon export
// through DRM PRIME, whose name is "drm"; vfio-pci's BAR exports say
// "vfio_pci_core". Any other name is taken as the name of a driver.
var exporterDrivers = map[string][]string{
	"nv_dmabuf":     {"nvidia"},
	"nvidia":        {"nvidia"},
	"drm":           {"amdgpu", "xe", "nouveau", "radeon"},
	"vfio_pci_core": {"vfio-pci"},
}

// SystemMemory reports an exporter whose buffers live in host memory.
func SystemMemory(expName string) bool { return systemMemoryExporters[expName] }

// Drivers returns the PCI drivers whose devices may own a buffer of the
// named exporter: those the table knows, else the name itself (a driver
// that names its exports after itself). The caller may keep the slice.
func Drivers(expName string) []string {
	if d, ok := exporterDrivers[expName]; ok {
		return append([]string(nil), d...)
	}
	return []string{expName}
}

// ExporterNames returns the exporter names the tables know, as fdinfo
// shows them: those of device-memory exporters and of system-memory ones,
// sorted.
func ExporterNames() []string {
	names := make([]string, 0, len(exporterDrivers)+len(systemMemoryExporters))
	for n := range exporterDrivers {
		names = append(names, n)
	}
	for n := range systemMemoryExporters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ExpName returns the exp_name field of a dma-buf's /proc/<pid>/fdinfo/<fd>
// text; ok is false when it has none.
func ExpName(fdinfo string) (name string, ok bool) {
	for _, line := range strings.Split(fdinfo, "\n") {
		k, v, found := strings.Cut(line, ":")
		if found && strings.TrimSpace(k) == "exp_name" {
			v = strings.TrimSpace(v)
			return v, v != ""
		}
	}
	return "", false
}
