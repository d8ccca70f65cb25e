// SPDX-License-Identifier: MIT

package p2p_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// TestBootTopologyPlace: the boot-time file's place is where the defaults
// look for it first: this machine's, below $EFAP2P_TOPOLOGY_ROOT, or below
// another machine's tree; $EFAP2P_TOPOLOGY does not move it.
func TestBootTopologyPlace(t *testing.T) {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := m.Write(tree, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := p2p.OpenSysfs(tree)
	if err != nil {
		t.Fatal(err)
	}
	topo := p2p.NewTopology(src)
	t.Setenv("EFAP2P_TOPOLOGY", "")
	t.Setenv("EFAP2P_TOPOLOGY_ROOT", "")
	for _, tc := range []struct {
		name, sysfsPath, root, want string
	}{
		{"another machine's tree", "", "", tree + p2p.BootTopologyFile},
		{"this machine", tree, "", p2p.BootTopologyFile},
		{"this machine, below EFAP2P_TOPOLOGY_ROOT", tree, "/x/", "/x" + p2p.BootTopologyFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SYSFS_PATH", tc.sysfsPath)
			t.Setenv("EFAP2P_TOPOLOGY_ROOT", tc.root)
			t.Setenv("EFAP2P_TOPOLOGY", "")
			if got := p2p.BootTopologyPlace(topo); got != tc.want {
				t.Errorf("BootTopologyPlace = %q, want %q", got, tc.want)
			}
			if first := (p2p.Defaults{}).Options(topo).TopologyFiles[0]; first != tc.want {
				t.Errorf("the defaults look first at %q, want %q", first, tc.want)
			}
			t.Setenv("EFAP2P_TOPOLOGY", "/elsewhere.json")
			if got := p2p.BootTopologyPlace(topo); got != tc.want {
				t.Errorf("with EFAP2P_TOPOLOGY: %q, want %q", got, tc.want)
			}
		})
	}
	if got := p2p.BootTopologyPlace(p2p.NewTopology(m.Source())); got != "" {
		t.Errorf("a model in memory: %q, want none", got)
	}
}

// TestReadTrustedFile: a file beside the topology files is read under
// their rules, up to a limit.
func TestReadTrustedFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func() error
		limit int
		want  string
		is    error
		says  string
	}{
		{"whole", func() error { return nil }, 100, "0123456789", nil, ""},
		{"cut at the limit", func() error { return nil }, 4, "0123", nil, ""},
		{"group-writable", func() error { return os.Chmod(file, 0o664) }, 100, "", p2p.ErrUntrusted, "writable by its group (mode 0664)"},
		{"another owner", func() error { return os.Chown(file, 4242, 0) }, 100, "", p2p.ErrUntrusted, "owned by uid 4242"},
		{"missing", func() error { return os.Remove(file) }, 100, "", fs.ErrNotExist, ""},
		{"a FIFO", func() error { os.Remove(file); return syscall.Mkfifo(file, 0o644) }, 100, "", nil, "not a regular file (a FIFO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(file)
			if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.setup(); err != nil {
				t.Skip(err) // chown needs root
			}
			data, err := p2p.ReadTrustedFile(file, tc.limit)
			switch {
			case tc.is == nil && tc.says == "":
				if err != nil || string(data) != tc.want {
					t.Errorf("%q, %v; want %q", data, err, tc.want)
				}
			case err == nil:
				t.Errorf("read %q; want an error", data)
			case tc.is != nil && !errors.Is(err, tc.is), !strings.Contains(err.Error(), tc.says):
				t.Errorf("error %v; want %v saying %q", err, tc.is, tc.says)
			}
		})
	}
}
