// SPDX-License-Identifier: MIT

package natsort

import "testing"

func TestLess(t *testing.T) {
	sorted := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_33", "mlx5_bond_0", "mlx5_bond_1",
		"rdmap79s0", "rdmap99s0", "rdmap100s0", "rdmap100s1", "rdmap201s0"}
	for i := range sorted {
		for j := range sorted {
			if got := Less(sorted[i], sorted[j]); got != (i < j) {
				t.Errorf("Less(%q, %q) = %v", sorted[i], sorted[j], got)
			}
		}
	}
	if Less("a01", "a1") == Less("a1", "a01") {
		t.Error("a01 and a1 must be ordered one way")
	}
}

// FuzzLess: the NIC order is a strict total order, whatever the
// RDMA device names.
func FuzzLess(f *testing.F) {
	for _, s := range [][3]string{{"mlx5_10", "mlx5_2", "mlx5_bond_0"}, {"rdmap100s0", "rdmap99s0", "a01"}, {"a1", "a01", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ab, ba := Less(a, b), Less(b, a)
		if ab && ba {
			t.Fatalf("%q < %q and %q < %q", a, b, b, a)
		}
		if a != b && !ab && !ba {
			t.Fatalf("%q and %q are not ordered", a, b)
		}
		if ab && Less(b, c) && !Less(a, c) {
			t.Fatalf("%q < %q < %q but not %q < %q", a, b, c, a, c)
		}
	})
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"rdmap99s0", "rdmap100s0", -1}, {"mlx5_10", "mlx5_2", 1}, {"x", "x", 0}} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
