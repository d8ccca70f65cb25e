// SPDX-License-Identifier: MIT

package verbs_test

import (
	"os"
	"testing"

	"github.com/efap2p/efap2p/internal/simtest"
)

// TestMain runs the tests inside the EFA host emulator, once per machine
// model (see package internal/simtest).
func TestMain(m *testing.M) { os.Exit(simtest.Main(m)) }
