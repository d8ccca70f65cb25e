// SPDX-License-Identifier: MIT

// Command nfdlabels reads a node-feature-discovery feature file as NFD's
// local source does, checks every label with Kubernetes' rules
// (nodecheck.ParseNFD) and prints the labels, sorted, one name=value a
// line; a bad label exits 1 naming its line. ctests/fleet/fleet.sh runs it.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/efap2p/efap2p/nodecheck"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nfdlabels FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	labels, err := nodecheck.ParseNFD(string(data))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Printf("%s=%s\n", n, labels[n])
	}
}
