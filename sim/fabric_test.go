// SPDX-License-Identifier: MIT

package sim

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/efap2p/efap2p/models"

	"golang.org/x/sys/unix"
)

// A host's tree and efasim.conf carry its fabric and its own GIDs.
func TestWriteFabricHost(t *testing.T) {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteTree(m, dir, TreeOptions{Fabric: "/shared/fabric", WriteOptions: models.WriteOptions{Host: 7}}); err != nil {
		t.Fatal(err)
	}
	gid, err := os.ReadFile(filepath.Join(dir, "class/infiniband/rdmap79s0/ports/1/gids/0"))
	if err != nil {
		t.Fatal(err)
	}
	// 4f:00.0 on domain 0: the model's default GID, host 7 in group five
	if want := "fe80:0000:0000:0000:0007:0000:4f00:0001\n"; string(gid) != want {
		t.Errorf("sysfs GID %q, want %q", gid, want)
	}
	conf, err := os.ReadFile(filepath.Join(dir, EmulatorConfigName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nfabric /shared/fabric\n", " gid=fe80:0000:0000:0000:0007:0000:4f00:0001 ",
		" node_guid=0007:0000:0000:4f00 "} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("efasim.conf lacks %q", want)
		}
	}
	// alone (no fabric): the model's addresses, no fabric line
	dir = t.TempDir()
	if err := WriteTree(m, dir, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	conf, _ = os.ReadFile(filepath.Join(dir, EmulatorConfigName))
	if strings.Contains(string(conf), "\nfabric ") || !strings.Contains(string(conf), " gid=fe80:0000:0000:0000:0000:0000:4f00:0001 ") {
		t.Errorf("a lone host's efasim.conf:\n%s", conf)
	}
}

func TestJoinFabric(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fabric")
	a, err := JoinFabric(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := JoinFabric(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != 1 || b.ID != 2 {
		t.Errorf("host numbers %d and %d, want 1 and 2", a.ID, b.ID)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := JoinFabric(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != 1 {
		t.Errorf("after host 1 left, the next host is %d, want 1", c.ID)
	}
	b.Close()
	c.Close()
	if _, err := JoinFabric(filepath.Join(dir, "host-1.lock", "x")); err == nil {
		t.Error("a fabric under a file: want an error")
	}
}

// TestHelperLock is not a test: run as a child, it holds a POSIX lock on
// byte $LOCK_OFF of $LOCK_FILE until killed.
func TestHelperLock(t *testing.T) {
	path := os.Getenv("EFAP2P_HELPER_LOCK_FILE")
	if path == "" {
		t.Skip("helper process")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Exit(2)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: lockBase + 5, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// CleanFabric removes the files of QPs and engines whose owners are gone
// and keeps those of live ones and the device files.
func TestCleanFabric(t *testing.T) {
	dir := t.TempDir()
	gid := "fe8000000000000000010000c9000001"
	for _, n := range []string{"dev-" + gid, "qp-" + gid + "-5", "qp-" + gid + "-6", "eng-0123456789abcdef",
		"host-1.lock", "qp-" + gid + "-7.123.0123456789abcdef.tmp", "qp-" + gid + "-5.124.0123456789abcdef.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 8192), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// QP 6's file says "live" (its owner died without destroying it), and
	// a peer still maps it: after the cleanup it reads "dead"
	hdr := make([]byte, 20)
	binary.LittleEndian.PutUint32(hdr[0:], qpMagic)
	binary.LittleEndian.PutUint32(hdr[qpLiveOffset:], 1)
	if err := os.WriteFile(filepath.Join(dir, "qp-"+gid+"-6"), append(hdr, make([]byte, 8192)...), 0o600); err != nil {
		t.Fatal(err)
	}
	peer, err := os.Open(filepath.Join(dir, "qp-"+gid+"-6"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	// another process holds QPN 5 of the device
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLock$")
	cmd.Env = append(os.Environ(), "EFAP2P_HELPER_LOCK_FILE="+filepath.Join(dir, "dev-"+gid))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("helper: %q %v", buf, err)
	}
	if err := CleanFabric(dir); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]bool{
		"dev-" + gid:           true,  // device files stay
		"qp-" + gid + "-5":     true,  // held by the helper
		"qp-" + gid + "-6":     false, // nobody holds QPN 6
		"eng-0123456789abcdef": false, // nobody holds the engine's lock
		"host-1.lock":          true,
		// temporary names: QP 5's is being created by the lock's holder,
		// QP 7's creator died before renaming it
		"qp-" + gid + "-5.124.0123456789abcdef.tmp": true,
		"qp-" + gid + "-7.123.0123456789abcdef.tmp": false,
	} {
		_, err := os.Stat(filepath.Join(dir, n))
		if got := err == nil; got != want {
			t.Errorf("%s: present %v, want %v", n, got, want)
		}
	}
	live := make([]byte, 4)
	if _, err := peer.ReadAt(live, qpLiveOffset); err != nil || binary.LittleEndian.Uint32(live) != 0 {
		t.Errorf("the removed QP file's live word reads %v (%v), want 0", live, err)
	}
	if err := CleanFabric(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing fabric: %v", err)
	}
}

// A fabric directory another user could write is refused, as ssh refuses
// such a key directory: whoever writes it can plant the files the devices
// open and inject packets.
func TestCheckFabricDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := mk("private", 0o700)
	shared := mk("shared", 0o755)
	sticky := mk("sticky", 0o777|os.ModeSticky)
	under := mk("sticky/mine", 0o700)
	open := mk("open", 0o777)
	below := mk("open/mine", 0o700)
	group := mk("group", 0o770)
	link := filepath.Join(base, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, why string
	}{
		{private, ""},
		{shared, ""}, // others may read, not write
		{under, ""},  // below a sticky directory (/tmp)
		{link, ""},   // the directory it names is checked
		{sticky, "writable by others (mode 1777)"},
		{open, "writable by others (mode 0777)"},
		{below, "open is writable by others"},
		{group, "writable by its group (mode 0770)"},
		{filepath.Join(base, "missing"), "no such file"},
	} {
		err := CheckFabricDir(c.dir)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s: %v", c.dir, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s: error %v, want one saying %q", c.dir, err, c.why)
		}
	}
	if _, err := JoinFabric(open); !errors.Is(err, ErrUnsafeFabric) {
		t.Errorf("JoinFabric of a directory anyone can write: %v, want ErrUnsafeFabric", err)
	}
	if os.Geteuid() == 0 {
		// root uses no directory another user owns, however private
		theirs := mk("theirs", 0o700)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckFabricDir(theirs); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("root and a directory of uid 65534: %v", err)
		}
	}
}

// A tree whose host is gone (its lock free) is removed; a running host's,
// one being written and another user's are left alone.
func TestCleanTrees(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, whole bool) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if whole {
			if err := os.WriteFile(filepath.Join(d, EmulatorConfigName), []byte("efasim 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	dead := mk(treePrefix+"dead", true)
	running := mk(treePrefix+"running", true)
	young := mk(treePrefix+"young", false)
	old := mk(treePrefix+"old", true) // an older efap2p's: no lock file
	other := mk("not-a-tree", true)
	for _, d := range []string{dead, young} {
		l, err := lockTree(d, true)
		if err != nil {
			t.Fatal(err)
		}
		l.Close() // the host is gone
	}
	lock, err := lockTree(running, true)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	gone := CleanTrees(base)
	if len(gone) != 1 || gone[0] != dead {
		t.Errorf("removed %v, want only %s", gone, dead)
	}
	for d, want := range map[string]bool{dead: false, running: true, young: true, old: true, other: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(d), got, want)
		}
	}
	if os.Geteuid() == 0 {
		theirs := mk(treePrefix+"theirs", true)
		if l, err := lockTree(theirs, true); err == nil {
			l.Close()
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		CleanTrees(base)
		if _, err := os.Stat(theirs); err != nil {
			t.Errorf("another user's tree was removed")
		}
	}
}

// A fabric named through a symlink that another user owns, in a sticky
// folder (/tmp) where they may replace it: once joined, the host's files
// and its cleanup stay in the directory that was checked. The cleanup ran
// as root once opened what the swapped path led to (another user's
// directory), following the symlinks planted there, and removed names in
// it.
func TestFabricPathSwapped(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(base, "shared")
	real := filepath.Join(base, "real")
	evil := filepath.Join(shared, "evil")
	for _, d := range []string{shared, real, evil} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	attacker := func(path string) {
		if os.Geteuid() == 0 { // another user's, as it would be
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	attacker(evil)
	link := filepath.Join(shared, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	attacker(link)
	h, err := JoinFabric(link)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// a departed engine's file in the real fabric: the cleanup removes it
	if err := os.WriteFile(filepath.Join(real, "eng-00000000000000aa"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// the attacker's directory: the names the cleanup opens, as symlinks
	// to a file of ours that must not be opened
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gid := "fe8000000000000000010000c9000001"
	planted := []string{"eng-00000000000000bb", "dev-" + gid}
	for _, n := range planted {
		if err := os.Symlink(target, filepath.Join(evil, n)); err != nil {
			t.Fatal(err)
		}
		attacker(filepath.Join(evil, n))
	}
	if err := os.WriteFile(filepath.Join(evil, "qp-"+gid+"-3"), make([]byte, 64), 0o666); err != nil {
		t.Fatal(err)
	}
	attacker(filepath.Join(evil, "qp-"+gid+"-3"))
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, target, unix.IN_OPEN|unix.IN_MODIFY); err != nil {
		t.Fatal(err)
	}
	// the swap: the path now leads to the attacker's directory
	swap := filepath.Join(shared, "link.new")
	if err := os.Symlink(evil, swap); err != nil {
		t.Fatal(err)
	}
	attacker(swap)
	if err := os.Rename(swap, link); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n, _ := unix.Read(in, make([]byte, 4096)); n > 0 {
		t.Errorf("the cleanup opened %s through a symlink planted in the swapped fabric path", target)
	}
	for _, n := range append(planted, "qp-"+gid+"-3") {
		if _, err := os.Lstat(filepath.Join(evil, n)); err != nil {
			t.Errorf("the cleanup removed %s from the directory the swapped path leads to", n)
		}
	}
	if _, err := os.Stat(filepath.Join(real, "eng-00000000000000aa")); err == nil {
		t.Errorf("the cleanup did not clean the fabric it joined")
	}
	if _, err := os.Stat(filepath.Join(real, "host-1.lock")); err != nil {
		t.Errorf("the host's lock is not in the fabric it joined: %v", err)
	}
}
