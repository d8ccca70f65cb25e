// SPDX-License-Identifier: MIT

package models

// The machine's CPUs and NUMA nodes as the kernel shows them
// (devices/system/cpu, devices/system/node), and each PCI function's
// local CPUs: what lstopo, NCCL and `efap2p topo`'s CPU Affinity read.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// defaultNodeMemoryGiB is a NUMA node's memory when the model gives none.
const defaultNodeMemoryGiB = 16

// maxCPUs bounds a model's logical CPUs (the kernel's NR_CPUS on x86 is
// 8192).
const maxCPUs = 8192

// cpuLayout is where the logical CPUs are: numbered as Linux numbers them
// on x86, the first thread of every core first (node by node), then the
// second threads in the same order, so that a node of a 2-way SMT machine
// holds two ranges ("0-47,96-143").
type cpuLayout struct {
	nodes, threads, coresPerNode int
	sockets                      int
}

// layout works out the CPU layout: the NUMA nodes are those the PCI
// functions name and the sockets, the CPUs spread evenly over them.
func (m *Machine) layout() cpuLayout {
	nodes := max(m.CPU.Sockets, 1)
	for _, f := range m.fns {
		nodes = max(nodes, f.numaNode+1)
	}
	threads := max(m.CPU.ThreadsPerCore, 1)
	cpus := m.CPU.CPUs
	if cpus == 0 {
		cpus = 2 * nodes * threads
	}
	return cpuLayout{nodes: nodes, threads: threads, coresPerNode: cpus / threads / nodes, sockets: max(m.CPU.Sockets, 1)}
}

func (l cpuLayout) cpus() int { return l.nodes * l.coresPerNode * l.threads }

// cpu is the number of thread t of core k of node n.
func (l cpuLayout) cpu(n, k, t int) int { return t*l.nodes*l.coresPerNode + n*l.coresPerNode + k }

// nodeCPUs lists the CPUs of node n, in order.
func (l cpuLayout) nodeCPUs(n int) []int {
	var out []int
	for t := 0; t < l.threads; t++ {
		for k := 0; k < l.coresPerNode; k++ {
			out = append(out, l.cpu(n, k, t))
		}
	}
	return out
}

// socket is the package node n is on.
func (l cpuLayout) socket(n int) int { return n * l.sockets / l.nodes }

// validateCPUs checks the CPU count against the nodes and threads.
func (m *Machine) validateCPUs() error {
	c := &m.CPU
	if c.ThreadsPerCore < 0 || c.ThreadsPerCore > 8 {
		return at([]any{"cpu", "threads_per_core"}, "cpu: threads_per_core %d (want 1 to 8)", c.ThreadsPerCore)
	}
	l := m.layout()
	if c.CPUs < 0 || c.CPUs > maxCPUs || c.CPUs != 0 && (l.coresPerNode == 0 || l.cpus() != c.CPUs) {
		return at([]any{"cpu", "cpus"}, "cpu: cpus %d: want a multiple of the %d NUMA nodes times %d threads per core, at most %d",
			c.CPUs, l.nodes, l.threads, maxCPUs)
	}
	return nil
}

// cpuList writes CPU numbers as the kernel's cpulist files do: "0-47,96-143".
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cpuMask writes CPU numbers as the kernel's cpumap files do: nbits bits
// in 32-bit hex words, the most significant first, comma-separated; the
// first word as wide as its bits need.
func cpuMask(cpus []int, nbits int) string {
	words := make([]uint32, (nbits+31)/32)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		width := 8
		if i == len(words)-1 && nbits%32 != 0 {
			width = (nbits%32 + 3) / 4
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%0*x", width, words[i])
	}
	return b.String()
}

// cpus writes devices/system/cpu/cpuN with their topology, and
// devices/system/node/nodeN with their CPUs and memory.
func (w *treeWriter) cpus() {
	l := w.lay
	all := make([]int, l.cpus())
	for i := range all {
		all[i] = i
	}
	n := len(all)
	cpuDir := filepath.Join(w.dir, "devices/system/cpu")
	nodeDir := filepath.Join(w.dir, "devices/system/node")
	for _, f := range []string{"online", "possible", "present"} {
		w.file(filepath.Join(cpuDir, f), cpuList(all)+"\n")
	}
	nodes := make([]int, l.nodes)
	for i := range nodes {
		nodes[i] = i
	}
	w.mkdir(nodeDir)
	for _, f := range []string{"online", "possible", "has_cpu", "has_memory", "has_normal_memory"} {
		w.file(filepath.Join(nodeDir, f), cpuList(nodes)+"\n")
	}
	mem := w.m.Host.MemoryGiB / l.nodes
	if w.m.Host.MemoryGiB == 0 {
		mem = defaultNodeMemoryGiB
	}
	for node := 0; node < l.nodes; node++ {
		d := filepath.Join(nodeDir, fmt.Sprintf("node%d", node))
		w.mkdir(d)
		local := w.nodeCPUs[node]
		w.file(filepath.Join(d, "cpulist"), cpuList(local)+"\n")
		w.file(filepath.Join(d, "cpumap"), cpuMask(local, n)+"\n")
		kb := mem << 20
		w.file(filepath.Join(d, "meminfo"), fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB\n",
			node, kb, node, kb, node, 0))
		dist := make([]string, l.nodes)
		for o := range dist {
			dist[o] = "32"
			if o == node {
				dist[o] = "10"
			}
		}
		w.file(filepath.Join(d, "distance"), strings.Join(dist, " ")+"\n")
		for _, c := range local {
			w.link(filepath.Join(d, fmt.Sprintf("cpu%d", c)), filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c)))
		}
	}
	for node := 0; node < l.nodes; node++ {
		pkg := l.socket(node)
		var pkgCPUs []int
		for o := 0; o < l.nodes; o++ {
			if l.socket(o) == pkg {
				pkgCPUs = append(pkgCPUs, l.nodeCPUs(o)...)
			}
		}
		slices.Sort(pkgCPUs)
		for k := 0; k < l.coresPerNode; k++ {
			var siblings []int
			for t := 0; t < l.threads; t++ {
				siblings = append(siblings, l.cpu(node, k, t))
			}
			for _, c := range siblings {
				d := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c))
				top := filepath.Join(d, "topology")
				w.mkdir(top)
				if c != 0 {
					// cpu0 cannot be taken offline: it has no online file
					w.file(filepath.Join(d, "online"), "1\n")
				}
				for _, a := range [][2]string{
					{"physical_package_id", fmt.Sprint(pkg)},
					{"die_id", "0"},
					{"core_id", fmt.Sprint(k + (node-firstNodeOf(l, pkg))*l.coresPerNode)},
					{"thread_siblings", cpuMask(siblings, n)}, {"thread_siblings_list", cpuList(siblings)},
					{"core_cpus", cpuMask(siblings, n)}, {"core_cpus_list", cpuList(siblings)},
					{"core_siblings", cpuMask(pkgCPUs, n)}, {"core_siblings_list", cpuList(pkgCPUs)},
					{"package_cpus", cpuMask(pkgCPUs, n)}, {"package_cpus_list", cpuList(pkgCPUs)},
					{"die_cpus", cpuMask(pkgCPUs, n)}, {"die_cpus_list", cpuList(pkgCPUs)},
				} {
					w.file(filepath.Join(top, a[0]), a[1]+"\n")
				}
				w.link(filepath.Join(d, fmt.Sprintf("node%d", node)), filepath.Join(nodeDir, fmt.Sprintf("node%d", node)))
			}
		}
	}
}

// sortedNodeCPUs lists each node's CPUs in increasing order.
func (l cpuLayout) sortedNodeCPUs() [][]int {
	out := make([][]int, l.nodes)
	for n := range out {
		out[n] = l.nodeCPUs(n)
		slices.Sort(out[n])
	}
	return out
}

// firstNodeOf is the first NUMA node on package pkg.
func firstNodeOf(l cpuLayout, pkg int) int {
	for n := 0; n < l.nodes; n++ {
		if l.socket(n) == pkg {
			return n
		}
	}
	return 0
}

// localCPUs writes a function's local_cpus and local_cpulist: its node's
// CPUs, or every CPU when its node is unknown (-1), as the kernel does.
func (w *treeWriter) localCPUs(d string, f *Function) {
	n := w.lay.cpus()
	var local []int
	if node := f.NUMA(); node >= 0 && node < w.lay.nodes {
		local = w.nodeCPUs[node]
	} else {
		for c := 0; c < n; c++ {
			local = append(local, c)
		}
	}
	w.file(filepath.Join(d, "local_cpus"), cpuMask(local, n)+"\n")
	w.file(filepath.Join(d, "local_cpulist"), cpuList(local)+"\n")
}
