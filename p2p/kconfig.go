// SPDX-License-Identifier: MIT

package p2p

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/internal/secenv"
)

// A kernel built without CONFIG_PCI_P2PDMA has no p2pdma at all: the
// header's stub pci_p2pdma_distance() returns -1 for every pair, so every
// exporter that asks it falls back or refuses. No stock Debian 12 kernel
// has it (6.1 and 6.12, cloud and generic). What a process can read to
// tell, without privileges:
//   - /boot/config-RELEASE, mode 0644 where distributions install it;
//   - /proc/config.gz, mode 0444, only with CONFIG_IKCONFIG_PROC;
//   - /proc/kallsyms, mode 0444: with kptr_restrict the addresses read as
//     zeros, but the names are there, and a kernel with p2pdma lists
//     pci_p2pdma_distance_many.

// Built says whether a kernel has an option compiled in.
type Built uint8

// The states of an option.
const (
	BuiltUnknown Built = iota
	BuiltYes
	BuiltNo
)

var builtNames = []string{"unknown", "y", "n"}

// String returns "y", "n" or "unknown".
func (b Built) String() string { return enumName(builtNames, b, "Built") }

// MarshalText implements encoding.TextMarshaler.
func (b Built) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Built) UnmarshalText(t []byte) error {
	v, err := enumParse[Built](builtNames, string(t), "kernel option state", "y, n or unknown")
	*b = v
	return err
}

// KernelConfig is what is known of the kernel's build configuration, as
// far as it changes a verdict.
type KernelConfig struct {
	// P2PDMA is CONFIG_PCI_P2PDMA.
	P2PDMA Built `json:"pci_p2pdma"`
	// Source says where it was read ("/boot/config-6.1.0-57-amd64",
	// "/proc/config.gz", "/proc/kallsyms", a file named by
	// EFAP2P_KERNEL_CONFIG, the machine model), or, when unknown, why
	// nothing could tell.
	Source string `json:"source"`
	// unread is set when the configuration is that of the running kernel
	// and none of its sources could be read: an input the verdict needed
	// and lacks. A tree or a release that names no configuration is
	// assumed built with PCI_P2PDMA, as its rules are.
	unread bool
}

// KernelConfigOf returns a known configuration: built with PCI_P2PDMA or
// not, and where that was learned.
func KernelConfigOf(p2pdma bool, source string) KernelConfig {
	if p2pdma {
		return KernelConfig{P2PDMA: BuiltYes, Source: source}
	}
	return KernelConfig{P2PDMA: BuiltNo, Source: source}
}

// Describe says in words what the configuration means for P2P DMA.
func (k KernelConfig) Describe() string {
	switch k.P2PDMA {
	case BuiltYes:
		return "built with PCI_P2PDMA (" + k.Source + ")"
	case BuiltNo:
		return "built without PCI_P2PDMA (" + k.Source + "): the kernel refuses every P2P mapping it is asked for; dma-buf exporters that ask it fall back"
	}
	if k.Source == "" {
		return "unknown"
	}
	return "unknown: " + k.Source
}

// KernelConfigEnv names a kernel build configuration file (as
// /boot/config-RELEASE, or gzipped as /proc/config.gz) for the oracle to
// read CONFIG_PCI_P2PDMA from: the emulator sets it to the machine
// model's, and it stands for the kernel of a tree other than /sys.
const KernelConfigEnv = "EFAP2P_KERNEL_CONFIG"

// ErrNotKernelConfig is wrapped when a file is not a kernel build
// configuration.
var ErrNotKernelConfig = errors.New("not a kernel build configuration")

// maxKernelConfig bounds a configuration file (Debian's is 260 KB).
const maxKernelConfig = 4 << 20

// ParseKernelConfig reads a kernel build configuration (the .config
// format, plain or gzipped). A configuration that lists other options but
// not PCI_P2PDMA is one where its dependencies were not met: not built.
func ParseKernelConfig(data []byte, source string) (KernelConfig, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return KernelConfig{}, fmt.Errorf("%s: %w: %w", source, ErrNotKernelConfig, err)
		}
		plain, err := io.ReadAll(io.LimitReader(zr, maxKernelConfig+1))
		if err != nil {
			return KernelConfig{}, fmt.Errorf("%s: %w: %w", source, ErrNotKernelConfig, err)
		}
		if len(plain) > maxKernelConfig {
			return KernelConfig{}, fmt.Errorf("%s: %w: more than %d bytes", source, errTooLarge, maxKernelConfig)
		}
		data = plain
	}
	options := 0
	state := BuiltNo
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "CONFIG_PCI_P2PDMA=y":
			state = BuiltYes
			options++
		case line == "# CONFIG_PCI_P2PDMA is not set", line == "CONFIG_PCI_P2PDMA=n":
			state = BuiltNo
			options++
		case strings.HasPrefix(line, "CONFIG_"), strings.HasPrefix(line, "# CONFIG_") && strings.HasSuffix(line, " is not set"):
			options++
		case line == "", strings.HasPrefix(line, "#"):
		default:
			return KernelConfig{}, fmt.Errorf("%s: %w: %.60q", source, ErrNotKernelConfig, line)
		}
	}
	if options == 0 {
		return KernelConfig{}, fmt.Errorf("%s: %w: no CONFIG_ option", source, ErrNotKernelConfig)
	}
	return KernelConfig{P2PDMA: state, Source: source}, nil
}

// ReadKernelConfigFile reads a kernel build configuration file.
func ReadKernelConfigFile(name string) (KernelConfig, error) {
	data, err := readFileLimited(name, maxKernelConfig)
	if err != nil {
		return KernelConfig{}, err
	}
	return ParseKernelConfig(data, name)
}

// KernelConfigFromEnv reads the file $EFAP2P_KERNEL_CONFIG names; nil
// when it is unset (or ignored: in a setuid, setgid or file-capability
// process).
func KernelConfigFromEnv() (*KernelConfig, error) {
	name := strings.TrimSpace(secenv.Getenv(KernelConfigEnv))
	if name == "" {
		return nil, nil
	}
	k, err := ReadKernelConfigFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KernelConfigEnv, err)
	}
	return &k, nil
}

// The places the running kernel's configuration is read from.
var (
	procConfigGz = "/proc/config.gz"
	procKallsyms = "/proc/kallsyms"
	bootConfig   = func(release string) string { return "/boot/config-" + release }
)

// maxKallsyms bounds the read of /proc/kallsyms (a distribution kernel's
// is 10-20 MB with its modules).
const maxKallsyms = 256 << 20

// p2pdmaSymbol is a function every kernel with PCI_P2PDMA has (exported
// since 4.20), and none without.
const p2pdmaSymbol = "pci_p2pdma_distance_many"

// RunningKernelConfig works out the running kernel's configuration from
// what an unprivileged process can read: its own /proc/config.gz, else
// /boot/config-$(uname -r), else the symbol names of /proc/kallsyms, the
// cheap sources first. It is unknown, with the reason, when none of them
// can be read.
func RunningKernelConfig() KernelConfig {
	rel, err := RunningRelease()
	if err != nil {
		return KernelConfig{Source: err.Error(), unread: true}
	}
	var tried []string
	if k, err := ReadKernelConfigFile(procConfigGz); err == nil {
		return k
	} else {
		tried = append(tried, shortErr(procConfigGz, err))
	}
	boot := bootConfig(rel.String())
	if k, err := ReadKernelConfigFile(boot); err == nil {
		return k
	} else {
		tried = append(tried, shortErr(boot, err))
	}
	found, err := kallsymsHas(procKallsyms, p2pdmaSymbol)
	if err == nil {
		if found {
			return KernelConfigOf(true, procKallsyms+", which lists "+p2pdmaSymbol)
		}
		return KernelConfigOf(false, procKallsyms+", which does not list "+p2pdmaSymbol)
	}
	tried = append(tried, shortErr(procKallsyms, err))
	return KernelConfig{Source: "none of " + strings.Join(tried, ", ") + " could tell", unread: true}
}

// ReleaseKernelConfig reads the configuration of an installed kernel that
// is not the running one: /boot/config-RELEASE.
func ReleaseKernelConfig(r Release) KernelConfig {
	boot := bootConfig(r.String())
	k, err := ReadKernelConfigFile(boot)
	if err != nil {
		return KernelConfig{Source: shortErr(boot, err)}
	}
	return k
}

// shortErr names a source and why it did not answer, briefly.
func shortErr(name string, err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, syscall.ENOENT) {
			return name + " (absent)"
		}
		return name + " (" + pe.Err.Error() + ")"
	}
	return name + " (" + err.Error() + ")"
}

// kallsymsHas reports whether the kallsyms listing at path names the
// symbol. A listing with no line at all (a kernel without KALLSYMS
// leaves no file; a restricted one could be empty) cannot tell.
func kallsymsHas(path, symbol string) (bool, error) {
	fd, _, err := openRegular(path, false)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxKallsyms))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	lines := 0
	for sc.Scan() {
		lines++
		// "ffffffff81234560 T pci_p2pdma_distance_many": the name is the
		// third field; module symbols carry "\t[module]" after it.
		l := sc.Bytes()
		i := bytes.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		name := l[i+1:]
		if j := bytes.IndexByte(name, '\t'); j >= 0 {
			name = name[:j]
		}
		if string(name) == symbol {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if lines == 0 {
		return false, &os.PathError{Op: "read", Path: path, Err: errors.New("no symbols listed")}
	}
	return false, nil
}
