// SPDX-License-Identifier: MIT

package verbs_test

import (
	"os"
	"testing"

	"github.com/efap2p/efap2p/sim/simtest"
)

// TestMain runs the tests inside the EFA host emulator, once per machine
// model (see package sim/simtest); a child of TestNoRDMAHost runs
// where it is, on a host without RDMA.
func TestMain(m *testing.M) {
	if os.Getenv(noRDMAEnv) != "" {
		os.Exit(m.Run())
	}
	os.Exit(simtest.Main(m))
}
