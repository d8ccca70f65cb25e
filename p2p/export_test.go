// SPDX-License-Identifier: MIT

package p2p

// SetBootIDForTest makes the topology file checks see the given boot ID;
// the returned function restores the real one.
func SetBootIDForTest(bootID string) (restore func()) {
	b := currentBootID
	currentBootID = func() string { return bootID }
	return func() { currentBootID = b }
}

// OptionalMethodsForTest names the optional Source methods (the interfaces
// of extras.go) a topology over src finds.
func OptionalMethodsForTest(src Source) []string {
	ext := NewTopology(src).ext
	var out []string
	for name, ok := range map[string]bool{
		"acpi":             is[acpiSource](ext),
		"peer-mem":         is[peerMemSource](ext),
		"driver-functions": is[driverFunctions](ext),
		"driver-info":      is[driverInfo](ext),
		"ids":              is[idReader](ext),
		"config":           is[configSource](ext),
	} {
		if ok {
			out = append(out, name)
		}
	}
	return out
}

func is[T any](v any) bool { _, ok := v.(T); return ok }

// SetKernelConfigPlacesForTest points RunningKernelConfig at other files
// (/proc/config.gz, /boot/config-RELEASE, /proc/kallsyms); the returned
// function restores the real places.
func SetKernelConfigPlacesForTest(configGz, bootDir, kallsyms string) (restore func()) {
	g, b, k := procConfigGz, bootConfig, procKallsyms
	procConfigGz, procKallsyms = configGz, kallsyms
	bootConfig = func(release string) string { return bootDir + "/config-" + release }
	return func() { procConfigGz, bootConfig, procKallsyms = g, b, k }
}

// Stats returns what the Sysfs source has read so far, for the tests and
// benchmarks that hold the oracle to its budget.
func (s *Sysfs) Stats() sysfsStats { return s.stats() }

// SysfsStats is what Stats returns.
type SysfsStats = sysfsStats
