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

// TestAuxvSources: the vector the runtime kept and /proc/self/auxv give
// the same AT_SECURE.
func TestAuxvSources(t *testing.T) {
	rt, ok := fromRuntime()
	if !ok {
		t.Fatal("the runtime kept no AT_SECURE")
	}
	proc, ok := fromProc()
	if !ok {
		t.Skip("/proc/self/auxv cannot be read here")
	}
	if rt != proc {
		t.Errorf("AT_SECURE %d from the runtime, %d from /proc/self/auxv", rt, proc)
	}
}

// TestGetenv: the environment as it is in an ordinary process, nothing
// once the process is said to be secure (Enforce: last, it stays).
func TestGetenv(t *testing.T) {
	if Secure() {
		t.Skip("the test runs in secure-execution mode")
	}
	t.Setenv("SECENV_TEST", "value")
	for _, tc := range []struct {
		name    string
		enforce bool
		want    string
	}{
		{"ordinary", false, "value"},
		{"enforced", true, ""},
	} {
		if tc.enforce {
			Enforce()
		}
		if got := Getenv("SECENV_TEST"); got != tc.want {
			t.Errorf("%s: Getenv = %q, want %q", tc.name, got, tc.want)
		}
		if got := Secure(); got != tc.enforce {
			t.Errorf("%s: Secure() = %v", tc.name, got)
		}
	}
}
