// SPDX-License-Identifier: MIT

// Package natsort orders names as people count them, so that every list
// of RDMA devices (efap2p topo's NIC0, NIC1, ..., the oracle's) has one
// order.
package natsort

import "strings"

// Less orders names with their digit runs compared as numbers (mlx5_2 <
// mlx5_10 < mlx5_bond_0, rdmap99s0 < rdmap100s0); of runs equal as
// numbers, the shorter (fewer leading zeros) comes first. It is a strict
// total order.
func Less(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		switch {
		case da && db:
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if len(ta) != len(tb) {
				return len(ta) < len(tb)
			}
			if ta != tb {
				return ta < tb
			}
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			a, b = ra, rb
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

// Compare is Less as a three-way comparison, for slices.SortFunc.
func Compare(a, b string) int {
	switch {
	case Less(a, b):
		return -1
	case Less(b, a):
		return 1
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitRun(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}
