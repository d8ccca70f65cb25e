// SPDX-License-Identifier: MIT

package kerneltruth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/efap2p/efap2p/p2p"
)

// Answer is the part of a verdict the kernel can be held to: the map type
// and the distance calc_map_type_and_dist works out, and what
// pci_p2pdma_distance returns.
type Answer struct {
	Provider p2p.Addr    `json:"provider"`
	Client   p2p.Addr    `json:"client"`
	MapType  p2p.MapType `json:"map_type"`
	Distance int         `json:"distance"`
}

// AnswerOf is a verdict's Answer.
func AnswerOf(v *p2p.Verdict) Answer {
	return Answer{Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance}
}

// kernelDistance is what pci_p2pdma_distance returns for the answer.
func (a Answer) kernelDistance() int {
	if !a.MapType.Supported() {
		return -1
	}
	return a.Distance
}

// ReadAnswers reads `efap2p explain --all --json`: one verdict a line.
func ReadAnswers(r io.Reader) ([]Answer, error) {
	var out []Answer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var a Answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("explain --all --json, line %d: %w", line, err)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// Result is how the oracle fared against one boot.
type Result struct {
	Pairs      int      // the pairs the kernel answered
	Matches    int      // those the oracle answered the same
	Mismatches []string // one line per other pair
}

// String is "N/N pairs match the kernel".
func (r Result) String() string {
	return fmt.Sprintf("%d/%d pairs match the kernel", r.Matches, r.Pairs)
}

// OK reports a result without a disagreement (and with pairs to agree on).
func (r Result) OK() bool { return r.Pairs > 0 && r.Matches == r.Pairs && len(r.Mismatches) == 0 }

// Compare holds answers to the kernel's report: every pair the kernel
// answered must be answered once, with the same pci_p2pdma_distance, and,
// where the kretprobe saw calc_map_type_and_dist, the same map type and
// distance; where the kernel has no p2pdma (no probe), NOT_SUPPORTED.
// Answers for pairs the kernel was not asked about are mismatches too.
func Compare(rep *Report, answers []Answer) Result {
	type key struct{ p, c p2p.Addr }
	got := map[key]Answer{}
	res := Result{}
	for _, a := range answers {
		k := key{a.Provider, a.Client}
		if _, dup := got[k]; dup {
			res.Mismatches = append(res.Mismatches, fmt.Sprintf("%s -> %s: answered twice", a.Client, a.Provider))
		}
		got[k] = a
	}
	for _, kp := range rep.Pairs {
		res.Pairs++
		k := key{kp.Provider, kp.Client}
		a, ok := got[k]
		delete(got, k)
		kernel := fmt.Sprintf("distance %d", kp.Ret)
		if kp.Probed {
			kernel = fmt.Sprintf("%s %d (distance %d)", kp.MapType, kp.Dist, kp.Ret)
		}
		switch {
		case !ok:
			res.Mismatches = append(res.Mismatches, fmt.Sprintf("provider %s, client %s: kernel %s, oracle no answer", kp.Provider, kp.Client, kernel))
			continue
		case rep.Probed && !kp.Probed:
			res.Mismatches = append(res.Mismatches, fmt.Sprintf("provider %s, client %s: the kretprobe missed the kernel's call (%s)", kp.Provider, kp.Client, kernel))
			continue
		}
		same := a.kernelDistance() == kp.Ret
		if kp.Probed {
			same = same && a.MapType == kp.MapType && a.Distance == kp.Dist
		} else {
			// the header's stub: no walk, every pair refused
			same = same && a.MapType == p2p.MapNotSupported
		}
		if !same {
			res.Mismatches = append(res.Mismatches, fmt.Sprintf("provider %s, client %s: kernel %s, oracle %s %d (distance %d)",
				kp.Provider, kp.Client, kernel, a.MapType, a.Distance, a.kernelDistance()))
			continue
		}
		res.Matches++
	}
	for k := range got {
		res.Mismatches = append(res.Mismatches, fmt.Sprintf("provider %s, client %s: answered, but the kernel was not asked (a bridge, or a function it does not have)", k.p, k.c))
	}
	return res
}

// Replay decides every pair of the fixture again with the oracle, from
// the fixture's sysfs dump extracted under dir (which must exist and be
// empty), by the rules of the fixture's kernel and its configuration.
func Replay(fx *Fixture, dir string) (Result, error) {
	root := filepath.Join(dir, "sys")
	if err := os.Mkdir(root, 0o755); err != nil {
		return Result{}, err
	}
	if err := fx.Sysfs.Extract(root); err != nil {
		return Result{}, err
	}
	src, err := p2p.OpenSysfs(root)
	if err != nil {
		return Result{}, err
	}
	rel, err := p2p.ParseRelease(fx.Kernel)
	if err != nil {
		return Result{}, err
	}
	kc := fx.KernelConfig()
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: rel, KernelConfig: &kc, TopologyFiles: []string{}})
	answers := make([]Answer, 0, len(fx.Report.Pairs))
	for _, kp := range fx.Report.Pairs {
		v, err := o.Verdict(kp.Provider, kp.Client)
		if err != nil {
			return Result{}, fmt.Errorf("provider %s, client %s: %w", kp.Provider, kp.Client, err)
		}
		answers = append(answers, AnswerOf(v))
	}
	return Compare(fx.Report, answers), nil
}

// CheckACS holds the dump's config space to the ACS registers the module
// read: the oracle reads them from the dump, so they must be the
// kernel's.
func CheckACS(fx *Fixture) []string {
	var bad []string
	for _, fn := range fx.Report.Funcs {
		cfg := fx.Sysfs["bus/pci/devices/"+fn.Addr.String()]
		if cfg == nil {
			bad = append(bad, fmt.Sprintf("%s: not in the sysfs dump", fn.Addr))
			continue
		}
		e := configEntry(fx, fn.Addr)
		if e == nil {
			bad = append(bad, fmt.Sprintf("%s: no config file in the dump", fn.Addr))
			continue
		}
		if fn.ACSPos == 0 {
			continue
		}
		at := fn.ACSPos + 6
		var ctrl uint16
		if at+2 <= len(e.Content) {
			ctrl = uint16(e.Content[at]) | uint16(e.Content[at+1])<<8
		}
		if ctrl != fn.ACSCtrl {
			bad = append(bad, fmt.Sprintf("%s: ACS Control %#04x in the dump, %#04x in the kernel", fn.Addr, ctrl, fn.ACSCtrl))
		}
	}
	return bad
}
