// SPDX-License-Identifier: MIT

package main

import (
	"fmt"
	"path/filepath"

	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/verbs"
)

// userspaceDevices asks libibverbs which RDMA devices it lists (those its
// providers claim), when it reads the tree being checked: $SYSFS_PATH or
// /sys, as it does.
func userspaceDevices(root string) func() ([]string, error) {
	return func() ([]string, error) {
		if lib := p2p.SysfsRoot(); filepath.Clean(lib) != filepath.Clean(root) {
			return nil, fmt.Errorf("libibverbs reads %s, not the tree checked", lib)
		}
		devs, err := verbs.Devices()
		if err != nil {
			return nil, err
		}
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		return names, nil
	}
}
