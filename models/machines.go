// SPDX-License-Identifier: MIT

package models

import (
	"embed"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed machines/*.json
var machineFiles embed.FS

// DefaultMachine is the model used when none is named.
const DefaultMachine = "p5.48xlarge"

// Builtin returns a fresh copy of an embedded model by name, or, for
// "synthetic-N", the synthetic machine of N PCI functions (Synthetic; N
// from 1 to MaxSynthetic).
func Builtin(name string) (*Machine, error) {
	if n, ok := strings.CutPrefix(name, "synthetic-"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > MaxSynthetic || strconv.Itoa(v) != n {
			return nil, fmt.Errorf("machine model %q: synthetic-N takes a number of PCI functions from 1 to %d", name, MaxSynthetic)
		}
		return Synthetic(v), nil
	}
	data, err := machineFiles.ReadFile(path.Join("machines", name+".json"))
	if err != nil {
		return nil, fmt.Errorf("no built-in machine model %q (have: %s, synthetic-N)", name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse(data, "machines/"+name+".json")
}

// MaxSynthetic is the largest synthetic machine Builtin makes.
const MaxSynthetic = 1 << 16

// BuiltinNames lists the embedded models, sorted.
func BuiltinNames() []string {
	ents, _ := machineFiles.ReadDir("machines")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// LoadFile reads a model from a file.
func LoadFile(name string) (*Machine, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return Parse(data, name)
}

// Title is the short title the model's description starts with, before
// its first ": " (the whole description when it has none early on):
// what efap2p sim list shows.
func (m *Machine) Title() string {
	if i := strings.Index(m.Description, ": "); i > 0 && i < 60 {
		return m.Description[:i]
	}
	return m.Description
}
