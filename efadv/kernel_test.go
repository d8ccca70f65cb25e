// SPDX-License-Identifier: MIT

package efadv_test

import (
	"testing"

	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
)

// TestKernelEnv: EFAP2P_KERNEL chooses the rules of the Go API's oracle,
// and the verdicts say which. Inside the emulator it is the model's
// release; a malformed value falls back to the running kernel's. On
// intel-acs-switch the MI100 03:00.0 and the EFA 04:00.0 meet only at the
// host bridge 8086:6f00 (ACS RR below it), which only the newest
// whitelist lists: NOT_SUPPORTED at the model's 6.8, THRU_HOST_BRIDGE
// with latest.
func TestKernelEnv(t *testing.T) {
	m := simtest.Require(t)
	nic := m.EFANICs()[0]
	ctx := open(t, nic.IBDev())
	t.Cleanup(efadv.ResetOracle)
	t.Setenv("EFAP2P_LOG", "off")
	running, err := p2p.RunningRelease()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ env, want string }{
		{m.KernelRelease().String(), m.KernelRelease().String()},
		{"latest", "latest"},
		{"5.4.0-42-generic", "5.4.0-42-generic"},
		{"not-a-release", running.String()},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("EFAP2P_KERNEL", tc.env)
			efadv.ResetOracle()
			v, err := efadv.QueryP2P(ctx, nic.Addr)
			if err != nil {
				t.Fatal(err)
			}
			if v.Kernel.String() != tc.want {
				t.Errorf("verdict decided for %q, want %q", v.Kernel, tc.want)
			}
			if m.Name != "intel-acs-switch" || tc.env == "not-a-release" {
				return
			}
			w, err := efadv.QueryP2P(ctx, p2p.MustParseAddr("0000:03:00.0"))
			if err != nil {
				t.Fatal(err)
			}
			want := p2p.MapNotSupported
			if tc.env == "latest" {
				want = p2p.MapThruHostBridge
			}
			if w.MapType != want {
				t.Errorf("03:00.0 -> %s under %s: %v, want %v", nic.Addr, tc.env, w.MapType, want)
			}
		})
	}
}
