// SPDX-License-Identifier: MIT

package sysfsdump

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// buildTree lays out a small sysfs tree by hand, shaped as a kernel
// shapes it: a root bus, a root port with an endpoint below, the
// bus/pci/devices links, a driver, the CPU modalias and files that must
// not be read.
func buildTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := func(p, content string, mode os.FileMode) {
		mk(filepath.Dir(p))
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		mk(filepath.Dir(p))
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	rp := "devices/pci0000:00/0000:00:03.0"
	ep := rp + "/0000:01:00.0"
	file(rp+"/vendor", "0x1b36\n", 0o444)
	file(rp+"/class", "0x060400\n", 0o444)
	cfg := make([]byte, 4096)
	cfg[0], cfg[1] = 0x36, 0x1b
	cfg[0x14e] = 0x1d // ACS Control at 0x148+6
	file(rp+"/config", string(cfg), 0o644)
	file(rp+"/power/control", "auto\n", 0o644)
	file(rp+"/remove", "", 0o200)
	file(ep+"/vendor", "0x1b36\n", 0o444)
	file(ep+"/resource0", "must not be read", 0o600)
	file(ep+"/config", string(make([]byte, 256)), 0o644)
	link(rp+"/driver", "../../../bus/pci/drivers/pcieport")
	link("bus/pci/devices/0000:00:03.0", "../../../"+rp)
	link("bus/pci/devices/0000:01:00.0", "../../../"+ep)
	link("bus/pci/drivers/pcieport/0000:00:03.0", "../../../../"+rp)
	file("bus/pci/drivers/pcieport/bind", "", 0o200)
	file("devices/system/cpu/modalias", "cpu:type:x86,ven0002fam0017mod0001:feature:,009F\n", 0o444)
	file("devices/system/cpu/online", "0\n", 0o444) // not PCI: left out
	return root
}

func TestWriteReadExtract(t *testing.T) {
	root := buildTree(t)
	var b bytes.Buffer
	if err := Write(root, &b); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	rp := "devices/pci0000:00/0000:00:03.0"
	want := map[string]Kind{
		"bus/pci/devices/0000:00:03.0":          Symlink,
		rp + "/vendor":                          File,
		rp + "/config":                          Binary,
		rp + "/power":                           Dir,
		rp + "/power/control":                   Unread, // below a function: listed, not read
		rp + "/remove":                          Unread, // write-only
		rp + "/0000:01:00.0/resource0":          Unread, // never read
		rp + "/0000:01:00.0/vendor":             File,
		"bus/pci/drivers/pcieport/bind":         Unread,
		"bus/pci/drivers/pcieport/0000:00:03.0": Symlink,
		"devices/system/cpu/modalias":           File,
	}
	for p, k := range want {
		e := tr[p]
		if e == nil {
			t.Errorf("%s: not in the dump", p)
			continue
		}
		if e.Kind != k {
			t.Errorf("%s: kind %c, want %c", p, e.Kind, k)
		}
	}
	if _, ok := tr["devices/system/cpu/online"]; ok {
		t.Error("devices/system/cpu/online is dumped; only the modalias is wanted")
	}
	if e := tr[rp+"/config"]; e == nil || e.Size != 4096 || len(e.Content) != 0x150 {
		t.Errorf("config: %+v, want size 4096 and the bytes up to the ACS dword", e)
	}
	if e := tr[rp+"/0000:01:00.0/config"]; e == nil || e.Size != 256 || len(e.Content) != 0 {
		t.Errorf("an all-zero config: %+v, want size 256 and no bytes", e)
	}
	// Every path is written once: files by their name in the directory
	// line above them.
	if strings.Count(b.String(), rp+"/vendor") != 0 || !strings.Contains(b.String(), "f ./vendor 444 \"0x1b36\\n\"") {
		t.Errorf("files are not written relative to their directory:\n%s", b.String())
	}

	out := t.TempDir()
	if err := tr.Extract(out); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(out, "bus/pci/devices/0000:00:03.0/config"))
	if err != nil || len(cfg) != 4096 || cfg[0x14e] != 0x1d {
		t.Fatalf("extracted config through its link: %d bytes, %v", len(cfg), err)
	}
	// The extracted tree dumps to the same text, modes aside (an
	// extracted file is readable by its owner).
	var b2 bytes.Buffer
	if err := Write(out, &b2); err != nil {
		t.Fatal(err)
	}
	tr2, err := Read(&b2)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range tr {
		e2 := tr2[p]
		if e.Kind == Unread {
			continue // an extracted file has no content to withhold
		}
		if e2 == nil || e2.Kind != e.Kind || !bytes.Equal(e2.Content, e.Content) || e2.Target != e.Target || e2.Size != e.Size {
			t.Errorf("%s: %+v after extraction, want %+v", p, e2, e)
		}
	}
}

func TestReadRejects(t *testing.T) {
	for _, tc := range []struct{ name, dump, want string }{
		{"no header", "d bus 755\n", "line 1"},
		{"empty", "", "empty dump"},
		{"unknown kind", Header + "\nq bus 755\n", "unknown entry kind"},
		{"absolute path", Header + "\nd /bus 755\n", "clean relative path"},
		{"dot-dot path", Header + "\nd bus/../.. 755\n", "clean relative path"},
		{"bad mode", Header + "\nd bus 999\n", "octal"},
		{"file without dir", Header + "\nf bus/x 444 \"1\"\n", "not in the dump"},
		{"relative without dir", Header + "\nf ./x 444 \"1\"\n", "needs a directory line"},
		{"relative dir", Header + "\nd bus 755\nd ./x 755\n", "needs a directory line"},
		{"unquoted content", Header + "\nd bus 755\nf ./x 444 1\n", "quoted"},
		{"binary too short", Header + "\nd bus 755\nx ./config 644 2 aabbcc\n", "at most 2"},
		{"binary too large", Header + "\nd bus 755\nx ./config 644 99999 00\n", "size"},
		{"absolute link", Header + "\nd bus 755\nl ./x /etc/passwd\n", "relative link"},
		{"twice", Header + "\nd bus 755\nd bus 755\n", "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.dump))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestExtractRefusesEscapingLink(t *testing.T) {
	tr, err := Read(strings.NewReader(Header + "\nd bus 755\nl ./up ../../outside\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Extract(t.TempDir()); err == nil || !strings.Contains(err.Error(), "leaves the tree") {
		t.Fatalf("Extract = %v, want a refusal of a link out of the tree", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(Header + "\nd bus 755\nf ./x 444 \"0x1\\n\"\nl ./y ../x\nx ./config 644 4 00112233\nu ./r 200\n")
	f.Add(Header + "\nd a 755\nd a/b 755\nf ./c 444 \"\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := Read(strings.NewReader(s))
		if err != nil {
			return
		}
		// What reads must write back and read the same.
		var b bytes.Buffer
		if err := WriteTree(tr, &b); err != nil {
			t.Fatalf("a tree that reads does not write: %v", err)
		}
		tr2, err := Read(&b)
		if err != nil {
			t.Fatalf("a written tree does not read: %v\n%s", err, b.String())
		}
		if len(tr2) != len(tr) {
			t.Fatalf("%d entries after a round trip, want %d", len(tr2), len(tr))
		}
	})
}
