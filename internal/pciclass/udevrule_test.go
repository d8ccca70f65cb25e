// SPDX-License-Identifier: MIT

package pciclass

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// udevPatterns returns the alternatives of every ENV{key}=="..." match of
// the udev rule (a glob each, as udev's fnmatch reads them).
func udevPatterns(t *testing.T, rule, key string) []string {
	t.Helper()
	re := regexp.MustCompile(`ENV\{` + key + `\}=="([^"]*)"`)
	var pats []string
	for _, m := range re.FindAllStringSubmatch(rule, -1) {
		pats = append(pats, strings.Split(m[1], "|")...)
	}
	if len(pats) == 0 {
		t.Fatalf("the udev rule matches no %s", key)
	}
	return pats
}

func matchesAny(t *testing.T, pats []string, s string) bool {
	t.Helper()
	for _, p := range pats {
		ok, err := path.Match(p, s)
		if err != nil {
			t.Fatalf("udev pattern %q: %v", p, err)
		}
		if ok {
			return true
		}
	}
	return false
}

// Every function IsAccelerator counts makes the udev rule refresh the
// boot-time file (dist/70-efap2p-topology.rules.in): each AWS Neuron device
// of the table by its IDs, whatever its class, and every class that alone
// makes an accelerator. The rule ignored Trainium2 (1d0f:7364, class
// 0x088000), so an unbound Neuron device kept answering from a stale file.
// (ctests/fleet/test_dist.sh runs the rule under udevadm for every machine
// model's accelerators.)
func TestUdevRuleCoversAccelerators(t *testing.T) {
	data, err := os.ReadFile("../../dist/70-efap2p-topology.rules.in")
	if err != nil {
		t.Fatal(err)
	}
	rule := string(data)
	ids, classes := udevPatterns(t, rule, "PCI_ID"), udevPatterns(t, rule, "PCI_CLASS")
	// the kernel's uevent: PCI_CLASS=%X, PCI_ID=%04X:%04X
	for dev, name := range neuronDevices {
		if !IsAccelerator(0x088000, VendorAmazon, dev) {
			t.Fatalf("%s %04x:%04x is not an accelerator", name, VendorAmazon, dev)
		}
		if id := fmt.Sprintf("%04X:%04X", VendorAmazon, dev); !matchesAny(t, ids, id) {
			t.Errorf("%s (PCI_ID=%s) does not trigger the udev rule", name, id)
		}
	}
	for base := uint32(0); base <= 0xff; base++ {
		for _, sub := range []uint32{0x00, 0x02, 0x80} {
			class := base<<16 | sub<<8
			if accel, decided := ByClass(class); !(accel && decided) && !IsAccelerator(class, 0x10de, 0x2330) {
				continue
			}
			if c := fmt.Sprintf("%X", class); !matchesAny(t, classes, c) {
				t.Errorf("class %06x (PCI_CLASS=%s) makes an accelerator but does not trigger the udev rule", class, c)
			}
		}
	}
}
