// SPDX-License-Identifier: MIT

package devices

import "testing"

func TestNaturalLess(t *testing.T) {
	sorted := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_33", "mlx5_bond_0", "mlx5_bond_1",
		"rdmap79s0", "rdmap99s0", "rdmap100s0", "rdmap100s1", "rdmap201s0"}
	for i := range sorted {
		for j := range sorted {
			if got := naturalLess(sorted[i], sorted[j]); got != (i < j) {
				t.Errorf("naturalLess(%q, %q) = %v", sorted[i], sorted[j], got)
			}
		}
	}
	if naturalLess("a01", "a1") == naturalLess("a1", "a01") {
		t.Error("a01 and a1 must be ordered one way")
	}
}

// FuzzNaturalLess: the NIC order is a strict total order, whatever the
// RDMA device names.
func FuzzNaturalLess(f *testing.F) {
	for _, s := range [][3]string{{"mlx5_10", "mlx5_2", "mlx5_bond_0"}, {"rdmap100s0", "rdmap99s0", "a01"}, {"a1", "a01", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ab, ba := naturalLess(a, b), naturalLess(b, a)
		if ab && ba {
			t.Fatalf("%q < %q and %q < %q", a, b, b, a)
		}
		if a != b && !ab && !ba {
			t.Fatalf("%q and %q are not ordered", a, b)
		}
		if ab && naturalLess(b, c) && !naturalLess(a, c) {
			t.Fatalf("%q < %q < %q but not %q < %q", a, b, c, a, c)
		}
	})
}
