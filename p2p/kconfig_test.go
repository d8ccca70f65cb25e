// SPDX-License-Identifier: MIT

package p2p_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

func TestParseKernelConfig(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("CONFIG_PCI=y\nCONFIG_PCI_P2PDMA=y\n"))
	zw.Close()
	for _, tc := range []struct {
		name string
		data string
		want p2p.Built
		err  bool
	}{
		{"built", "# comment\nCONFIG_64BIT=y\nCONFIG_PCI_P2PDMA=y\n", p2p.BuiltYes, false},
		{"not set", "CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\n", p2p.BuiltNo, false},
		{"absent: dependencies not met", "CONFIG_PCI=y\n# CONFIG_ZONE_DEVICE is not set\n", p2p.BuiltNo, false},
		{"gzipped, as /proc/config.gz", gz.String(), p2p.BuiltYes, false},
		{"empty", "", 0, true},
		{"comments only", "# just a note\n", 0, true},
		{"not a config", "hello world\n", 0, true},
		{"broken gzip", "\x1f\x8bnot really", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := p2p.ParseKernelConfig([]byte(tc.data), "test")
			if tc.err {
				if err == nil || !errors.Is(err, p2p.ErrNotKernelConfig) {
					t.Fatalf("ParseKernelConfig = %+v, %v; want ErrNotKernelConfig", k, err)
				}
				return
			}
			if err != nil || k.P2PDMA != tc.want || k.Source != "test" {
				t.Fatalf("ParseKernelConfig = %+v, %v; want %s from test", k, err, tc.want)
			}
		})
	}
}

// TestRunningKernelConfig: the cheap sources first, kallsyms last, and
// "unknown" with every reason when none answers.
func TestRunningKernelConfig(t *testing.T) {
	rel, err := p2p.RunningRelease()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gz := filepath.Join(dir, "config.gz")
	boot := filepath.Join(dir, "boot")
	os.Mkdir(boot, 0o755)
	syms := filepath.Join(dir, "kallsyms")
	defer p2p.SetKernelConfigPlacesForTest(gz, boot, syms)()

	k := p2p.RunningKernelConfig()
	if k.P2PDMA != p2p.BuiltUnknown || !strings.Contains(k.Source, "absent") {
		t.Fatalf("nothing readable: %+v, want unknown naming what was tried", k)
	}
	// kallsyms: the names count, addresses zeroed as without privileges.
	write("kallsyms", "0000000000000000 T start_kernel\n0000000000000000 t foo\t[mod]\n")
	if k := p2p.RunningKernelConfig(); k.P2PDMA != p2p.BuiltNo || !strings.Contains(k.Source, "does not list pci_p2pdma_distance_many") {
		t.Errorf("kallsyms without the symbol: %+v", k)
	}
	write("kallsyms", "0000000000000000 T start_kernel\n0000000000000000 T pci_p2pdma_distance_many\n")
	if k := p2p.RunningKernelConfig(); k.P2PDMA != p2p.BuiltYes {
		t.Errorf("kallsyms with the symbol: %+v", k)
	}
	write("kallsyms", "")
	if k := p2p.RunningKernelConfig(); k.P2PDMA != p2p.BuiltUnknown {
		t.Errorf("an empty kallsyms tells nothing: %+v", k)
	}
	// /boot/config-$(uname -r) before kallsyms, /proc/config.gz before both.
	write("boot/config-"+rel.String(), "# CONFIG_PCI_P2PDMA is not set\n")
	write("kallsyms", "0000000000000000 T pci_p2pdma_distance_many\n")
	if k := p2p.RunningKernelConfig(); k.P2PDMA != p2p.BuiltNo || !strings.HasSuffix(k.Source, "config-"+rel.String()) {
		t.Errorf("/boot/config: %+v", k)
	}
	write("config.gz", "CONFIG_PCI_P2PDMA=y\n")
	if k := p2p.RunningKernelConfig(); k.P2PDMA != p2p.BuiltYes || k.Source != gz {
		t.Errorf("/proc/config.gz: %+v", k)
	}
}

// TestNoP2PDMAVerdicts: p5.48xlarge on a kernel without PCI_P2PDMA. The
// H100 53:00.0 and the EFA 4f:00.0 share the switch port 45:00.0 (BUS_ADDR,
// distance 4, with p2pdma); the kernel now says NOT_SUPPORTED, and NVIDIA's
// exporter, which never asks p2pdma, still allows it (a passthrough VM):
// the NIC keeps true P2P. Unknown leaves the verdict a p2pdma kernel's.
func TestNoP2PDMAVerdicts(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	no := p2p.KernelConfigOf(false, "a test")
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8"), KernelConfig: &no})
	v, err := o.Verdict(p5GPU, p5NIC)
	if err != nil {
		t.Fatal(err)
	}
	if v.MapType != p2p.MapNotSupported || v.KernelDistance() != -1 || v.Distance != 4 || v.Rule != p2p.RuleNoP2PDMA ||
		v.Outcome != p2p.OutcomeP2P || v.Policy != p2p.PolicyNVIDIA || v.KernelP2PDMA != p2p.BuiltNo || !v.Certain {
		t.Fatalf("got %s %d (%d) rule %s outcome %s policy %s p2pdma %s certain %v", v.MapType, v.Distance, v.KernelDistance(), v.Rule, v.Outcome, v.Policy, v.KernelP2PDMA, v.Certain)
	}
	for _, want := range []string{"built without PCI_P2PDMA (a test)", "would answer BUS_ADDR (distance 4)", "never asks p2pdma"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, v.Reason)
		}
	}
	if !strings.Contains(v.Hint, "CONFIG_PCI_P2PDMA=y") {
		t.Errorf("hint %q", v.Hint)
	}
	ok, _, err := o.ReachesAccelerator(p5NIC)
	if err != nil || !ok {
		t.Errorf("ReachesAccelerator = %v, %v; NVIDIA's exporter does not ask p2pdma", ok, err)
	}
	mx, err := o.Matrix([]p2p.Addr{p5GPU, p5NIC})
	if err != nil {
		t.Fatal(err)
	}
	if mt, d, _ := mx.Cell(0, 1); mt != p2p.MapNotSupported || d != 4 {
		t.Errorf("matrix cell %s %d, want NOT_SUPPORTED 4 as Verdict", mt, d)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), `"kernel_p2pdma":"n"`) {
		t.Errorf("JSON lacks kernel_p2pdma: %s", b)
	}

	// A tree that is not /sys, no configuration given: unknown, and the
	// verdict is a p2pdma kernel's.
	u := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8")})
	if k := u.KernelConfig(); k.P2PDMA != p2p.BuiltUnknown || !strings.Contains(k.Source, "not this machine's /sys") {
		t.Errorf("KernelConfig = %+v, want unknown with its reason", k)
	}
	w, err := u.Verdict(p5GPU, p5NIC)
	if err != nil {
		t.Fatal(err)
	}
	if w.MapType != p2p.MapBusAddr || w.KernelP2PDMA != p2p.BuiltUnknown {
		t.Errorf("unknown config: %s, p2pdma %s; want BUS_ADDR, unknown", w.MapType, w.KernelP2PDMA)
	}
}

// TestNoP2PDMANeuron: trn2.48xlarge's Neuron exporter lets any importer
// attach without p2pdma, so a kernel without it changes nothing but the
// kernel's own map type.
func TestNoP2PDMANeuron(t *testing.T) {
	m, dir := writeModel(t, "trn2.48xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	no := p2p.KernelConfigOf(false, "a test")
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: m.KernelRelease(), KernelConfig: &no})
	checked := 0
	for _, p := range m.Pairs() {
		if p.Policy != p2p.PolicyNeuron {
			continue
		}
		v, err := o.Verdict(p.Provider, p.Client)
		if err != nil {
			t.Fatal(err)
		}
		if v.MapType != p2p.MapNotSupported || v.Outcome != p2p.OutcomeP2P {
			t.Errorf("%s -> %s: %s %s; want NOT_SUPPORTED, p2p", p.Provider, p.Client, v.MapType, v.Outcome)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("trn2.48xlarge lists no Neuron pair")
	}
}

// TestTopologyFileRecordsKernelConfig: export records what it knew of the
// kernel's configuration, and a reader that cannot tell takes it from the
// file; a file that records "unknown" is malformed.
func TestTopologyFileRecordsKernelConfig(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	no := p2p.KernelConfigOf(false, "/boot/config-6.8.0-1021-aws")
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8.0-1021-aws"), KernelConfig: &no})
	tf := p2p.NewTopologyFile("test")
	v, err := o.Verdict(p5GPU, p5NIC)
	if err != nil {
		t.Fatal(err)
	}
	tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance, Path: v.Path, Policy: v.Policy, Outcome: v.Outcome})
	if err := tf.RecordMachine(o, false); err != nil {
		t.Fatal(err)
	}
	if k := tf.Machine.KernelConfig; k == nil || k.P2PDMA != p2p.BuiltNo {
		t.Fatalf("recorded %+v", k)
	}
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8.0-1021-aws"), TopologyFile: name})
	if err := r.TopologyFileError(); err != nil {
		t.Fatal(err)
	}
	if k := r.KernelConfig(); k.P2PDMA != p2p.BuiltNo || !strings.Contains(k.Source, "recorded in the topology file") {
		t.Errorf("reader's KernelConfig = %+v, want the file's", k)
	}
	if w, err := r.Verdict(p5GPU, p5NIC); err != nil || w.KernelP2PDMA != p2p.BuiltNo || w.Source != p2p.SourceTopologyFile {
		t.Errorf("file verdict %+v, %v", w, err)
	}
	bad := strings.Replace(string(data), `"pci_p2pdma": "n"`, `"pci_p2pdma": "unknown"`, 1)
	if bad == string(data) {
		t.Fatalf("the file does not record pci_p2pdma as expected:\n%s", data)
	}
	if _, err := p2p.ParseTopologyFile([]byte(bad), "t.json"); err == nil || !strings.Contains(err.Error(), "kernel_config") {
		t.Errorf("a recorded unknown parses: %v", err)
	}
}

// TestUnreadKernelConfigMatters: the running kernel's configuration could
// not be read at all. Without p2pdma every pair would be NOT_SUPPORTED:
// amdgpu (6.15, which keeps VRAM for an allowed peer) would bounce, so its
// pair is uncertain and names the unread input; NVIDIA never asks p2pdma,
// so p5.48xlarge's pair stays certain.
func TestUnreadKernelConfigMatters(t *testing.T) {
	dir := t.TempDir()
	defer p2p.SetKernelConfigPlacesForTest(filepath.Join(dir, "config.gz"), dir, filepath.Join(dir, "kallsyms"))()
	unread := p2p.RunningKernelConfig()
	if unread.P2PDMA != p2p.BuiltUnknown {
		t.Fatalf("nothing readable: %+v", unread)
	}
	for _, tc := range []struct {
		model            string
		release          string
		provider, client p2p.Addr
		certain          bool
		outcome          p2p.Outcome
	}{
		{"amd-zen-acs-switch", "6.15", p2p.MustParseAddr("0000:03:00.0"), p2p.MustParseAddr("0000:08:00.0"), false, p2p.OutcomeP2P},
		{"p5.48xlarge", "6.8", p5GPU, p5NIC, true, p2p.OutcomeP2P},
	} {
		_, tree := writeModel(t, tc.model, models.WriteOptions{})
		src, err := p2p.OpenSysfs(tree)
		if err != nil {
			t.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease(tc.release), KernelConfig: &unread})
		v, err := o.Verdict(tc.provider, tc.client)
		if err != nil {
			t.Fatal(err)
		}
		if v.Certain != tc.certain || v.Outcome != tc.outcome || v.KernelP2PDMA != p2p.BuiltUnknown {
			t.Errorf("%s: certain %v outcome %s p2pdma %s, want certain %v outcome %s: %s", tc.model, v.Certain, v.Outcome, v.KernelP2PDMA, tc.certain, tc.outcome, v.Reason)
		}
		named := strings.Contains(strings.Join(v.Unread, "; "), "PCI_P2PDMA")
		if !named {
			t.Errorf("%s: Unread %q does not name the kernel's configuration", tc.model, v.Unread)
		}
	}
}
