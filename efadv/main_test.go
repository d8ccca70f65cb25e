// SPDX-License-Identifier: MIT

package efadv_test

import (
	"os"
	"testing"

	"github.com/efap2p/efap2p/sim/simtest"
)

// TestMain runs the tests inside the EFA host emulator, once per machine
// model (see package sim/simtest).
func TestMain(m *testing.M) { os.Exit(simtest.Main(m)) }
