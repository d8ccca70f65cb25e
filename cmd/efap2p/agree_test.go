// SPDX-License-Identifier: MIT

package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/topoview"
)

// pairAnswer is what a surface says about one (accelerator, NIC) pair: can
// the NIC DMA straight into the accelerator's memory (the outcome over
// both registration paths), and by which paths.
type pairAnswer struct {
	effective p2p.Outcome
	via       p2p.Registration
}

// TestOneAnswer drives every surface over every built-in model, as each
// model's kernel decides, and holds them to the Go API's answer for every
// (accelerator, NIC) pair: the outcome over both registration paths and
// the paths that give true P2P (dma-buf, the EFA driver's peer memory, or
// both). The surfaces: topo's matrix (its mark), topo --p2p (its code),
// topo --json, explain --all --json, explain's text (its p2p line), check
// --json, and a topology file written by export and read back.
func TestOneAnswer(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := writeTree(t, name)
			kernel := "--kernel=" + m.KernelRelease().String()
			tool := func(args ...string) string {
				t.Helper()
				code, out, errs := runTool(append(append(args[:1:1], "--sysfs", dir, kernel), args[1:]...)...)
				if code != 0 && !(args[0] == "check" && code <= 3) {
					t.Fatalf("efap2p %s: exit %d: %s", strings.Join(args, " "), code, errs)
				}
				return out
			}

			// The Go API: the oracle of package p2p, as efadv asks it.
			src, err := p2p.OpenSysfs(dir)
			if err != nil {
				t.Fatal(err)
			}
			o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: m.KernelRelease()})
			var mx devices.Matrix
			if err := json.Unmarshal([]byte(tool("topo", "--json")), &mx); err != nil {
				t.Fatal(err)
			}
			type key struct{ acc, nic p2p.Addr }
			want := map[key]pairAnswer{}
			var keys []key
			label := map[p2p.Addr]string{}
			cell := map[key]*devices.Cell{}
			for i, r := range mx.Devices {
				label[r.Addr] = r.Name
				for j, c := range mx.Devices {
					if r.Kind != devices.KindNIC || c.Kind != devices.KindAccelerator {
						continue
					}
					k := key{c.Addr, r.Addr}
					v, err := o.Verdict(k.acc, k.nic)
					if err != nil {
						t.Fatal(err)
					}
					want[k] = pairAnswer{v.Effective(), v.Via()}
					keys = append(keys, k)
					cell[k] = &mx.Matrix[i][j]
				}
			}
			if len(keys) == 0 {
				return // no (accelerator, NIC) pair: nothing to agree on
			}
			check := func(surface string, k key, got pairAnswer) {
				t.Helper()
				if got != want[k] {
					t.Errorf("%s %s/%s (%s, %s): %s says %s via %s, the Go API %s via %s", name, label[k.acc], label[k.nic], k.acc, k.nic,
						surface, got.effective, got.via, want[k].effective, want[k].via)
				}
			}

			// topo --json, topo's marks and topo --p2p's codes
			for _, k := range keys {
				c := cell[k]
				check("topo --json", k, pairAnswer{c.Effective, c.Via})
				if c.P2P != (c.Effective == p2p.OutcomeP2P) {
					t.Errorf("%s %s: topo --json p2p %v, effective %s", name, c.Client, c.P2P, c.Effective)
				}
			}
			_, rows, _ := topoRows(tool("topo", "--full"))
			header, p2pRows, _ := topoRows(tool("topo", "--p2p"))
			col := map[string]int{}
			for i, h := range header {
				col[h] = i - 1
			}
			for i, d := range mx.Devices {
				if d.Kind != devices.KindNIC {
					continue
				}
				for j, a := range mx.Devices {
					if a.Kind != devices.KindAccelerator {
						continue
					}
					k := key{a.Addr, d.Addr}
					w := want[k]
					text := rows[d.Name][j]
					if got := markAnswer(strings.TrimPrefix(text, mx.Matrix[i][j].Path.String())); !markAgrees(got, w) {
						t.Errorf("%s %s/%s: topo shows %q; the Go API says %s via %s", name, a.Name, d.Name, text, w.effective, w.via)
					}
					if !d.RDMA() {
						continue
					}
					code := p2pRows[d.Name][col[a.Name]]
					if code != topoview.P2PCode(cell[k]) || !codeAgrees(strings.TrimSuffix(code, "?"), w) {
						t.Errorf("%s %s/%s: topo --p2p shows %q; the Go API says %s via %s", name, a.Name, d.Name, code, w.effective, w.via)
					}
				}
			}

			// explain --all --json: every ordered pair of functions
			seen := 0
			sc := bufio.NewScanner(strings.NewReader(tool("explain", "--all", "--json")))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var v struct {
					Provider  p2p.Addr         `json:"provider"`
					Client    p2p.Addr         `json:"client"`
					Effective p2p.Outcome      `json:"effective_outcome"`
					Via       p2p.Registration `json:"p2p_via"`
				}
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatal(err)
				}
				if k := (key{v.Provider, v.Client}); want[k] != (pairAnswer{}) {
					check("explain --all --json", k, pairAnswer{v.Effective, v.Via})
					seen++
				}
			}
			if seen != len(keys) {
				t.Errorf("%s: explain --all gave %d of the %d pairs", name, seen, len(keys))
			}
			// explain's text, of the first pair, typed the other way round
			// too (a NIC first: the same pair)
			k := keys[0]
			for _, args := range [][]string{{label[k.acc], label[k.nic]}, {label[k.nic], label[k.acc]}} {
				out := tool(append([]string{"explain"}, args...)...)
				line := ""
				for _, l := range strings.Split(out, "\n") {
					if strings.HasPrefix(l, "p2p ") {
						line = strings.TrimSpace(strings.TrimPrefix(l, "p2p"))
					}
				}
				line = strings.TrimSuffix(line, " (uncertain)")
				if w := explainWord(want[k]); !strings.HasPrefix(line, w) || w == "yes, by dma-buf" && line != w {
					t.Errorf("%s: explain %s: p2p line %q; the Go API says %s via %s", name, strings.Join(args, " "), line, want[k].effective, want[k].via)
				}
			}

			// check --json: its pairs are the EFA NICs'
			var r nodecheck.Report
			if err := json.Unmarshal([]byte(tool("check", "--json")), &r); err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Pairs {
				k := key{p.Accelerator, p.NIC}
				if _, ok := want[k]; !ok {
					t.Errorf("%s: check has pair %s/%s, topo does not", name, p.Accelerator, p.NIC)
					continue
				}
				if p.P2P != (p.Via != 0) || p.P2P != (want[k].effective == p2p.OutcomeP2P) || p.Via != want[k].via {
					t.Errorf("%s %s/%s: check says p2p %v via %s; the Go API %s via %s", name, label[k.acc], label[k.nic], p.P2P, p.Via, want[k].effective, want[k].via)
				}
			}

			// export, and the file read back: the same answers
			file := filepath.Join(t.TempDir(), "topology.json")
			tool("export", "--force", "-o", file)
			fo := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: m.KernelRelease(), TopologyFile: file})
			if err := fo.TopologyFileError(); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				v, err := fo.Verdict(k.acc, k.nic)
				if err != nil {
					t.Fatal(err)
				}
				if v.Source != p2p.SourceTopologyFile {
					t.Errorf("%s %s/%s: not from the exported file (%s)", name, k.acc, k.nic, v.Source)
				}
				check("export's file", k, pairAnswer{v.Effective(), v.Via()})
			}
		})
	}
}
