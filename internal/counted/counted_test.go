// SPDX-License-Identifier: MIT

package counted

import "testing"

func TestNoun(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "GPU", "0 GPUs"},
		{1, "GPU", "1 GPU"},
		{4, "EFA NIC", "4 EFA NICs"},
		{256, "pair", "256 pairs"},
	} {
		if got := Noun(c.n, c.noun); got != c.want {
			t.Errorf("Noun(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
