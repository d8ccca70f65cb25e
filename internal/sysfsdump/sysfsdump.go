// SPDX-License-Identifier: MIT

// Package sysfsdump writes the PCI part of a sysfs tree as text, and reads
// it back into a tree a sysfs reader can open. A booted kernel's /sys is
// the reference for what efap2p reads (the PCI hierarchy under devices/,
// the bus/pci/devices links, config space, the attribute files, the driver
// links, the CPU modalias); a dump carries it out of a virtual machine
// through a serial port and into the repository, where it diffs as text.
//
// The format is one entry per line, paths relative to the sysfs root and
// sorted, modes in octal:
//
//	sysfs-dump 1
//	d PATH MODE                   a directory
//	f PATH MODE "CONTENT"         a file and its content (a Go quoted string)
//	x PATH MODE SIZE HEX          a binary file (config space): its size and
//	                              its bytes up to the last non-zero dword
//	u PATH MODE                   a file whose content is not recorded
//	l PATH TARGET                 a symbolic link and its target
//
// Contents are recorded for the attribute files of PCI functions and root
// buses and for devices/system/cpu/modalias; files below them (power/,
// msi_irqs/, port service devices) are listed without their content, and
// files whose reading has side effects or needs a mapping (resourceN, rom,
// vpd) are never read.
package sysfsdump

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Header is the first line of a dump.
const Header = "sysfs-dump 1"

// Kind is the kind of an Entry.
type Kind byte

// The entry kinds, as the format writes them.
const (
	Dir     Kind = 'd'
	File    Kind = 'f'
	Binary  Kind = 'x'
	Unread  Kind = 'u'
	Symlink Kind = 'l'
)

// Entry is one line of a dump.
type Entry struct {
	Kind Kind
	Path string      // relative to the sysfs root, with slashes
	Mode fs.FileMode // permission bits (not for links)
	// Content is a File's content, or a Binary file's bytes (trailing
	// zero dwords dropped).
	Content []byte
	Size    int64  // a Binary file's size
	Target  string // a Symlink's target, as readlink returns it
}

// Tree is a dump in memory: its entries by path.
type Tree map[string]*Entry

// Paths returns the tree's paths, sorted.
func (t Tree) Paths() []string {
	ps := make([]string, 0, len(t))
	for p := range t {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Limits on what a dump may hold: a sysfs attribute is a page at most, and
// a PCIe function's config space is 4 KiB.
const (
	maxContent = 4096
	maxBinary  = 4096
	maxPath    = 1024
	maxLine    = 2*maxBinary + maxPath + 64
)

// pciName matches the directory of a PCI function ("0000:00:1f.2", VMD
// domains have more digits); rootName that of a root bus ("pci0000:00").
var (
	pciName  = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	rootName = regexp.MustCompile(`^pci[0-9a-f]{4,8}:[0-9a-f]{2}$`)
	// neverRead are attributes whose read maps BARs, runs the ROM or
	// talks to the device (I/O port BARs, VPD).
	neverRead = regexp.MustCompile(`^(resource[0-9]+(_wc)?|rom|vpd)$`)
)

// Write dumps the PCI part of the sysfs tree at root to w.
func Write(root string, w io.Writer) error {
	d := &dumper{root: root, seen: map[string]bool{}}
	if err := d.collect(); err != nil {
		return err
	}
	return WriteTree(d.tree, w)
}

// WriteTree writes t in the dump format: each directory, then the files
// and links in it (named "./NAME", relative to that directory), then its
// subdirectories, so that a path is written out once.
func WriteTree(t Tree, w io.Writer) error {
	kids := map[string][]string{}
	var tops []string
	for _, p := range t.Paths() {
		if dir := path.Dir(p); dir != "." && t[dir] != nil {
			kids[dir] = append(kids[dir], p)
		} else {
			tops = append(tops, p)
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, Header)
	var walk func(ps []string, dir string) error
	walk = func(ps []string, dir string) error {
		for pass := 0; pass < 2; pass++ {
			for _, p := range ps {
				e := t[p]
				if (e.Kind == Dir) != (pass == 1) {
					continue
				}
				name := p
				if dir != "" && e.Kind != Dir {
					name = "./" + path.Base(p)
				}
				if err := writeEntry(bw, e, name); err != nil {
					return err
				}
				if e.Kind == Dir {
					if err := walk(kids[p], p); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := walk(tops, ""); err != nil {
		return err
	}
	return bw.Flush()
}

// writeEntry writes e under the name given (its path, or "./BASE").
func writeEntry(w io.Writer, e *Entry, name string) error {
	if err := checkPath(e.Path); err != nil {
		return err
	}
	var err error
	switch e.Kind {
	case Dir, Unread:
		_, err = fmt.Fprintf(w, "%c %s %03o\n", e.Kind, name, e.Mode.Perm())
	case File:
		_, err = fmt.Fprintf(w, "f %s %03o %s\n", name, e.Mode.Perm(), strconv.Quote(string(e.Content)))
	case Binary:
		_, err = fmt.Fprintf(w, "x %s %03o %d %s\n", name, e.Mode.Perm(), e.Size, hex.EncodeToString(e.Content))
	case Symlink:
		if checkTarget(e.Target) != nil {
			return fmt.Errorf("sysfsdump: %s: link target %q cannot be dumped", e.Path, e.Target)
		}
		_, err = fmt.Fprintf(w, "l %s %s\n", name, e.Target)
	default:
		return fmt.Errorf("sysfsdump: %s: unknown entry kind %q", e.Path, e.Kind)
	}
	return err
}

type dumper struct {
	root string
	tree Tree
	seen map[string]bool
}

func (d *dumper) collect() error {
	d.tree = Tree{}
	devs := filepath.Join(d.root, "bus/pci/devices")
	names, err := readNames(devs)
	if err != nil {
		return fmt.Errorf("sysfsdump: %w", err)
	}
	if err := d.addParents("bus/pci/devices"); err != nil {
		return err
	}
	roots := map[string]bool{}
	for _, n := range names {
		rel := "bus/pci/devices/" + n
		if err := d.add(rel, false); err != nil {
			return err
		}
		// The root bus directory this function hangs from: the first
		// pciDDDD:BB component of the resolved link.
		real, err := filepath.EvalSymlinks(filepath.Join(d.root, rel))
		if err != nil {
			return fmt.Errorf("sysfsdump: %s: %w", rel, err)
		}
		r, err := filepath.Rel(d.root, real)
		if err != nil || strings.HasPrefix(r, "..") {
			return fmt.Errorf("sysfsdump: %s resolves outside %s", rel, d.root)
		}
		parts := strings.Split(filepath.ToSlash(r), "/")
		for i, p := range parts {
			if rootName.MatchString(p) {
				roots[strings.Join(parts[:i+1], "/")] = true
				break
			}
		}
	}
	for _, top := range []string{"bus/pci/drivers", "devices/system/cpu"} {
		if err := d.addParents(top); err != nil {
			return err
		}
	}
	drivers, err := readNames(filepath.Join(d.root, "bus/pci/drivers"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sysfsdump: %w", err)
	}
	for _, n := range drivers {
		if err := d.walk("bus/pci/drivers/"+n, false); err != nil {
			return err
		}
	}
	if err := d.add("devices/system/cpu/modalias", true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	rs := make([]string, 0, len(roots))
	for r := range roots {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	for _, r := range rs {
		if err := d.addParents(r); err != nil {
			return err
		}
		if err := d.walk(r, true); err != nil {
			return err
		}
	}
	return nil
}

// addParents records the directories above rel and rel itself.
func (d *dumper) addParents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		if err := d.add(strings.Join(parts[:i+1], "/"), false); err != nil {
			return err
		}
	}
	return nil
}

// walk records rel and everything below it, without following links; the
// content of files is read where withContent is set and the file sits
// directly in a PCI function's or root bus's directory.
func (d *dumper) walk(rel string, withContent bool) error {
	if err := d.add(rel, false); err != nil {
		return err
	}
	e := d.tree[rel]
	if e == nil || e.Kind != Dir {
		return nil
	}
	names, err := readNames(filepath.Join(d.root, rel))
	if err != nil {
		return fmt.Errorf("sysfsdump: %w", err)
	}
	base := filepath.Base(rel)
	attrDir := withContent && (pciName.MatchString(base) || rootName.MatchString(base))
	for _, n := range names {
		child := rel + "/" + n
		st, err := os.Lstat(filepath.Join(d.root, child))
		if err != nil {
			return fmt.Errorf("sysfsdump: %w", err)
		}
		if st.IsDir() {
			// Below a function, its own child functions get their
			// attributes read; other directories are listed only.
			if err := d.walk(child, withContent && (pciName.MatchString(n) || rootName.MatchString(n))); err != nil {
				return err
			}
			continue
		}
		if err := d.add(child, attrDir); err != nil {
			return err
		}
	}
	return nil
}

// add records one path; a file's content is read when content is set.
func (d *dumper) add(rel string, content bool) error {
	if d.seen[rel] {
		return nil
	}
	d.seen[rel] = true
	if err := checkPath(rel); err != nil {
		return err
	}
	full := filepath.Join(d.root, rel)
	st, err := os.Lstat(full)
	if err != nil {
		return fmt.Errorf("sysfsdump: %w", err)
	}
	e := &Entry{Path: rel, Mode: st.Mode().Perm()}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(full)
		if err != nil {
			return fmt.Errorf("sysfsdump: %w", err)
		}
		e.Kind, e.Mode, e.Target = Symlink, 0, t
	case st.IsDir():
		e.Kind = Dir
	case !st.Mode().IsRegular():
		return nil // sysfs has none; a tree someone built might
	case !content || st.Mode().Perm()&0o444 == 0 || neverRead.MatchString(filepath.Base(rel)):
		e.Kind = Unread
	case filepath.Base(rel) == "config":
		b, err := readLimited(full, maxBinary)
		if err != nil {
			e.Kind = Unread
			break
		}
		e.Kind, e.Size, e.Content = Binary, st.Size(), trimZeros(b)
	default:
		b, err := readLimited(full, maxContent)
		if err != nil {
			// Attributes a device cannot answer (EIO, ENODEV) are
			// there, with no content to record.
			e.Kind = Unread
			break
		}
		e.Kind, e.Content = File, b
	}
	d.tree[rel] = e
	return nil
}

// trimZeros drops trailing zero dwords: most of a 4 KiB config space is
// empty.
func trimZeros(b []byte) []byte {
	n := len(b)
	for n >= 4 && b[n-1] == 0 && b[n-2] == 0 && b[n-3] == 0 && b[n-4] == 0 {
		n -= 4
	}
	return b[:n]
}

func readLimited(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// checkPath accepts a clean relative path of printable characters without
// spaces.
func checkPath(p string) error {
	if p == "" || len(p) > maxPath || strings.HasPrefix(p, "/") || filepath.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("sysfsdump: path %q is not a clean relative path", p)
	}
	for _, c := range p {
		if c <= ' ' || c > '~' {
			return fmt.Errorf("sysfsdump: path %q has a character a dump cannot hold", p)
		}
	}
	return nil
}

func checkTarget(t string) error {
	if t == "" || len(t) > maxPath || strings.HasPrefix(t, "/") {
		return errors.New("not a relative link target")
	}
	for _, c := range t {
		if c <= ' ' || c > '~' {
			return errors.New("a character a dump cannot hold")
		}
	}
	return nil
}

// Read parses a dump.
func Read(r io.Reader) (Tree, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	t := Tree{}
	line := 0
	lastDir := ""
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != Header {
				return nil, fmt.Errorf("sysfsdump: line 1: want %q, got %.40q", Header, text)
			}
			continue
		}
		e, err := parseEntry(text, lastDir)
		if err != nil {
			return nil, fmt.Errorf("sysfsdump: line %d: %w", line, err)
		}
		if e.Kind == Dir {
			lastDir = e.Path
		}
		if _, dup := t[e.Path]; dup {
			return nil, fmt.Errorf("sysfsdump: line %d: %s listed twice", line, e.Path)
		}
		t[e.Path] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sysfsdump: line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("sysfsdump: empty dump")
	}
	// Every path's parent must be a directory of the dump.
	for p := range t {
		if dir := filepath.Dir(p); dir != "." {
			if pe, ok := t[dir]; !ok || pe.Kind != Dir {
				return nil, fmt.Errorf("sysfsdump: %s: its directory %s is not in the dump", p, dir)
			}
		}
	}
	return t, nil
}

// parseEntry parses one line; "./NAME" names NAME in dir, the directory
// of the last directory line.
func parseEntry(text, dir string) (*Entry, error) {
	if len(text) < 3 || text[1] != ' ' {
		return nil, fmt.Errorf("malformed entry %.40q", text)
	}
	e := &Entry{Kind: Kind(text[0])}
	rest := text[2:]
	path, rest, _ := strings.Cut(rest, " ")
	if base, ok := strings.CutPrefix(path, "./"); ok {
		if dir == "" || e.Kind == Dir || strings.Contains(base, "/") {
			return nil, fmt.Errorf("%q: a relative name needs a directory line before it, and names a file in it", path)
		}
		path = dir + "/" + base
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	e.Path = path
	mode := func(s string) error {
		m, err := strconv.ParseUint(s, 8, 32)
		if err != nil || m > 0o777 {
			return fmt.Errorf("%s: mode %q is not octal permission bits", path, s)
		}
		e.Mode = fs.FileMode(m)
		return nil
	}
	switch e.Kind {
	case Dir, Unread:
		if err := mode(rest); err != nil {
			return nil, err
		}
	case File:
		m, q, ok := strings.Cut(rest, " ")
		if !ok {
			return nil, fmt.Errorf("%s: no content", path)
		}
		if err := mode(m); err != nil {
			return nil, err
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return nil, fmt.Errorf("%s: content is not a quoted string", path)
		}
		if len(s) > maxContent {
			return nil, fmt.Errorf("%s: content longer than %d bytes", path, maxContent)
		}
		e.Content = []byte(s)
	case Binary:
		f := strings.Split(rest, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: want MODE SIZE HEX", path)
		}
		if err := mode(f[0]); err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n < 0 || n > maxBinary {
			return nil, fmt.Errorf("%s: size %q is not 0..%d", path, f[1], maxBinary)
		}
		b, err := hex.DecodeString(f[2])
		if err != nil || int64(len(b)) > n {
			return nil, fmt.Errorf("%s: content is not hex of at most %d bytes", path, n)
		}
		e.Size, e.Content = n, b
	case Symlink:
		if err := checkTarget(rest); err != nil {
			return nil, fmt.Errorf("%s: link target %.40q: %w", path, rest, err)
		}
		e.Target = rest
	default:
		return nil, fmt.Errorf("unknown entry kind %q", text[0])
	}
	return e, nil
}

// Extract writes the tree t under dir (which must exist and be empty),
// where a sysfs reader can open it: directories, files with their
// content (a binary file padded with zeros to its size; an unread one
// empty), and the links, each checked to resolve inside dir.
func (t Tree) Extract(dir string) error {
	for _, p := range t.Paths() {
		e := t[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		var err error
		switch e.Kind {
		case Dir:
			err = os.Mkdir(full, 0o755)
		case File, Unread:
			err = os.WriteFile(full, e.Content, 0o644)
		case Binary:
			b := make([]byte, e.Size)
			copy(b, e.Content)
			err = os.WriteFile(full, b, 0o644)
		case Symlink:
			resolved := filepath.Join(filepath.Dir(p), e.Target)
			if resolved == ".." || strings.HasPrefix(resolved, "../") {
				return fmt.Errorf("sysfsdump: %s: link %s leaves the tree", p, e.Target)
			}
			err = os.Symlink(e.Target, full)
		}
		if err != nil {
			return fmt.Errorf("sysfsdump: %w", err)
		}
		if e.Kind != Symlink && e.Kind != Dir {
			// The recorded modes, as far as they keep the file readable
			// for the one who extracted it.
			if err := os.Chmod(full, e.Mode|0o400); err != nil {
				return fmt.Errorf("sysfsdump: %w", err)
			}
		}
	}
	return nil
}
