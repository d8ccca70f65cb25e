// SPDX-License-Identifier: MIT

package p2p

import (
	"runtime"
	"sync"
)

// Matrix holds the verdicts for every ordered pair of a set of functions,
// packed two bytes a pair: computed without building a Verdict (or a
// reason) per pair, for whole-machine views of thousands of functions.
type Matrix struct {
	Addrs []Addr
	cells []uint16 // row = provider index, column = client index
}

const (
	cellMapBits  = 2
	cellPathBits = 3
	cellPathPos  = cellMapBits
	cellDistPos  = cellMapBits + cellPathBits
)

// Cell returns the verdict summary for provider i and client j (indexes
// into Addrs).
func (m *Matrix) Cell(i, j int) (MapType, int, PathClass) {
	c := m.cells[i*len(m.Addrs)+j]
	return MapType(c & (1<<cellMapBits - 1)), int(c >> cellDistPos), PathClass(c >> cellPathPos & (1<<cellPathBits - 1))
}

// Matrix computes the kernel's verdict for every ordered pair of addrs. It
// reads each function's chain, ACS and attributes once, like Verdict, and
// agrees with Verdict on every pair; it does not fill the verdict cache.
func (o *Oracle) Matrix(addrs []Addr) (*Matrix, error) {
	t := o.topo
	n := len(addrs)
	if o.rules.HMAT {
		return o.matrixByVerdict(addrs)
	}
	fns := make([]*Function, n)
	for i, a := range addrs {
		f, err := t.Function(a)
		if err != nil {
			return nil, err
		}
		fns[i] = f
	}
	// Number every function on every chain, so that a pair's walk runs on
	// small integer arrays.
	ids := map[*Function]int32{}
	var nodes []*Function
	var id func(f *Function) int32
	id = func(f *Function) int32 {
		if f == nil {
			return -1
		}
		if v, ok := ids[f]; ok {
			return v
		}
		id(f.Upstream)
		v := int32(len(nodes))
		ids[f] = v
		nodes = append(nodes, f)
		return v
	}
	idx := make([]int32, n)
	for i, f := range fns {
		idx[i] = id(f)
	}
	g := &matrixGraph{
		parent: make([]int32, len(nodes)),
		depth:  make([]int16, len(nodes)),
		redir:  make([]int16, len(nodes)),
		unk:    make([]int16, len(nodes)),
		root:   make([]int32, len(nodes)),
		numa:   make([]int32, len(nodes)),
	}
	roots := map[RootBus]int32{}
	var rootList []RootBus
	for i, f := range nodes { // parents come before children
		p := id(f.Upstream)
		g.parent[i] = p
		g.depth[i] = int16(f.Depth)
		acs := f.ACS()
		var r, u int16
		if !acs.Known {
			u = 1
		} else if acs.Redirects() {
			r = 1
		}
		if p >= 0 {
			r += g.redir[p]
			u += g.unk[p]
		}
		g.redir[i], g.unk[i] = r, u
		rid, ok := roots[f.Root]
		if !ok {
			rid = int32(len(rootList))
			roots[f.Root] = rid
			rootList = append(rootList, f.Root)
		}
		g.root[i] = rid
		g.numa[i] = -1
	}
	for i := range fns {
		g.numa[idx[i]] = int32(fns[i].NUMANode())
	}
	// The host-bridge outcome depends only on the two root buses.
	hostOK := make([]bool, len(rootList)*len(rootList))
	for a := range rootList {
		for b := range rootList {
			hostOK[a*len(rootList)+b] = t.hostBridgeAllows(o.rules, rootList[a], rootList[b])
		}
	}
	g.hostOK, g.nroots = hostOK, len(rootList)

	m := &Matrix{Addrs: append([]Addr(nil), addrs...), cells: make([]uint16, n*n)}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	rows := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rows {
				row := m.cells[i*n : (i+1)*n]
				for j := range row {
					row[j] = g.cell(idx[i], idx[j])
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		rows <- i
	}
	close(rows)
	wg.Wait()
	o.stubCells(m)
	return m, nil
}

// stubCells turns every cell into the stub's NOT_SUPPORTED on a kernel
// built without PCI_P2PDMA (the distance and path stay, as in Verdict).
func (o *Oracle) stubCells(m *Matrix) {
	if o.kconfig().P2PDMA != BuiltNo {
		return
	}
	for i, c := range m.cells {
		m.cells[i] = c&^(1<<cellMapBits-1) | uint16(MapNotSupported)
	}
}

// matrixByVerdict fills the matrix from the kernel rule pair by pair,
// without the cache: the rules of the HMAT series decide ACS per port and
// per egress port, which the packed walk does not model.
func (o *Oracle) matrixByVerdict(addrs []Addr) (*Matrix, error) {
	t := o.topo
	fns := make([]*Function, len(addrs))
	for i, a := range addrs {
		f, err := t.Function(a)
		if err != nil {
			return nil, err
		}
		fns[i] = f
	}
	m := &Matrix{Addrs: append([]Addr(nil), addrs...), cells: make([]uint16, len(addrs)*len(addrs))}
	for i, p := range fns {
		for j, c := range fns {
			v := t.computeVerdict(o.rules, p, c, false)
			m.cells[i*len(addrs)+j] = uint16(v.MapType) | uint16(v.Path)<<cellPathPos | uint16(v.Distance)<<cellDistPos
		}
	}
	o.stubCells(m)
	return m, nil
}

type matrixGraph struct {
	parent     []int32
	depth      []int16
	redir, unk []int16 // ACS redirect / unknown counts from a node up to its root
	root       []int32
	numa       []int32
	hostOK     []bool
	nroots     int
}

func (g *matrixGraph) cell(p, c int32) uint16 {
	a, b := p, c
	for g.depth[a] > g.depth[b] {
		a = g.parent[a]
	}
	for g.depth[b] > g.depth[a] {
		b = g.parent[b]
	}
	for a != b && a >= 0 && b >= 0 {
		a, b = g.parent[a], g.parent[b]
	}
	var mt MapType
	var dist int
	var path PathClass
	hostOK := g.hostOK[int(g.root[p])*g.nroots+int(g.root[c])]
	if a < 0 || a != b {
		dist = int(g.depth[p]) + 1 + int(g.depth[c]) + 1
		mt = MapThruHostBridge
		if !hostOK {
			mt = MapNotSupported
		}
		switch {
		case g.root[p] == g.root[c]:
			path = PathPHB
		case g.numa[p] >= 0 && g.numa[p] == g.numa[c]:
			path = PathNODE
		default:
			path = PathSYS
		}
	} else {
		lca := a
		dp, dc := int(g.depth[p]-g.depth[lca]), int(g.depth[c]-g.depth[lca])
		dist = dp + dc
		above := int16(0)
		aboveU := int16(0)
		if q := g.parent[lca]; q >= 0 {
			above, aboveU = g.redir[q], g.unk[q]
		}
		// Provider side up to and including the ancestor, client side below it.
		redir := g.redir[p] - above + g.redir[c] - g.redir[lca]
		unk := g.unk[p] - aboveU + g.unk[c] - g.unk[lca]
		switch {
		case redir == 0 && unk == 0:
			mt = MapBusAddr
		case hostOK:
			mt = MapThruHostBridge
		default:
			mt = MapNotSupported
		}
		switch {
		case p == c:
			path = PathLOC
		case dp <= 2 && dc <= 2:
			path = PathPIX
		default:
			path = PathPXB
		}
	}
	return uint16(mt) | uint16(path)<<cellPathPos | uint16(dist)<<cellDistPos
}
