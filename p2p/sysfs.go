// SPDX-License-Identifier: MIT

package p2p

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/efap2p/efap2p/internal/natsort"
	"github.com/efap2p/efap2p/internal/pcicfg"
	"github.com/efap2p/efap2p/internal/pcilink"
	"github.com/efap2p/efap2p/internal/secenv"
)

// defaultSysfsRoot is where the kernel mounts sysfs.
const defaultSysfsRoot = "/sys"

// SysfsRoot returns the sysfs root the way libibverbs picks it: $SYSFS_PATH
// when set (trailing slashes dropped), else /sys. The variable is ignored
// in a secure-execution process (setuid, setgid, file capabilities).
func SysfsRoot() string {
	if p := strings.TrimRight(secenv.Getenv("SYSFS_PATH"), "/"); p != "" {
		return p
	}
	return defaultSysfsRoot
}

// sysfsStats counts what a Sysfs source has read, so that tests and
// benchmarks can hold the oracle to its budget.
type sysfsStats struct {
	ConfigDwords int64 // dwords of config space read
	ConfigOpens  int64 // config files opened
	AttrReads    int64 // attribute files read
	Readlinks    int64
	Readdirs     int64
}

// Sysfs is a Source that reads a sysfs tree: /sys, or one written by
// `efap2p sim write`. It reads nothing until asked, and then only what the
// question needs.
type Sysfs struct {
	root string

	configDwords, configOpens, attrReads, readlinks, readdirs atomic.Int64

	// rootDirs is where each root bus seen by Chain lives: under
	// devices/, below a PCI function (VMD), a platform device
	// (devicetree) or another bus (Hyper-V vPCI).
	rootMu   sync.Mutex
	rootDirs map[RootBus]string
	// fnDirs is each function's device directory as Chain resolved its
	// bus/pci/devices link: reading attributes there spares the kernel
	// following the link again on every open.
	fnDirs map[Addr]string
}

// ErrNoSysfs is wrapped when a directory does not hold a PCI sysfs tree.
var ErrNoSysfs = errors.New("no PCI sysfs tree")

// OpenSysfs returns a Source reading the tree at root. It fails when root
// has no bus/pci/devices directory.
func OpenSysfs(root string) (*Sysfs, error) {
	st, err := os.Stat(filepath.Join(root, "bus/pci/devices"))
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w at %s (bus/pci/devices is missing)", ErrNoSysfs, root)
	}
	return &Sysfs{root: root}, nil
}

// Root returns the directory the source reads.
func (s *Sysfs) Root() string { return s.root }

// stats returns what has been read so far (tests reach it as Stats).
func (s *Sysfs) stats() sysfsStats {
	return sysfsStats{
		ConfigDwords: s.configDwords.Load(),
		ConfigOpens:  s.configOpens.Load(),
		AttrReads:    s.attrReads.Load(),
		Readlinks:    s.readlinks.Load(),
		Readdirs:     s.readdirs.Load(),
	}
}

func (s *Sysfs) devPath(a Addr, name string) string {
	s.rootMu.Lock()
	dir, ok := s.fnDirs[a]
	s.rootMu.Unlock()
	b := make([]byte, 0, len(s.root)+len(dir)+len(name)+40)
	if ok {
		b = append(b, dir...)
	} else {
		b = a.appendTo(append(append(b, s.root...), "/bus/pci/devices/"...))
	}
	if name != "" {
		b = append(append(b, '/'), name...)
	}
	return string(b)
}

// linkPrefix is how the kernel's bus/pci/devices links start: up to the
// root of sysfs, then into devices/.
const linkPrefix = "../../../devices/"

// Chain implements Source: one readlink of bus/pci/devices/<a> names every
// bridge above the function, as the kernel nests device directories.
func (s *Sysfs) Chain(a Addr) (RootBus, []Addr, error) {
	s.readlinks.Add(1)
	// the link itself, never the directory an earlier Chain resolved it to
	target, err := rawReadlink(string(a.appendTo([]byte(s.root + "/bus/pci/devices/"))))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return RootBus{}, nil, fmt.Errorf("%w: %s is not in %s", ErrNoFunction, a, s.root)
		}
		return RootBus{}, nil, fmt.Errorf("%w: %s: %w", ErrNoFunction, a, err)
	}
	root, chain, dir, err := parseDevicePath(a, target)
	if err != nil {
		return root, chain, err
	}
	s.rootMu.Lock()
	_, known := s.rootDirs[root]
	s.rootMu.Unlock()
	if !known && !filepath.IsAbs(dir) {
		dir = filepath.Join(s.root, "bus/pci/devices", dir)
	}
	// A relative link (as sysfs writes them) that stays inside the tree:
	// the kernel's own shape is joined without cleaning the whole path.
	fnDir := ""
	if rest, ok := strings.CutPrefix(target, linkPrefix); ok && !strings.Contains(rest, "..") && !strings.Contains(rest, "//") {
		fnDir = s.root + "/devices/" + rest
	} else if !filepath.IsAbs(target) {
		if d := filepath.Join(s.root, "bus/pci/devices", target); strings.HasPrefix(d, filepath.Join(s.root, "devices")+"/") {
			fnDir = d
		}
	}
	s.rootMu.Lock()
	if s.rootDirs == nil {
		s.rootDirs = map[RootBus]string{}
		s.fnDirs = map[Addr]string{}
	}
	if !known {
		s.rootDirs[root] = dir
	}
	if fnDir != "" {
		s.fnDirs[a] = fnDir
	}
	s.rootMu.Unlock()
	return root, chain, nil
}

// rootDir returns the directory of a root bus's host bridge device
// (pciDDDD:BB): where Chain found it, else under devices/.
func (s *Sysfs) rootDir(r RootBus) string {
	s.rootMu.Lock()
	d, ok := s.rootDirs[r]
	s.rootMu.Unlock()
	if ok {
		return d
	}
	return filepath.Join(s.root, "devices", r.String())
}

// parseDevicePath extracts the root bus and the upstream chain (root bus
// side first, a last) from the target of a bus/pci/devices/<a> link or any
// path of a device directory. The root bus may sit anywhere: under
// devices/, below a PCI function (a VMD domain), a platform device
// (devicetree host controllers) or another bus (Hyper-V vPCI); the chain
// restarts at every root bus directory on the way.
// It also returns the path of the root bus directory (a prefix of path).
func parseDevicePath(a Addr, path string) (RootBus, []Addr, string, error) {
	var root RootBus
	var chain []Addr
	haveRoot := false
	rootEnd := 0
	pos := 0
	for _, comp := range strings.Split(path, "/") {
		pos += len(comp) + 1
		if r, ok := ParseRootBus(comp); ok {
			root, chain, haveRoot = r, chain[:0], true
			rootEnd = pos - 1
			continue
		}
		if !haveRoot {
			continue
		}
		if f, ok := parseAddr(comp); ok {
			chain = append(chain, f)
			continue
		}
		// A non-PCI directory between two PCI ones: the chain is broken
		// there; whatever follows starts over at a root bus.
		haveRoot, chain = false, chain[:0]
	}
	if !haveRoot || len(chain) == 0 || chain[len(chain)-1] != a {
		return RootBus{}, nil, "", fmt.Errorf("%w: %s: device path %q has no PCI root bus", ErrNoFunction, a, path)
	}
	return root, chain, path[:rootEnd], nil
}

// Class implements Source.
func (s *Sysfs) Class(a Addr) (uint32, error) { return s.readHex(s.devPath(a, "class")) }

// Link implements Source.
func (s *Sysfs) Link(a Addr) (float64, int, error) {
	sp, err := s.readAttr(s.devPath(a, "current_link_speed"))
	if err != nil {
		return 0, 0, err
	}
	wd, err := s.readAttr(s.devPath(a, "current_link_width"))
	if err != nil {
		return 0, 0, err
	}
	w, _ := strconv.Atoi(wd)
	return pcilink.ParseSpeed(sp), w, nil
}

// Driver implements Source.
func (s *Sysfs) Driver(a Addr) (string, error) {
	s.readlinks.Add(1)
	t, err := rawReadlink(s.devPath(a, "driver"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

// NUMANode implements Source.
func (s *Sysfs) NUMANode(a Addr) (int, error) {
	b, err := s.readAttr(s.devPath(a, "numa_node"))
	if err != nil {
		return -1, err
	}
	n, err := strconv.Atoi(b)
	if err != nil {
		return -1, fmt.Errorf("%s: numa_node %q", a, b)
	}
	return n, nil
}

// Attrs implements Source.
func (s *Sysfs) Attrs(a Addr) (Attrs, error) {
	at := Attrs{NUMANode: -1}
	var err error
	if at.Class, err = s.readHex(s.devPath(a, "class")); err != nil {
		return at, err
	}
	v, err := s.readHex(s.devPath(a, "vendor"))
	if err != nil {
		return at, err
	}
	d, err := s.readHex(s.devPath(a, "device"))
	if err != nil {
		return at, err
	}
	at.Vendor, at.Device = uint16(v), uint16(d)
	if v, err := s.readHex(s.devPath(a, "subsystem_vendor")); err == nil {
		at.SubVendor = uint16(v)
	}
	if v, err := s.readHex(s.devPath(a, "subsystem_device")); err == nil {
		at.SubDevice = uint16(v)
	}
	if b, err := s.readAttr(s.devPath(a, "numa_node")); err == nil {
		if n, err := strconv.Atoi(b); err == nil {
			at.NUMANode = n
		}
	}
	if b, err := s.readAttr(s.devPath(a, "current_link_speed")); err == nil {
		at.LinkSpeedGTs = pcilink.ParseSpeed(b)
	}
	if b, err := s.readAttr(s.devPath(a, "current_link_width")); err == nil {
		at.LinkWidth, _ = strconv.Atoi(b)
	}
	s.readlinks.Add(1)
	if t, err := rawReadlink(s.devPath(a, "driver")); err == nil {
		at.Driver = filepath.Base(t)
	}
	s.readlinks.Add(1)
	if t, err := rawReadlink(s.devPath(a, "physfn")); err == nil {
		if pf, ok := parseAddr(filepath.Base(t)); ok {
			at.PhysFn = &pf
		}
	}
	return at, nil
}

// ACS implements Source: it reads the extended capability headers up to
// ACS, then ACS Control, and nothing else.
func (s *Sysfs) ACS(a Addr) (ACS, error) {
	cs, err := s.openConfig(a)
	if err != nil {
		return ACS{}, err
	}
	defer cs.close()
	a2, err := pcicfg.ReadACS(cs)
	return ACS(a2), err
}

// HostBridge implements Source: the first function of the root bus's
// directory, wherever Chain found it.
func (s *Sysfs) HostBridge(r RootBus) (HostBridge, error) {
	hb := HostBridge{Root: r, PortType: -1}
	s.readdirs.Add(1)
	names, err := readDirNames(s.rootDir(r))
	if err != nil {
		return hb, fmt.Errorf("host bridge %s: %w", r, err)
	}
	for _, name := range names {
		a, ok := parseAddr(name)
		if !ok || a.Domain != r.Domain || a.Bus != r.Bus {
			continue
		}
		if !hb.HasFirst || a.DevFn() < hb.First.DevFn() {
			hb.First, hb.HasFirst = a, true
		}
	}
	if !hb.HasFirst {
		return hb, nil
	}
	v, err := s.readHex(s.devPath(hb.First, "vendor"))
	if err != nil {
		return hb, err
	}
	d, err := s.readHex(s.devPath(hb.First, "device"))
	if err != nil {
		return hb, err
	}
	hb.Vendor, hb.Device = uint16(v), uint16(d)
	if hb.First.DevFn() == 0 {
		return hb, nil // the whitelist takes a 00.0 function as it is
	}
	cs, err := s.openConfig(hb.First)
	if err != nil {
		return hb, nil // port type unknown
	}
	defer cs.close()
	hb.PortType, hb.PortTypeKnown, err = pcicfg.PortType(cs)
	return hb, err
}

// CPU implements Source from devices/system/cpu/modalias.
func (s *Sysfs) CPU() (CPU, error) {
	b, err := s.readAttr(filepath.Join(s.root, "devices/system/cpu/modalias"))
	if err != nil {
		return CPU{}, fmt.Errorf("cpu: %w", err)
	}
	return parseCPUModalias(b)
}

// Functions implements Source.
func (s *Sysfs) Functions() ([]Addr, error) {
	s.readdirs.Add(1)
	names, err := readDirNames(filepath.Join(s.root, "bus/pci/devices"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoSysfs, err)
	}
	out := make([]Addr, 0, len(names))
	for _, name := range names {
		if a, ok := parseAddr(name); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// Drivers lists the PCI drivers of the machine (bus/pci/drivers), sorted.
func (s *Sysfs) Drivers() ([]string, error) {
	s.readdirs.Add(1)
	names, err := readDirNames(filepath.Join(s.root, "bus/pci/drivers"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// driverVersion reads a module's version from module/<name>/version; ""
// when unknown.
func (s *Sysfs) driverVersion(module string) string {
	v, err := s.readAttr(filepath.Join(s.root, "module", module, "version"))
	if err != nil {
		return ""
	}
	return v
}

// nvidiaTopoCheckOverride reads NVreg_GrdmaPciTopoCheckOverride from the
// nvidia driver's /proc/driver/nvidia/params ("GrdmaPciTopoCheckOverride:
// N"; the module parameter is not visible under /sys/module). It is read
// only for the real /sys: an emulated tree has no /proc of its own.
func (s *Sysfs) nvidiaTopoCheckOverride() int {
	if s.root != defaultSysfsRoot {
		return 0
	}
	data, err := readFileLimited("/proc/driver/nvidia/params", 64<<10)
	if err != nil {
		return 0
	}
	return parseNVIDIAOverride(string(data))
}

func parseNVIDIAOverride(params string) int {
	for _, line := range strings.Split(params, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "GrdmaPciTopoCheckOverride" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err == nil && n >= 0 && n <= 2 {
				return n
			}
		}
	}
	return 0
}

// hypervisorFeature is X86_FEATURE_HYPERVISOR as cpu modalias numbers it.
const hypervisorFeature = 0x009f

// parseCPUModalias parses devices/system/cpu/modalias:
// "cpu:type:x86,ven0002fam0019mod0001:feature:,0000,009F,...".
func parseCPUModalias(s string) (CPU, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "cpu:type:")
	if !ok {
		return CPU{}, fmt.Errorf("cpu modalias %q: no cpu:type: prefix", s)
	}
	typ, feats, _ := strings.Cut(rest, ":feature:")
	c := CPU{Known: true}
	arch, ids, isX86 := strings.Cut(typ, ",")
	c.Arch = arch
	if isX86 {
		if arch != "x86" {
			return CPU{}, fmt.Errorf("cpu modalias %q: unknown type", s)
		}
		var ven, fam, mod uint64
		n, err := fmt.Sscanf(ids, "ven%4xfam%4xmod%4x", &ven, &fam, &mod)
		if err != nil || n != 3 {
			return CPU{}, fmt.Errorf("cpu modalias %q: malformed vendor/family/model", s)
		}
		c.Vendor, c.Family, c.Model = int(ven), int(fam), int(mod)
	}
	for _, f := range strings.Split(feats, ",") {
		if f == "" {
			continue
		}
		if n, err := strconv.ParseUint(f, 16, 16); err == nil && n == hypervisorFeature && c.Arch == "x86" {
			c.Hypervisor = true
		}
	}
	return c, nil
}

// readAttr reads a small attribute file and trims the trailing newline.
func (s *Sysfs) readAttr(path string) (string, error) {
	s.attrReads.Add(1)
	fd, err := openAttr(path)
	if err != nil {
		return "", err
	}
	defer rawClose(fd)
	var buf [128]byte
	n, err := rawRead(fd, buf[:])
	if err != nil {
		return "", &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return strings.TrimRight(string(buf[:max(n, 0)]), "\n"), nil
}

func (s *Sysfs) readHex(path string) (uint32, error) {
	b, err := s.readAttr(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a hex number", path, b)
	}
	return uint32(v), nil
}

// sysfsConfig reads a config file with one pread per dword.
type sysfsConfig struct {
	s  *Sysfs
	fd int
	// conventional: 1 when the file ends at 256 bytes for a reader who may
	// read past 64 (a conventional PCI function, where extended config
	// space does not exist), -1 when not, 0 until a short read asks.
	conventional int8
}

func (s *Sysfs) openConfig(a Addr) (*sysfsConfig, error) {
	fd, err := openAttr(s.devPath(a, "config"))
	if err != nil {
		return nil, err
	}
	s.configOpens.Add(1)
	return &sysfsConfig{s: s, fd: fd}, nil
}

func (c *sysfsConfig) close() { rawClose(c.fd) }

func (c *sysfsConfig) pread(off int) (uint32, int, error) {
	var b [4]byte
	n, err := rawPread(c.fd, b[:], int64(off))
	return binary.LittleEndian.Uint32(b[:]), n, err
}

// ReadDword implements pcicfg.Space. A short read past what the process may
// see is "unreadable", except in a conventional 256-byte space, where
// extended config space simply does not exist. Which of the two a short
// read past 256 bytes is, one read of the first dword past the 64 bytes
// any reader sees tells (the kernel serves those only to CAP_SYS_ADMIN),
// made once per file and only then, instead of an fstat of every file.
func (c *sysfsConfig) ReadDword(off int) (uint32, bool, error) {
	v, n, err := c.pread(off)
	if err != nil {
		if err == syscall.EPERM || err == syscall.EACCES || err == syscall.EIO {
			return 0, false, nil
		}
		return 0, false, err
	}
	if n == 4 {
		c.s.configDwords.Add(1)
		return v, true, nil
	}
	if off < pcicfg.SpaceSize {
		return 0, false, nil
	}
	if c.conventional == 0 {
		c.conventional = -1
		if _, n, err := c.pread(pcicfg.HeaderSize); err == nil && n == 4 {
			c.conventional = 1
		}
	}
	return 0, c.conventional > 0, nil
}

// RDMADev is an RDMA device and its PCI function.
type RDMADev struct {
	Name string // "rdmap79s0"
	Addr Addr
}

// RDMADevices lists the RDMA devices of class/infiniband that are PCI
// functions in the order of their PCI functions' addresses (the one order
// of every listing efap2p prints, the order efap2p topo numbers its NICs
// in); the devices of one function in the natural order of their names
// (mlx5_2 before mlx5_10).
func (s *Sysfs) RDMADevices() ([]RDMADev, error) {
	s.readdirs.Add(1)
	names, err := readDirNames(filepath.Join(s.root, "class/infiniband"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, natsort.Compare)
	var out []RDMADev
	for _, n := range names {
		if a, err := s.RDMADevice(n); err == nil {
			out = append(out, RDMADev{n, a})
		}
	}
	slices.SortStableFunc(out, func(a, b RDMADev) int {
		switch {
		case a.Addr.Less(b.Addr):
			return -1
		case b.Addr.Less(a.Addr):
			return 1
		}
		return 0
	})
	return out, nil
}

// RDMAName returns the name of the RDMA device of PCI function a (the
// first in natural order where it has several), or "" where it has none.
func (s *Sysfs) RDMAName(a Addr) string {
	s.readdirs.Add(1)
	names, err := readDirNames(s.devPath(a, "infiniband"))
	if err != nil || len(names) == 0 {
		return ""
	}
	return slices.MinFunc(names, natsort.Compare)
}

// ErrNotPCI is wrapped when an RDMA device has no PCI function (a software
// device such as rxe or siw).
var ErrNotPCI = errors.New("not a PCI device")

// RDMADevice returns the PCI function of an RDMA device, by its verbs name
// ("rdmap79s0"): the target of class/infiniband/<name>/device.
func (s *Sysfs) RDMADevice(ibdev string) (Addr, error) {
	if ibdev == "" || strings.ContainsAny(ibdev, "/\x00") || ibdev == "." || ibdev == ".." {
		return Addr{}, fmt.Errorf("RDMA device name %q", ibdev)
	}
	link := filepath.Join(s.root, "class/infiniband", ibdev, "device")
	s.readlinks.Add(1)
	t, err := rawReadlink(link)
	if err == nil && !strings.HasSuffix(t, "..") {
		// The kernel's link names the function last: "../../../0000:4f:00.0".
		if a, ok := parseAddr(filepath.Base(t)); ok {
			return a, nil
		}
	}
	if err == nil {
		// Any other shape: resolve it the slow way.
		t, err = filepath.EvalSymlinks(link)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, err2 := os.Stat(filepath.Join(s.root, "class/infiniband", ibdev)); err2 != nil {
				return Addr{}, fmt.Errorf("RDMA device %s: %w", ibdev, fs.ErrNotExist)
			}
			return Addr{}, fmt.Errorf("RDMA device %s: %w", ibdev, ErrNotPCI)
		}
		return Addr{}, fmt.Errorf("RDMA device %s: %w", ibdev, err)
	}
	a, ok := parseAddr(filepath.Base(t))
	if !ok {
		return Addr{}, fmt.Errorf("RDMA device %s: %w (its device is %s)", ibdev, ErrNotPCI, filepath.Base(t))
	}
	return a, nil
}
