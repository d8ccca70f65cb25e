// SPDX-License-Identifier: MIT

package verbs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/verbs"
)

// noRDMAEnv marks TestNoRDMAHost's child, which runs outside the emulator.
const noRDMAEnv = "VERBS_TEST_NO_RDMA"

// TestNoRDMAHost: on a host without RDMA (an empty sysfs tree, no
// emulator: libibverbs' ibv_get_device_list fails with ENOSYS) the
// README's first call, verbs.Open, fails with an error that says there is
// no RDMA device and matches ErrNoDevice, not with "function not
// implemented" alone.
func TestNoRDMAHost(t *testing.T) {
	if os.Getenv(noRDMAEnv) != "" {
		_, openErr := verbs.Open("rdmap79s0")
		_, listErr := verbs.Devices()
		for _, err := range []error{openErr, listErr} {
			fmt.Printf("err: %v\nis ErrNoDevice: %v\nis ENOSYS or ENODEV: %v\n", err,
				errors.Is(err, verbs.ErrNoDevice), errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENODEV))
		}
		return
	}
	if err := verbs.Load(); err != nil {
		t.Skipf("no libibverbs: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoRDMAHost$", "-test.count=1")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "LD_PRELOAD" && name != "SYSFS_PATH" && !strings.HasPrefix(name, "EFAP2P_SIMTEST") && !strings.HasPrefix(name, "EFASIM") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SYSFS_PATH="+t.TempDir(), noRDMAEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child on a host without RDMA: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "is ErrNoDevice: true"); n != 2 || strings.Contains(string(out), "is ENOSYS or ENODEV: false") {
		t.Errorf("on a host without RDMA, Open and Devices:\n%s\nwant both to match ErrNoDevice and keep libibverbs' errno", out)
	}
	if !strings.Contains(string(out), "no RDMA device") {
		t.Errorf("the errors do not say there is no RDMA device:\n%s", out)
	}
}
