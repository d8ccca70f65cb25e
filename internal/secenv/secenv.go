// SPDX-License-Identifier: MIT

// Package secenv tells whether the process runs in secure-execution mode,
// where environment variables that redirect what it reads (SYSFS_PATH,
// EFAP2P_TOPOLOGY, ...) must be ignored, as glibc's secure_getenv and
// libibverbs ignore them.
//
// It imports nothing of this repository.
package secenv

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

const atSecure = 23 // AT_SECURE in the ELF auxiliary vector

var secure = sync.OnceValue(func() bool {
	if os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid() {
		return true
	}
	auxv, err := unix.Auxv()
	if err != nil {
		return false
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1] != 0
		}
	}
	return false
})

// Secure reports whether the process runs in secure-execution mode
// (AT_SECURE: setuid or setgid, or granted file capabilities). It is
// worked out once.
func Secure() bool { return secure() }
