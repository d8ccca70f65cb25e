// SPDX-License-Identifier: MIT

package secenv

import (
	"os"
	"testing"
)

// TestNotSecure: a test binary runs with uid == euid and no file
// capabilities. (ctests/shim/securehost
// runs a program with file capabilities, where they are not.)
func TestNotSecure(t *testing.T) {
	if os.Getuid() != os.Geteuid() {
		t.Skip("the test runs setuid")
	}
	if Secure() {
		t.Fatal("Secure() in an ordinary process")
	}
}
