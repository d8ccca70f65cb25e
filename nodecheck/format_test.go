// SPDX-License-Identifier: MIT

package nodecheck_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

// parseProm parses a textfile as node_exporter's textfile collector does
// (prometheus/common's text parser), failing the test on any error.
func parseProm(t *testing.T, data []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the textfile does not parse: %v\n%s", err, data)
	}
	return fams
}

func prom(t *testing.T, r *nodecheck.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.WritePrometheus(&b, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// promAll is the textfile with every pair's series.
func promAll(t *testing.T, r *nodecheck.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.WritePrometheusWith(&b, time.Unix(1700000000, 0), nodecheck.PromOptions{AllPairs: true}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestPrometheusConventions: the status is a plain value, what identifies
// the node is on efap2p_check_info, and the pair series carry identity
// labels only: with every pair written (AllPairs), an outcome that changes
// changes values, never the set of series.
func TestPrometheusConventions(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	healthy := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	healthy.ToolVersion = "1.2.3"
	m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.PortState = "DOWN"
	down := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	cpu := run(t, write(t, builtin(t, "cpu-node"), models.WriteOptions{}), "", nodecheck.Options{})

	fams := parseProm(t, prom(t, healthy))
	st := fams["efap2p_check_status"]
	if st == nil || len(st.Metric) != 1 || len(st.Metric[0].Label) != 0 || st.Metric[0].GetGauge().GetValue() != 0 {
		t.Fatalf("efap2p_check_status: %v", st)
	}
	info := fams["efap2p_check_info"]
	if info == nil || len(info.Metric) != 1 {
		t.Fatalf("efap2p_check_info: %v", info)
	}
	if l := labels(info.Metric[0]); l["version"] != "1.2.3" || l["kernel"] != newKernel || l["instance_type"] != "p5.48xlarge" || info.Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("efap2p_check_info labels %v", l)
	}
	series := func(fams map[string]*dto.MetricFamily) map[string]float64 {
		out := map[string]float64{}
		for name, f := range fams {
			if !strings.HasPrefix(name, "efap2p_check_pair_") && name != "efap2p_check_efa_port_active" {
				continue
			}
			for _, mt := range f.Metric {
				l := labels(mt)
				for k := range l {
					if k != "accelerator" && k != "accelerator_name" && k != "nic" && k != "ibdev" {
						t.Errorf("%s: label %s is not an identity label", name, k)
					}
				}
				out[name+"|"+l["accelerator"]+"|"+l["nic"]] = mt.GetGauge().GetValue()
			}
		}
		return out
	}
	before, after := series(parseProm(t, promAll(t, healthy))), series(parseProm(t, promAll(t, down)))
	if len(before) != len(after) {
		t.Fatalf("%d series healthy, %d with a port down: a changed outcome started or ended series", len(before), len(after))
	}
	changed := 0
	for k, v := range before {
		w, ok := after[k]
		if !ok {
			t.Fatalf("series %s is gone with the port down", k)
		}
		if v != w {
			changed++
		}
	}
	if k := "efap2p_check_pair_p2p|0000:53:00.0|0000:50:00.0"; before[k] != 1 || after[k] != 0 || changed == 0 {
		t.Errorf("%s: %v -> %v (%d values changed)", k, before[k], after[k], changed)
	}
	if v := parseProm(t, prom(t, down))["efap2p_check_status"].Metric[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("status with a port down: %v, want 1", v)
	}
	cf := parseProm(t, prom(t, cpu))
	if v := cf["efap2p_check_status"].Metric[0].GetGauge().GetValue(); v != 2 {
		t.Errorf("cpu-node status value %v, want 2 (not applicable)", v)
	}
	if cf["efap2p_check_dmabuf_supported"] != nil {
		t.Error("cpu-node: efap2p_check_dmabuf_supported reported, though nothing judged it")
	}
}

// TestPrometheusDefault: the default textfile holds what an operator
// alerts on: per-accelerator and per-NIC gauges, the counts, and the
// series of the pairs that are not OK only (a healthy p5.48xlarge has
// none, and the file is a twentieth of every pair's); a NIC whose port is
// down brings its pairs in, and the shipped alert's expression
// (efap2p.rules.yml) finds the local ones.
func TestPrometheusDefault(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	healthy := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.PortState = "DOWN"
	down := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	value := func(f *dto.MetricFamily, want map[string]string) (float64, bool) {
		for _, mt := range f.GetMetric() {
			l, ok := labels(mt), true
			for k, v := range want {
				ok = ok && l[k] == v
			}
			if ok {
				return mt.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	data, all := prom(t, healthy), promAll(t, healthy)
	if len(data) > 16<<10 || len(data)*10 > len(all) {
		t.Errorf("healthy p5.48xlarge: textfile of %d bytes, %d with every pair", len(data), len(all))
	}
	fams := parseProm(t, data)
	for name := range fams {
		if strings.HasPrefix(name, "efap2p_check_pair_") {
			t.Errorf("healthy p5.48xlarge: %s written, though every pair is OK", name)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"efap2p_check_pairs", nil, 256}, {"efap2p_check_pairs_p2p", nil, 256}, {"efap2p_check_pairs_uncertain", nil, 0},
		{"efap2p_check_accelerator_local_nics", map[string]string{"accelerator_name": "GPU0", "accelerator": "0000:53:00.0"}, 4},
		{"efap2p_check_accelerator_local_p2p_nics", map[string]string{"accelerator_name": "GPU7"}, 4},
		{"efap2p_check_accelerator_p2p_nics", map[string]string{"accelerator_name": "GPU3"}, 32},
		{"efap2p_check_efa_p2p_accelerators", map[string]string{"nic": "0000:4f:00.0", "ibdev": "rdmap79s0"}, 8},
	} {
		if got, ok := value(fams[c.name], c.labels); !ok || got != c.want {
			t.Errorf("healthy: %s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	fams = parseProm(t, prom(t, down))
	pairs := fams["efap2p_check_pair_p2p"].GetMetric()
	local := 0
	for _, mt := range pairs {
		l := labels(mt)
		if l["nic"] != "0000:50:00.0" || mt.GetGauge().GetValue() != 0 {
			t.Errorf("port down: pair series %v = %v, want only 0000:50:00.0's pairs, at 0", l, mt.GetGauge().GetValue())
		}
		if v, ok := value(fams["efap2p_check_pair_local"], map[string]string{"accelerator": l["accelerator"], "nic": l["nic"]}); ok && v == 1 {
			local++
		}
	}
	if len(pairs) != 8 || local != 1 {
		t.Errorf("port down: %d pair series (want 8), %d of them local (want 1)", len(pairs), local)
	}
	if got, _ := value(fams["efap2p_check_accelerator_local_p2p_nics"], map[string]string{"accelerator_name": "GPU0"}); got != 3 {
		t.Errorf("port down: GPU0 has %v local P2P NICs, want 3", got)
	}
	if got, _ := value(fams["efap2p_check_efa_p2p_accelerators"], map[string]string{"nic": "0000:50:00.0"}); got != 0 {
		t.Errorf("port down: 0000:50:00.0 reaches %v accelerators, want 0", got)
	}
}

// TestHostileStrings: what sysfs and DMI hold reaches every format
// escaped: a Latin-1 byte in the DMI product name leaves the textfile
// parsable, a newline and an escape sequence in an RDMA device name leave
// the line one line and the terminal clean.
func TestHostileStrings(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	m.DMI.ProductName = "Caf\xe9 \x1b[2J"
	m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.IBDev = "rdma\nPROBLEM \x1b[31mfake"
	m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.PortState = "DOWN" // its name reaches the line
	r := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})

	fams := parseProm(t, prom(t, r))
	found := false
	for _, mt := range fams["efap2p_check_efa_port_active"].GetMetric() {
		if l := labels(mt); l["nic"] == "0000:50:00.0" {
			found = true
			if !utf8.ValidString(l["ibdev"]) || strings.ContainsAny(l["ibdev"], "\n\x1b") {
				t.Errorf("ibdev label %q", l["ibdev"])
			}
		}
	}
	if !found {
		t.Error("no port gauge for 0000:50:00.0")
	}
	line := r.Line()
	if strings.ContainsAny(line, "\n\x1b") || !utf8.ValidString(line) || !strings.Contains(line, `rdma\x0aPROBLEM \x1b[31mfake`) {
		t.Errorf("line %q", line)
	}
	out := text(t, r)
	if strings.ContainsRune(out, 0x1b) || !utf8.ValidString(out) || !strings.Contains(out, `Caf\xe9 \x1b[2J`) {
		t.Errorf("text:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "PROBLEM") {
			t.Errorf("a device name started a line of its own: %q", l)
		}
	}
	var nfd bytes.Buffer
	if err := r.WriteNFD(&nfd); err != nil {
		t.Fatal(err)
	}
	labels, err := nodecheck.ParseNFD(nfd.String())
	if err != nil {
		t.Fatalf("feature file: %v\n%s", err, nfd.String())
	}
	if _, ok := labels[nodecheck.NFDPrefix+"efa.instance-type"]; ok {
		t.Errorf("an instance type that is no label value was written: %v", labels)
	}
}

// TestUserspaceProvider: an EFA device libibverbs does not list (its
// provider does not claim the PCI ID, as rdma-core 44's libefa does not
// claim a trn2's efa3) is a finding, and its pairs are not P2P.
func TestUserspaceProvider(t *testing.T) {
	dir := write(t, builtin(t, "trn2.48xlarge"), models.WriteOptions{})
	r := run(t, dir, "", nodecheck.Options{Userspace: func() ([]string, error) { return nil, nil }})
	f := finding(r, "efa-provider-unclaimed")
	if f == nil || f.Severity != nodecheck.SeverityError || !strings.Contains(f.Message, "16 of 16 EFA devices are not listed by libibverbs (its EFA provider does not claim PCI ID 1d0f:efa3)") || !strings.Contains(f.Fix, "rdma-core") {
		t.Fatalf("efa-provider-unclaimed: %+v (findings %v)", f, codes(r))
	}
	for _, p := range r.Pairs {
		if p.P2P {
			t.Fatalf("%s -> %s is P2P through a device no program can open", p.Accelerator, p.NIC)
		}
	}
	for _, n := range r.NICs {
		if n.Userspace != nodecheck.UserspaceUnlisted {
			t.Fatalf("%s: userspace %q", n.Addr, n.Userspace)
		}
	}
	// All listed: no finding; the hook failing: a note, no finding.
	var all []string
	for _, n := range r.NICs {
		all = append(all, n.IBDev)
	}
	r = run(t, dir, "", nodecheck.Options{Userspace: func() ([]string, error) { return all, nil }})
	if finding(r, "efa-provider-unclaimed") != nil || r.NICs[0].Userspace != nodecheck.UserspaceListed {
		t.Errorf("all listed: findings %v, userspace %q", codes(r), r.NICs[0].Userspace)
	}
	r = run(t, dir, "", nodecheck.Options{Userspace: func() ([]string, error) { return nil, errors.New("libibverbs.so.1: not found") }})
	if finding(r, "efa-provider-unclaimed") != nil || !strings.Contains(strings.Join(r.Notes, "\n"), "libibverbs.so.1: not found") {
		t.Errorf("no libibverbs: findings %v, notes %v", codes(r), r.Notes)
	}
}

// TestNFDLabels: the feature file of each status, as NFD reads it.
func TestNFDLabels(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	for _, tt := range []struct {
		name string
		r    *nodecheck.Report
		want map[string]string
	}{
		{"healthy", run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{}),
			map[string]string{"efa.p2p": "true", "efa.p2p.status": "ok", "efa.devices": "32", "efa.accelerators": "8", "efa.p2p.local-pairs": "32", "efa.instance-type": "p5.48xlarge"}},
		{"cpu-node", run(t, write(t, builtin(t, "cpu-node"), models.WriteOptions{}), "", nodecheck.Options{}),
			map[string]string{"efa.p2p": "false", "efa.p2p.status": "not-applicable", "efa.devices": "0", "efa.accelerators": "0", "efa.instance-type": "m7i.48xlarge"}},
	} {
		var b bytes.Buffer
		if err := tt.r.WriteNFD(&b); err != nil {
			t.Fatal(err)
		}
		got, err := nodecheck.ParseNFD(b.String())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: labels %v, want %v", tt.name, got, tt.want)
		}
		for k, v := range tt.want {
			if got[nodecheck.NFDPrefix+k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.name, k, got[nodecheck.NFDPrefix+k], v)
			}
		}
	}
}

// TestLabelSyntax holds the validators to Kubernetes' label rules.
func TestLabelSyntax(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"efa.p2p", true},
		{"feature.node.kubernetes.io/efa.p2p", true},
		{"example.com/a_b-c.d", true},
		{"a", true},
		{"", false},
		{"-efa", false},
		{"efa.", false},
		{"efa p2p", false},
		{long, false},
		{strings.Repeat("a", 63), true},
		{"Example.com/x", false}, // a prefix is lower case
		{"/x", false},
		{"example.com/", false},
		{"exa_mple.com/x", false},
		{strings.Repeat("a.", 127) + "a/x", false}, // prefix of 255
	} {
		if err := nodecheck.ValidLabelName(tt.name); (err == nil) != tt.ok {
			t.Errorf("ValidLabelName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	for _, tt := range []struct {
		value string
		ok    bool
	}{
		{"", true}, {"true", true}, {"p5.48xlarge", true}, {"not-applicable", true}, {"A_b.9", true},
		{"-x", false}, {"x-", false}, {"a/b", false}, {"caf\xe9", false}, {long, false}, {"a b", false},
	} {
		if err := nodecheck.ValidLabelValue(tt.value); (err == nil) != tt.ok {
			t.Errorf("ValidLabelValue(%q) = %v, want ok %v", tt.value, err, tt.ok)
		}
	}
	if _, err := nodecheck.ParseNFD("ok=1\nbad name=x\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ParseNFD of a bad line: %v", err)
	}
}

// TestEscape: what Escape keeps and what it writes out.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"p5.48xlarge":     "p5.48xlarge",
		"Caf\xe9":         `Caf\xe9`,
		"a\nb\tc":         `a\x0ab\x09c`,
		"\x1b[31m":        `\x1b[31m`,
		"caf\u00e9 ok":    "caf\u00e9 ok",
		"x\u202ey":        `x\u202ey`,
		"\u0085":          `\u0085`,
		"日本":              "日本",
		"\xff\xfe":        `\xff\xfe`,
		"back\\slash \"q": "back\\slash \"q",
	} {
		if got := nodecheck.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
