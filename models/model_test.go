// SPDX-License-Identifier: MIT

package models

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/internal/pciclass"
	"github.com/efap2p/efap2p/p2p"
)

// tinyModel is a small valid model; the malformed cases below each break
// one line of it.
const tinyModel = `{
  "format": 1,
  "name": "tiny",
  "description": "test",
  "cpu": {"arch": "x86", "vendor": "AMD", "family": "19"},
  "root_buses": [
    {"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
      {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "1022", "device": "1480", "class": "060000"},
      {"addr": "0000:00:01.1", "kind": "root_port", "vendor": "1022", "device": "1483", "class": "060400",
       "acs": {"capability": ["SV", "RR"], "control": ["RR"]},
       "children": [
        {"addr": "0000:01:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "efa": {}},
        {"addr": "0000:01:00.1", "kind": "endpoint", "vendor": "1002", "device": "740f", "class": "038000", "driver": "amdgpu"}
      ]}
    ]}
  ],
  "expected": [
    {"providers": ["0000:01:00.1"], "clients": ["0000:01:00.0"], "map_type": "THRU_HOST_BRIDGE", "distance": 2, "acs_redirect": ["0000:00:01.1"], "outcome": "p2p", "policy": "amdgpu", "why": "hand"}
  ]
}
`

func TestTinyModelParses(t *testing.T) {
	m, err := Parse([]byte(tinyModel), "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Functions()); got != 4 {
		t.Errorf("%d functions, want 4", got)
	}
	if p := m.Function(p2p.MustParseAddr("0000:01:00.1")).Parent(); p == nil || p.Addr != p2p.MustParseAddr("0000:00:01.1") {
		t.Errorf("parent of 01:00.1 is %v", p)
	}
}

// TestParseErrors breaks the tiny model one way at a time: each error must
// wrap ErrModel and name the file and the line of the fault.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name     string
		old, new string
		line     int
		want     string
	}{
		{"syntax error", `"name": "tiny",`, `"name": "tiny"`, 4, "invalid character"},
		{"unknown field", `"description": "test"`, `"dscription": "test"`, 4, `unknown field "dscription"`},
		{"unknown field nested", `"numa_node": 0, "functions"`, `"numa": 0, "functions"`, 7, `unknown field "numa"`},
		{"unknown kind", `"endpoint", "vendor": "1002"`, `"gpu", "vendor": "1002"`, 13, `unknown kind "gpu"`},
		{"duplicate address", `"0000:01:00.1", "kind"`, `"0000:01:00.0", "kind"`, 13, "listed twice"},
		{"child on the wrong bus", `"0000:01:00.1", "kind"`, `"0000:02:00.1", "kind"`, 13, "expected on bus 0000:01"},
		{"child on the parent's bus", `"0000:01:00.0", "kind"`, `"0000:00:05.0", "kind"`, 12, "secondary bus 00 must be above bus 00"},
		{"unknown ACS bit", `"control": ["RR"]`, `"control": ["RX"]`, 10, `unknown ACS bit "RX"`},
		{"ACS on a conventional function", `"control": ["RR"]}`, `"control": ["RR"]}, "config_size": 256`, 10, "ACS needs extended config space"},
		{"expected names a missing function", `"clients": ["0000:01:00.0"]`, `"clients": ["0000:01:00.3"]`, 18, "0000:01:00.3 is not a function of the model"},
		{"acs_redirect names a missing function", `"acs_redirect": ["0000:00:01.1"]`, `"acs_redirect": ["0000:00:01.2"]`, 18, "0000:00:01.2 is not a function"},
		{"unsupported format", `"format": 1`, `"format": 2`, 2, "format 2 is not supported"},
		{"bad address", `"0000:01:00.1", "kind"`, `"0000:01:00.9", "kind"`, 13, "not a PCI address"},
		{"bad hex", `"device": "740f"`, `"device": "74zz"`, 13, `"74zz" is not a hex number`},
		{"unknown map type", `"THRU_HOST_BRIDGE"`, `"THRU"`, 18, `unknown map type "THRU"`},
		{"type error", `"distance": 2`, `"distance": "2"`, 18, "cannot unmarshal"},
		{"negative distance", `"distance": 2`, `"distance": -1`, 18, "not the kernel's -1"},
		{"missing why", `"why": "hand"`, `"why": ""`, 18, "say why"},
		{"unknown outcome", `"outcome": "p2p"`, `"outcome": "maybe"`, 18, `outcome "maybe"`},
		{"unknown policy", `"policy": "amdgpu"`, `"policy": "rocm"`, 18, `policy "rocm"`},
		{"amdgpu outcome inconsistent", `"outcome": "p2p"`, `"outcome": "refused"`, 18, "amdgpu with THRU_HOST_BRIDGE"},
		{"unknown cpu vendor", `"vendor": "AMD"`, `"vendor": "VIA"`, 5, `vendor "VIA"`},
		{"EFA that is not Amazon's", `"vendor": "1d0f", "device": "efa1"`, `"vendor": "15b3", "device": "efa1"`, 12, "an EFA NIC is an Amazon"},
		{"children of an endpoint", `"class": "020000", "efa": {}}`, `"class": "020000", "efa": {}, "children": [{"addr": "0000:02:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000"}]}`, 12, "has no secondary bus"},
		{"null child", `"children": [`, `"children": [null,`, 11, "null function"},
		{"bus owned twice", `{"addr": "0000:00:00.0", "kind": "host_bridge"`, `{"addr": "0000:00:02.0", "kind": "root_port", "vendor": "1022", "device": "1483", "class": "060400", "children": [{"addr": "0000:01:00.4", "kind": "endpoint", "vendor": "1", "device": "2", "class": "3"}]}, {"addr": "0000:00:00.0", "kind": "host_bridge"`, 12, "already the bus of 0000:00:02.0"},
		{"data after the model", "\n}\n", "\n}\n{}", 21, "data after the model"},
		{"ext_caps without ACS", `"control": ["RR"]}`, `"control": ["RR"]}, "ext_caps": ["AER"]`, 10, "ext_caps does not list ACS"},
		{"ext_caps unknown", `"control": ["RR"]}`, `"control": ["RR"]}, "ext_caps": ["AER", "ACS", "FOO"]`, 10, `unknown extended capability "FOO"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(tinyModel, c.old) {
				t.Fatalf("the tiny model has no %q", c.old)
			}
			data := strings.Replace(tinyModel, c.old, c.new, 1)
			_, err := Parse([]byte(data), "bad.json")
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !errors.Is(err, ErrModel) {
				t.Errorf("error does not wrap ErrModel: %v", err)
			}
			prefix := fmt.Sprintf("%v: bad.json:%d: ", ErrModel, c.line)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestVFBuses(t *testing.T) {
	vfs := `"class": "038000", "driver": "amdgpu", "vfs": [{"addr": "0000:01:00.2", "kind": "endpoint", "vendor": "1002", "device": "7410", "class": "038000"}, {"addr": "0000:02:00.0", "kind": "endpoint", "vendor": "1002", "device": "7410", "class": "038000"}]}`
	data := strings.Replace(tinyModel, `"class": "038000", "driver": "amdgpu"}`, vfs, 1)
	m, err := Parse([]byte(data), "vfs.json")
	if err != nil {
		t.Fatal(err)
	}
	vf := m.Function(p2p.MustParseAddr("0000:02:00.0"))
	if vf == nil || vf.PhysFn() == nil || vf.Parent().Addr != p2p.MustParseAddr("0000:00:01.1") {
		t.Fatalf("VF on bus 02: physfn or parent wrong: %+v", vf)
	}
	// A VF's bus is a virtual bus of its PF's parent: no bridge may claim it.
	bad := strings.Replace(data, `"0000:02:00.0"`, `"0000:00:02.0"`, 1)
	if _, err := Parse([]byte(bad), "vfs.json"); err == nil || !strings.Contains(err.Error(), "below its PF") {
		t.Errorf("VF below its PF's bus: %v", err)
	}
}

// TestBuiltinModels checks every embedded model: it parses, its name is its
// file name, it says what it is and where it comes from, every expected
// entry reasons by hand, and every accelerator -> EFA pair names the
// exporter policy and its outcome.
func TestBuiltinModels(t *testing.T) {
	names := BuiltinNames()
	if len(names) < 9 {
		t.Errorf("only %d built-in models: %v", len(names), names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != name {
				t.Errorf("model %q is in file %s.json", m.Name, name)
			}
			if m.Description == "" || m.Provenance == "" {
				t.Error("a built-in model needs a description and a provenance")
			}
			pairs := m.Pairs()
			if len(pairs) == 0 {
				t.Fatal("no expected verdicts")
			}
			seen := map[[2]p2p.Addr]bool{}
			for _, p := range pairs {
				k := [2]p2p.Addr{p.Provider, p.Client}
				if seen[k] {
					t.Errorf("pair %s -> %s is expected twice", p.Provider, p.Client)
				}
				seen[k] = true
				if len(p.Why) < 40 {
					t.Errorf("%s -> %s: why %q is too short to show the reasoning", p.Provider, p.Client, p.Why)
				}
				if p.Path == p2p.PathUnknown {
					t.Errorf("%s -> %s: no path class", p.Provider, p.Client)
				}
				prov, cl := m.Function(p.Provider), m.Function(p.Client)
				if isAccel(prov) && cl.EFA != nil && (p.Policy == p2p.PolicyUnknown || p.Outcome == "") {
					t.Errorf("%s -> %s: an accelerator -> EFA pair needs policy and outcome", p.Provider, p.Client)
				}
			}
		})
	}
}

func isAccel(f *Function) bool {
	base := uint32(f.Class) >> 16
	return base == 0x03 || base == 0x12 || pciclass.IsNeuron(uint16(f.Vendor), uint16(f.Device))
}

// TestIntelACSSwitchNoGPUReachable holds intel-acs-switch to its promise:
// every GPU x EFA pair is listed, and none is true P2P.
func TestIntelACSSwitchNoGPUReachable(t *testing.T) {
	m, err := Builtin("intel-acs-switch")
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]p2p.Addr]string{}
	for _, p := range m.Pairs() {
		got[[2]p2p.Addr{p.Provider, p.Client}] = p.ExpectedOutcome()
	}
	n := 0
	for _, g := range m.Functions() {
		if !isAccel(g) {
			continue
		}
		for _, e := range m.EFANICs() {
			n++
			out, ok := got[[2]p2p.Addr{g.Addr, e.Addr}]
			switch {
			case !ok:
				t.Errorf("GPU %s -> EFA %s is not listed", g.Addr, e.Addr)
			case out == OutcomeP2P:
				t.Errorf("GPU %s -> EFA %s is p2p", g.Addr, e.Addr)
			}
		}
	}
	if n == 0 {
		t.Fatal("no GPU x EFA pair")
	}
}

// TestBuiltinRoundTrip: a parsed model marshals to a model that parses to
// the same functions and pairs.
func TestBuiltinRoundTrip(t *testing.T) {
	for _, name := range BuiltinNames() {
		m, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, m)
	}
}

func roundTrip(t *testing.T, m *Machine) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatalf("%s: marshal: %v", m.Name, err)
	}
	m2, err := Parse(b, m.Name+" (marshaled)")
	if err != nil {
		t.Fatalf("%s: the marshaled model does not parse: %v", m.Name, err)
	}
	if len(m2.Functions()) != len(m.Functions()) || len(m2.Pairs()) != len(m.Pairs()) {
		t.Fatalf("%s: round trip changed the model", m.Name)
	}
}

var lineRE = regexp.MustCompile(`^malformed machine model: fuzz\.json:[0-9]+: `)

// FuzzParse: no input makes Parse panic; every error wraps ErrModel and
// names the file and a line; a model that parses builds its config spaces
// and its EFA attributes (sim's FuzzEmulatorConfig, its emulator
// configuration), and survives a marshal round trip.
func FuzzParse(f *testing.F) {
	f.Add([]byte(tinyModel))
	for _, name := range BuiltinNames() {
		data, err := machineFiles.ReadFile("machines/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"format": 1, "name": "x", "cpu": {"arch": "arm64"}, "root_buses": [{"domain": "0", "bus": "0", "functions": [{"addr": "0000:00:00.0", "kind": "endpoint", "vendor": "1", "device": "2", "class": "3", "children": [null]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrModel) || !lineRE.MatchString(err.Error()) {
				t.Fatalf("error without ErrModel, file or line: %v", err)
			}
			return
		}
		for _, fn := range m.Functions() {
			m.ConfigSpace(fn)
		}
		for _, nic := range m.EFANICs() {
			if at, err := m.EFAAttrsOn(nic, 1); err == nil {
				_, _ = at.KernelCaps()
			}
		}
		_ = m.Pairs()
		roundTrip(t, m)
	})
}
