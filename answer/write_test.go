// SPDX-License-Identifier: MIT

package answer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The folders export creates are 0755 and its files 0644 whatever the
// umask (docs/topology-file.md): under umask 027 a folder made 0750 hid
// the operator's file from every unprivileged reader. A folder that was
// there keeps its mode.
func TestWriteModesUnderUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	_, file := exportTree(t, "p5.48xlarge")
	base := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	kept := filepath.Join(base, "kept")
	if err := os.Mkdir(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(kept, "a", "b", "verdicts.xml")
	if err := WriteFileAtomic(other, []byte("<x/>\n")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{
		{filepath.Join(base, "etc"), os.ModeDir | 0o755},
		{filepath.Dir(file), os.ModeDir | 0o755},
		{file, 0o644},
		{file + IndexSuffix, 0o644},
		{kept, os.ModeDir | 0o700},
		{filepath.Join(kept, "a"), os.ModeDir | 0o755},
		{filepath.Join(kept, "a", "b"), os.ModeDir | 0o755},
		{other, 0o644},
	} {
		st, err := os.Lstat(c.path)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := st.Mode() & (os.ModeType | os.ModePerm); got != c.want {
			t.Errorf("%s under umask 027: mode %v, want %v", c.path, got, c.want)
		}
	}
}
