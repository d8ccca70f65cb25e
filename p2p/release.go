// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/internal/secenv"
)

// Release is a Linux kernel release whose p2pdma rules decide a verdict: a
// mainline or stable release ("6.1.0-28-amd64" is 6.1.0), a release
// candidate ("6.19.0-rc5", before 6.19.0), a kernel built from the PCI
// maintainer's tree or linux-next ("7.4.0-rc1-next-20261002"),
// the newest rules known ("latest"), or the newest rules plus Leon
// Romanovsky's ACPI HMAT P2P series ("p2p-hmat"). The zero value is not a
// release (IsZero): callers take it as "the running kernel's".
type Release struct {
	Major, Minor, Patch int
	// RC is the release candidate's number: 5 for "6.19.0-rc5", which
	// comes before 6.19.0 (and after 6.19.0-rc4); 0 for a release. A
	// change merged for 6.19 is in 6.19.0-rc1 and later: the rules name
	// the rc they came with (rules.go).
	RC int
	// Extra is what followed the numbers ("-28-amd64", "-rc3"); kept for
	// String, ignored by comparisons but for the rc it names.
	Extra string
	// next marks a kernel from the PCI tree or linux-next: it has the
	// entries queued for the release after Major.Minor.
	next bool
	kind releaseKind
}

type releaseKind uint8

const (
	kindNumbered releaseKind = iota
	kindLatest
	kindHMAT
)

// Names of the special releases.
const (
	releaseLatestName = "latest"
	releaseHMATName   = "p2p-hmat"
)

// releaseLatest is the newest rules known: mainline, the PCI tree and
// linux-next.
var releaseLatest = Release{kind: kindLatest}

// releaseHMAT is releaseLatest plus the ACPI HMAT PCIe P2P series.
var releaseHMAT = Release{kind: kindHMAT}

// ErrBadRelease is wrapped by every release parsing error.
var ErrBadRelease = errors.New("not a kernel release")

// ParseRelease parses a kernel release as uname -r prints it
// ("6.8.0-1015-aws", "5.15.0-105-generic", "7.1", "7.4.0-rc2-next-20261002")
// or one of the names "latest" and "p2p-hmat".
func ParseRelease(s string) (Release, error) {
	s = strings.TrimSpace(s)
	switch s {
	case releaseLatestName:
		return releaseLatest, nil
	case releaseHMATName:
		return releaseHMAT, nil
	}
	var r Release
	nums, rest := s, ""
	if i := strings.IndexFunc(s, func(c rune) bool { return c != '.' && (c < '0' || c > '9') }); i >= 0 {
		nums, rest = s[:i], s[i:]
	}
	parts := strings.Split(nums, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return Release{}, fmt.Errorf("%w: %q (want MAJOR.MINOR[.PATCH][-EXTRA], %s or %s)", ErrBadRelease, s, releaseLatestName, releaseHMATName)
	}
	vals := [3]*int{&r.Major, &r.Minor, &r.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1000 {
			return Release{}, fmt.Errorf("%w: %q (want MAJOR.MINOR[.PATCH][-EXTRA], %s or %s)", ErrBadRelease, s, releaseLatestName, releaseHMATName)
		}
		if i < 3 {
			*vals[i] = n
		}
	}
	if r.Major == 0 {
		return Release{}, fmt.Errorf("%w: %q: major version 0", ErrBadRelease, s)
	}
	if len(rest) > 128 {
		return Release{}, fmt.Errorf("%w: %q: too long", ErrBadRelease, s)
	}
	r.Extra = rest
	r.RC = rcOf(rest)
	// linux-next names itself "-next-YYYYMMDD"; a PCI tree build carries
	// the maintainer's branch in the local version, which uname cannot
	// tell from any other: only "-next" is recognised.
	r.next = strings.Contains(rest, "-next")
	return r, nil
}

// rcOf reads the release candidate a release's extra names: 5 for "-rc5"
// and "-rc5-next-20260110", 0 for anything else ("-28-amd64", "-rcx").
func rcOf(extra string) int {
	rest, ok := strings.CutPrefix(extra, "-rc")
	if !ok {
		return 0
	}
	end := strings.IndexFunc(rest, func(c rune) bool { return c < '0' || c > '9' })
	if end < 0 {
		end = len(rest)
	}
	if end == 0 || end > 3 || end < len(rest) && rest[end] != '-' && rest[end] != '+' && rest[end] != '.' {
		return 0
	}
	n, _ := strconv.Atoi(rest[:end])
	return n
}

// MustParseRelease is ParseRelease for constants; it panics on an error.
func MustParseRelease(s string) Release {
	r, err := ParseRelease(s)
	if err != nil {
		panic(err)
	}
	return r
}

// IsZero reports the zero Release (no release chosen).
func (r Release) IsZero() bool { return r == Release{} }

// IsLatest reports "latest" or "p2p-hmat": the newest rules known.
func (r Release) IsLatest() bool { return r.kind != kindNumbered }

// HMAT reports "p2p-hmat": the HMAT P2P series on top of the newest rules.
func (r Release) HMAT() bool { return r.kind == kindHMAT }

// Next reports a linux-next (or PCI tree) kernel.
func (r Release) Next() bool { return r.next }

// String returns the release as parsed ("6.1.0-28-amd64"), or "latest",
// "p2p-hmat"; "" for the zero value.
func (r Release) String() string {
	switch {
	case r.kind == kindLatest:
		return releaseLatestName
	case r.kind == kindHMAT:
		return releaseHMATName
	case r.IsZero():
		return ""
	}
	return fmt.Sprintf("%d.%d.%d%s", r.Major, r.Minor, r.Patch, r.Extra)
}

// Compare orders releases by their rules: -1 when r has older rules than o,
// 0 the same version, +1 newer. A release candidate comes before the
// release it leads to (6.19.0-rc5 < 6.19.0-rc8 < 6.19.0); the rest of
// Extra is ignored, except for a linux-next kernel, which comes after the
// release it is based on (whatever its rc); the special names come after
// every numbered release (p2p-hmat last).
func (r Release) Compare(o Release) int {
	if r.kind != o.kind {
		if r.kind < o.kind {
			return -1
		}
		return 1
	}
	for _, d := range [...]int{r.Major - o.Major, r.Minor - o.Minor, r.Patch - o.Patch} {
		if d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
	}
	if r.next != o.next {
		if o.next {
			return -1
		}
		return 1
	}
	if r.next {
		return 0
	}
	// A release (RC 0) comes after each of its candidates.
	rr, or := r.RC, o.RC
	if rr == 0 {
		rr = math.MaxInt
	}
	if or == 0 {
		or = math.MaxInt
	}
	switch {
	case rr < or:
		return -1
	case rr > or:
		return 1
	}
	return 0
}

// AtLeast reports whether r has the rules of release o or newer.
func (r Release) AtLeast(o Release) bool { return r.Compare(o) >= 0 }

// MarshalText implements encoding.TextMarshaler.
func (r Release) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Release) UnmarshalText(b []byte) error {
	v, err := ParseRelease(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// RunningRelease returns the release of the running kernel (uname -r).
func RunningRelease() (Release, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return Release{}, fmt.Errorf("uname: %w", err)
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return ParseRelease(string(b))
}

// KernelEnv is the environment variable that names the release whose rules
// the Go API (package efadv) and the library decide by.
const KernelEnv = "EFAP2P_KERNEL"

// ReleaseFromEnv returns the release named by $EFAP2P_KERNEL (ignored in a
// secure-execution process: setuid, setgid, file capabilities, like
// SYSFS_PATH), else the running kernel's.
// A malformed value is an error that names the variable; the running
// kernel's release is returned with it.
func ReleaseFromEnv() (Release, error) {
	if v := strings.TrimSpace(secenv.Getenv(KernelEnv)); v != "" {
		r, err := ParseRelease(v)
		if err == nil {
			return r, nil
		}
		run, rerr := RunningRelease()
		if rerr != nil {
			run = releaseLatest
		}
		return run, fmt.Errorf("%s: %w; using the running kernel's (%s)", KernelEnv, err, run)
	}
	return RunningRelease()
}
