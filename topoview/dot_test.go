// SPDX-License-Identifier: MIT

package topoview

import (
	"bytes"
	"fmt"
	"github.com/efap2p/efap2p/internal/pciclass"
	"os/exec"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// dotEdge is an edge of a parsed digraph with its attributes.
type dotEdge struct {
	from, to string
	attrs    map[string]string
}

// parsedDOT is what dotParse finds in a digraph.
type parsedDOT struct {
	nodes       map[string]map[string]string // declared nodes and their attributes
	edges       []dotEdge
	clusters    []string
	legendEdges int // edges between legend_ nodes
}

// verdictEdges returns the edges that are not the legend's.
func (p *parsedDOT) verdictEdges() []dotEdge {
	var out []dotEdge
	for _, e := range p.edges {
		if !strings.HasPrefix(e.from, "legend_") {
			out = append(out, e)
		}
	}
	return out
}

// dotTokens splits DOT text into tokens: quoted strings (kept with their
// quotes, escapes intact), identifiers, "->", and single punctuation.
func dotTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("offset %d: unterminated string", i)
			}
			toks = append(toks, s[i:j+1])
			i = j + 1
		case strings.HasPrefix(s[i:], "->"):
			toks = append(toks, "->")
			i += 2
		case strings.ContainsRune("{}[];=,", rune(c)):
			toks = append(toks, string(c))
			i++
		case c == '_' || c == '.' || c == '#' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '.' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("offset %d: unexpected %q", i, c)
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("offset %d: unexpected %q", i, c)
		}
	}
	return toks, nil
}

// dotParse checks the structure of a digraph (one "digraph NAME { ... }",
// balanced braces and brackets, statements that are attribute settings,
// node declarations or edge chains) and returns its nodes and edges.
func dotParse(s string) (*parsedDOT, error) {
	toks, err := dotTokens(s)
	if err != nil {
		return nil, err
	}
	if len(toks) < 3 || toks[0] != "digraph" || toks[2] != "{" {
		return nil, fmt.Errorf("does not start with \"digraph NAME {\"")
	}
	unq := func(t string) string { return strings.Trim(t, "\"") }
	p := &parsedDOT{nodes: map[string]map[string]string{}}
	i, depth := 3, 1
	attrList := func() (map[string]string, error) {
		attrs := map[string]string{}
		if i >= len(toks) || toks[i] != "[" {
			return attrs, nil
		}
		for i++; i < len(toks) && toks[i] != "]"; {
			if i+2 >= len(toks) || toks[i+1] != "=" {
				return nil, fmt.Errorf("token %d: malformed attribute near %q", i, toks[i])
			}
			attrs[toks[i]] = unq(toks[i+2])
			i += 3
			if i < len(toks) && (toks[i] == "," || toks[i] == ";") {
				i++
			}
		}
		if i >= len(toks) {
			return nil, fmt.Errorf("unterminated attribute list")
		}
		i++
		return attrs, nil
	}
	for i < len(toks) && depth > 0 {
		switch t := toks[i]; {
		case t == "}":
			depth--
			i++
		case t == ";":
			i++
		case t == "subgraph":
			if i+2 >= len(toks) || toks[i+2] != "{" {
				return nil, fmt.Errorf("token %d: subgraph without a name and '{'", i)
			}
			if strings.HasPrefix(toks[i+1], "cluster_") {
				p.clusters = append(p.clusters, toks[i+1])
			}
			depth++
			i += 3
		case t == "graph" || t == "node" || t == "edge":
			i++
			if _, err := attrList(); err != nil {
				return nil, err
			}
		case i+1 < len(toks) && toks[i+1] == "=":
			i += 3 // a graph attribute: key=value
		case i+1 < len(toks) && toks[i+1] == "->":
			chain := []string{unq(t)}
			i++
			for i+1 < len(toks) && toks[i] == "->" {
				chain = append(chain, unq(toks[i+1]))
				i += 2
			}
			attrs, err := attrList()
			if err != nil {
				return nil, err
			}
			for k := 1; k < len(chain); k++ {
				p.edges = append(p.edges, dotEdge{chain[k-1], chain[k], attrs})
			}
			if strings.HasPrefix(chain[0], "legend_") {
				p.legendEdges += len(chain) - 1
			}
		default:
			if strings.ContainsAny(t, "{}[]=,") {
				return nil, fmt.Errorf("token %d: unexpected %q", i, t)
			}
			i++
			attrs, err := attrList()
			if err != nil {
				return nil, err
			}
			p.nodes[unq(t)] = attrs
		}
	}
	if depth != 0 || i != len(toks) {
		return nil, fmt.Errorf("unbalanced braces (depth %d at token %d of %d)", depth, i, len(toks))
	}
	for _, e := range p.edges {
		for _, n := range []string{e.from, e.to} {
			if _, ok := p.nodes[n]; !ok {
				return nil, fmt.Errorf("edge %s -> %s: node %s is not declared", e.from, e.to, n)
			}
		}
	}
	return p, nil
}

// topoDOT draws a built-in model's tree as efap2p topo --dot does.
func topoDOT(t *testing.T, name string) (string, *parsedDOT) {
	t.Helper()
	m, err := models.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := p2p.ReleaseFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: rel})
	mx, err := devices.BuildMatrix(o, src)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteDOT(&b, o, src, mx, name); err != nil {
		t.Fatalf("topo --dot: %v", err)
	}
	out := b.String()
	p, err := dotParse(out)
	if err != nil {
		t.Fatalf("not a well-formed digraph: %v\n%s", err, out)
	}
	return out, p
}

// TestTopoDOTModels: for every built-in model the digraph is well formed,
// declares every accelerator and NIC, and, where graphviz is installed,
// renders to SVG without errors.
func TestTopoDOTModels(t *testing.T) {
	dotBin, _ := exec.LookPath("dot")
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			out, p := topoDOT(t, name)
			m, _ := models.Builtin(name)
			for _, f := range m.Functions() {
				if uint32(f.Class)>>16 != 0x02 && !pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)) {
					continue
				}
				id := strings.Trim(fnID(f.Addr), "\"")
				if _, ok := p.nodes[id]; !ok {
					t.Errorf("%s is not drawn", f.Addr)
				}
			}
			if !strings.Contains(out, "cluster_legend") || p.legendEdges != 4+3 || !strings.Contains(out, name+": ") {
				t.Errorf("no legend or no title")
			}
			if dotBin == "" {
				return
			}
			cmd := exec.Command(dotBin, "-Tsvg")
			cmd.Stdin = strings.NewReader(out)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil || strings.Contains(strings.ToLower(stderr.String()), "error") || !bytes.Contains(stdout.Bytes(), []byte("</svg>")) {
				t.Errorf("dot -Tsvg: %v\n%s", err, stderr.String())
			} else if stderr.Len() > 0 {
				t.Logf("dot -Tsvg warns: %s", stderr.String())
			}
		})
	}
	if dotBin == "" {
		t.Log("graphviz (dot) is not installed: rendering not checked")
	}
}

// TestTopoDOTP5: p5.48xlarge: two NUMA clusters, eight switch clusters,
// every GPU and EFA green, a bold green edge from every EFA to the GPU of
// its own switch (PIX), and no dashed edge (nothing is refused).
func TestTopoDOTP5(t *testing.T) {
	_, p := topoDOT(t, "p5.48xlarge")
	numa, switches := 0, 0
	for _, c := range p.clusters {
		switch {
		case strings.HasPrefix(c, "cluster_numa"):
			numa++
		case strings.HasPrefix(c, "cluster_f_"):
			switches++
		}
	}
	if numa != 2 || switches != 8 {
		t.Errorf("%d NUMA clusters and %d switch clusters, want 2 and 8", numa, switches)
	}
	groups := []struct{ gpu, efa0 int }{{0x53, 0x4f}, {0x64, 0x60}, {0x75, 0x71}, {0x86, 0x82}, {0x97, 0x93}, {0xa8, 0xa4}, {0xb9, 0xb5}, {0xca, 0xc6}}
	green := map[string]string{}
	for _, e := range p.verdictEdges() {
		if e.attrs["color"] == dotEdgeOK {
			green[e.from] = e.to + " " + e.attrs["xlabel"]
		}
		if e.attrs["style"] == "dashed" {
			t.Errorf("dashed edge %s -> %s", e.from, e.to)
		}
	}
	for _, g := range groups {
		gpu := fmt.Sprintf("f_0000_%02x_00_0", g.gpu)
		if p.nodes[gpu]["fillcolor"] != dotGreen {
			t.Errorf("GPU %02x: fill %s", g.gpu, p.nodes[gpu]["fillcolor"])
		}
		for k := 0; k < 4; k++ {
			nic := fmt.Sprintf("f_0000_%02x_00_0", g.efa0+k)
			if p.nodes[nic]["fillcolor"] != dotGreen {
				t.Errorf("EFA %02x: fill %s", g.efa0+k, p.nodes[nic]["fillcolor"])
			}
			if got, want := green[nic], gpu+" PIX"; got != want {
				t.Errorf("EFA %02x: green edge to %q, want %q", g.efa0+k, got, want)
			}
		}
	}
	if len(green) != 33 { // 32 EFAs and the ENA (to GPU 53 through the host bridges, NODE)
		t.Errorf("%d green edges, want 33", len(green))
	}
}

// TestTopoDOTRefusals: intel-acs-switch bounces every pair inside its
// switch (amdgpu, ACS redirect, non-whitelisted Intel host bridge): the
// devices are orange, the pairs under the switch get dashed orange edges,
// and the redirecting ports a red border; p4d.24xlarge draws the EFAs on
// the root buses with edges labelled PHB.
func TestTopoDOTRefusals(t *testing.T) {
	_, p := topoDOT(t, "intel-acs-switch")
	if p.nodes["f_0000_03_00_0"]["fillcolor"] != dotOrange || p.nodes["f_0000_04_00_0"]["fillcolor"] != dotOrange {
		t.Errorf("GPU 03 / EFA 04 not orange: %v %v", p.nodes["f_0000_03_00_0"], p.nodes["f_0000_04_00_0"])
	}
	dashed := 0
	for _, e := range p.verdictEdges() {
		if e.attrs["style"] == "dashed" && e.attrs["color"] == dotEdgeBo && e.attrs["xlabel"] == "bounced" {
			dashed++
		}
		if e.attrs["color"] == dotEdgeOK {
			t.Errorf("green edge %s -> %s", e.from, e.to)
		}
	}
	if dashed == 0 {
		t.Error("no dashed bounced edge")
	}
	if p.nodes["f_0000_02_00_0"]["color"] != "#c0392b" || !strings.Contains(p.nodes["f_0000_02_00_0"]["label"], "ACS redirect") {
		t.Errorf("downstream port 02:00.0: %v", p.nodes["f_0000_02_00_0"])
	}

	_, p = topoDOT(t, "p4d.24xlarge")
	found := false
	for _, e := range p.edges {
		if e.from == "f_0000_10_1b_0" && e.attrs["color"] == dotEdgeOK {
			found = e.attrs["xlabel"] == "PHB" && strings.HasPrefix(e.to, "f_0000_10_1")
		}
	}
	if !found {
		t.Error("p4d: no PHB edge from EFA 10:1b.0 to a GPU of its root bus")
	}
}

func TestDOTParseRejects(t *testing.T) {
	for _, bad := range []string{
		"digraph g { a -> b; }",         // undeclared
		"digraph g { a; b; a -> b; ",    // unbalanced
		"digraph g { a [label=\"x]; }",  // unterminated string
		"graph g { a; }",                // not a digraph
		"digraph g { a [label=x; b; }",  // unterminated attribute list
		"digraph g { subgraph { a; } }", // subgraph without a name
		"digraph g { a; } b;",           // after the graph
	} {
		if _, err := dotParse(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := dotParse("digraph g { graph [rankdir=LR]; subgraph cluster_x { label=\"x\"; a [label=\"a\\\"b\"]; } b; a -> b -> a [color=red]; }"); err != nil {
		t.Errorf("rejected a good graph: %v", err)
	}
}
