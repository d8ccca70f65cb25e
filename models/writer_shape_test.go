// SPDX-License-Identifier: MIT

package models_test

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/internal/sysfsdump"
	"github.com/efap2p/efap2p/kerneltruth"
	"github.com/efap2p/efap2p/models"
)

// The sysfs dumps of booted kernels (kerneltruth/fixtures) are the
// reference for the shape of the tree the writer makes: for every kind of
// function a model has and a booted kernel showed, the files and links the
// writer puts in the function's directory exist there in the real one too,
// with the same modes and the content formats below, checked against the
// real dumps as well; the bus/pci/devices and bus/pci/drivers links and
// the CPU modalias resolve and read alike.

// attrFormats are the content formats of the attributes the writer writes,
// as drivers/pci/pci-sysfs.c prints them.
var attrFormats = map[string]*regexp.Regexp{
	"vendor":             regexp.MustCompile(`^0x[0-9a-f]{4}\n$`),
	"device":             regexp.MustCompile(`^0x[0-9a-f]{4}\n$`),
	"subsystem_vendor":   regexp.MustCompile(`^0x[0-9a-f]{4}\n$`),
	"subsystem_device":   regexp.MustCompile(`^0x[0-9a-f]{4}\n$`),
	"class":              regexp.MustCompile(`^0x[0-9a-f]{6}\n$`),
	"revision":           regexp.MustCompile(`^0x[0-9a-f]{2}\n$`),
	"numa_node":          regexp.MustCompile(`^-?[0-9]+\n$`),
	"modalias":           regexp.MustCompile(`^pci:v[0-9A-F]{8}d[0-9A-F]{8}sv[0-9A-F]{8}sd[0-9A-F]{8}bc[0-9A-F]{2}sc[0-9A-F]{2}i[0-9A-F]{2}\n$`),
	"current_link_speed": regexp.MustCompile(`^([0-9]+\.[0-9] GT/s PCIe|Unknown)\n$`),
	"max_link_speed":     regexp.MustCompile(`^([0-9]+\.[0-9] GT/s PCIe|Unknown)\n$`),
	"current_link_width": regexp.MustCompile(`^[0-9]+\n$`),
	"max_link_width":     regexp.MustCompile(`^[0-9]+\n$`),
	"irq":                regexp.MustCompile(`^[0-9]+\n$`),
	// one line per resource: 7 (11 for a bridge) without PCI_IOV, as the
	// booted test kernels; 13 (17) with it, as distributions build theirs
	"resource":      regexp.MustCompile(`^(0x[0-9a-f]{16} 0x[0-9a-f]{16} 0x[0-9a-f]{16}\n){7,17}$`),
	"local_cpus":    regexp.MustCompile(`^[0-9a-f]+(,[0-9a-f]{8})*\n$`),
	"local_cpulist": regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\n$`),
}

var cpuModalias = regexp.MustCompile(`^cpu:type:x86,ven[0-9A-F]{4}fam[0-9A-F]{4}mod[0-9A-F]{4}:feature:(,[0-9A-F]{4})*\n$`)

// notInQEMU are entries the writer makes that no booted QEMU guest can
// show: SR-IOV (no QEMU device has virtual functions), the out-of-tree EFA
// driver's p2p attribute and the RDMA class directories (no EFA device).
var notInQEMU = map[string]string{
	"sriov_numvfs": "SR-IOV", "sriov_totalvfs": "SR-IOV", "physfn": "SR-IOV", "virtfn": "SR-IOV",
	"p2p": "the out-of-tree EFA driver", "infiniband": "an RDMA device", "infiniband_verbs": "an RDMA device",
}

// realFunc is one function directory of a booted kernel's dump.
type realFunc struct {
	dump    string
	dir     string
	entries map[string]*sysfsdump.Entry // by name, the directory's own
}

// kindOf classifies a function from its config space as the models name
// kinds: the PCIe capability's port type, or no PCIe capability at all (a
// host bridge when its class is 0600, else a conventional function, which
// no model has).
func kindOf(cfg []byte) string {
	if len(cfg) < 0x40 {
		return ""
	}
	class := uint32(cfg[0x0b])<<8 | uint32(cfg[0x0a])
	if cfg[0x06]&0x10 != 0 {
		for pos, n := int(cfg[0x34]&0xfc), 0; pos >= 0x40 && pos+4 <= len(cfg) && n < 48; n++ {
			if cfg[pos] == 0x10 {
				switch cfg[pos+2] >> 4 {
				case 0:
					return models.KindEndpoint
				case 4:
					return models.KindRootPort
				case 5:
					return models.KindSwitchUpstream
				case 6:
					return models.KindSwitchDownstream
				case 7:
					return models.KindPCIBridge
				case 9:
					return models.KindIntegrated
				}
				return "other"
			}
			pos = int(cfg[pos+1] & 0xfc)
		}
	}
	if class == 0x0600 {
		return models.KindHostBridge
	}
	return "conventional"
}

// functionDirs lists a dump's function directories (by their
// bus/pci/devices links) and their direct entries.
func functionDirs(name string, t sysfsdump.Tree) map[string]*realFunc {
	out := map[string]*realFunc{}
	for _, p := range t.Paths() {
		e := t[p]
		if e.Kind != sysfsdump.Symlink || path.Dir(p) != "bus/pci/devices" {
			continue
		}
		dir := path.Join("bus/pci/devices", e.Target)
		out[dir] = &realFunc{dump: name, dir: dir, entries: map[string]*sysfsdump.Entry{}}
	}
	for _, p := range t.Paths() {
		if f := out[path.Dir(p)]; f != nil {
			f.entries[path.Base(p)] = t[p]
		}
	}
	return out
}

func readDump(t *testing.T, root string) sysfsdump.Tree {
	t.Helper()
	var b bytes.Buffer
	if err := sysfsdump.Write(root, &b); err != nil {
		t.Fatal(err)
	}
	tr, err := sysfsdump.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// linkResolves reports the path a link of the tree resolves to, lexically.
func linkResolves(linkPath string, e *sysfsdump.Entry) string {
	return path.Join(path.Dir(linkPath), e.Target)
}

func TestWriterShapeMatchesBootedKernels(t *testing.T) {
	names, err := filepath.Glob("../kerneltruth/fixtures/*.kt")
	if err != nil || len(names) == 0 {
		t.Fatalf("no kernel-truth fixtures: %v", err)
	}
	// The real functions by kind, every booted kernel's.
	real := map[string][]*realFunc{}
	var realCPU []string
	for _, name := range names {
		fx, err := kerneltruth.ReadFixtureFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for dir, f := range functionDirs(filepath.Base(name), fx.Sysfs) {
			cfg := fx.Sysfs[dir+"/config"]
			if cfg == nil {
				t.Fatalf("%s: %s has no config", name, dir)
			}
			k := kindOf(cfg.Content)
			real[k] = append(real[k], f)
			// Links into the tree resolve as the oracle resolves them.
			if d := f.entries["driver"]; d != nil && !strings.HasPrefix(linkResolves(dir+"/driver", d), "bus/pci/drivers/") {
				t.Errorf("%s: %s/driver -> %s is not a bus/pci/drivers entry", name, dir, d.Target)
			}
		}
		if e := fx.Sysfs["devices/system/cpu/modalias"]; e != nil {
			realCPU = append(realCPU, string(e.Content))
		}
	}
	var allReal []*realFunc
	for _, fs := range real {
		allReal = append(allReal, fs...)
	}
	if len(real[models.KindRootPort]) == 0 || len(real[models.KindEndpoint]) == 0 || len(real[models.KindSwitchDownstream]) == 0 {
		t.Fatalf("the fixtures lack root ports, endpoints or switch ports: %v", kinds(real))
	}
	// Every format is the real kernel's: each pattern matches what the
	// booted kernels wrote, wherever they wrote that attribute.
	for attr, re := range attrFormats {
		seen := 0
		for _, fs := range real {
			for _, f := range fs {
				if e := f.entries[attr]; e != nil && e.Kind == sysfsdump.File {
					seen++
					if !re.Match(e.Content) {
						t.Errorf("%s: %s/%s %q does not match the format %s", f.dump, f.dir, attr, e.Content, re)
					}
				}
			}
		}
		if seen == 0 {
			t.Errorf("no booted kernel showed %s: its format is not checked against one", attr)
		}
	}
	for _, c := range realCPU {
		if !cpuModalias.MatchString(c) {
			t.Errorf("a booted kernel's cpu modalias %q does not match %s", c, cpuModalias)
		}
	}

	for _, model := range models.BuiltinNames() {
		t.Run(model, func(t *testing.T) {
			m, err := models.Builtin(model)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.Write(dir, models.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			tr := readDump(t, dir)
			if m.CPU.Arch == "x86" {
				if c := tr["devices/system/cpu/modalias"]; c == nil || !cpuModalias.Match(c.Content) {
					t.Errorf("cpu modalias %q is not shaped like a booted kernel's", c.Content)
				}
			}
			kindOfDir := map[string]string{}
			for _, f := range m.Functions() {
				link := tr["bus/pci/devices/"+f.Addr.String()]
				if link == nil || link.Kind != sysfsdump.Symlink {
					t.Errorf("%s: no bus/pci/devices link", f.Addr)
					continue
				}
				kindOfDir[linkResolves("bus/pci/devices/"+f.Addr.String(), link)] = f.Kind
			}
			checked := 0
			for fdir, f := range functionDirs(model, tr) {
				refs := real[kindOfDir[fdir]]
				if len(refs) == 0 {
					continue // a kind no booted kernel showed
				}
				checked++
				checkFunction(t, fdir, f, refs, allReal)
			}
			if checked == 0 {
				t.Skip("no function of a kind a booted kernel showed")
			}
		})
	}
}

// checkFunction holds one written function directory to the real ones of
// its kind.
func checkFunction(t *testing.T, dir string, f *realFunc, refs, allRefs []*realFunc) {
	t.Helper()
	for name, e := range f.entries {
		if _, ok := notInQEMU[strings.TrimRight(name, "0123456789")]; ok {
			continue
		}
		if e.Kind == sysfsdump.Dir {
			continue // a child function: its own directory is checked
		}
		var same []*sysfsdump.Entry
		pool := refs
		if name == "driver" {
			// QEMU guests bind drivers to ports only (pcieport); a driver
			// link has one shape whatever the function.
			pool = allRefs
		}
		for _, r := range pool {
			if re := r.entries[name]; re != nil {
				same = append(same, re)
			}
		}
		if len(same) == 0 {
			t.Errorf("%s/%s: no booted kernel has %s in a function of this kind (it has %s)", dir, name, name, names(refs[0].entries))
			continue
		}
		ref := same[0]
		if e.Kind == sysfsdump.Symlink {
			if ref.Kind != sysfsdump.Symlink {
				t.Errorf("%s/%s: a link, a booted kernel's is a %c", dir, name, ref.Kind)
			}
			if name == "driver" && !strings.HasPrefix(linkResolves(dir+"/driver", e), "bus/pci/drivers/") {
				t.Errorf("%s/driver -> %s does not resolve into bus/pci/drivers/", dir, e.Target)
			}
			continue
		}
		// A file: the same mode as the kernel's (content is read only
		// where the kernel makes it readable), the format of the kernel's.
		modes := map[string]bool{}
		for _, s := range same {
			modes[fmt.Sprintf("%03o", s.Mode)] = true
		}
		if !modes[fmt.Sprintf("%03o", e.Mode)] {
			t.Errorf("%s/%s: mode %03o, a booted kernel's is %v", dir, name, e.Mode, keys(modes))
		}
		switch {
		case name == "config":
			sizes := map[int64]bool{}
			for _, s := range same {
				sizes[s.Size] = true
			}
			if e.Kind != sysfsdump.Binary || !sizes[e.Size] {
				t.Errorf("%s/config: %d bytes, a booted kernel's of this kind has %v", dir, e.Size, sizes)
			}
		case attrFormats[name] != nil:
			if !attrFormats[name].Match(e.Content) {
				t.Errorf("%s/%s: %q is not in the kernel's format %s", dir, name, e.Content, attrFormats[name])
			}
		default:
			t.Errorf("%s/%s: the writer writes it, and this test has no format for it", dir, name)
		}
	}
}

func kinds(m map[string][]*realFunc) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s:%d", k, len(v)))
	}
	sort.Strings(out)
	return out
}

func names(m map[string]*sysfsdump.Entry) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
