// SPDX-License-Identifier: MIT

package modversion

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string][3]int{"580.65.06": {580, 65, 6}, "1.16": {1, 16, 0}, " 2.17.3\n": {2, 17, 3}} {
		if v, ok := Parse(in); !ok || v != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, v, ok, want)
		}
	}
	for _, in := range []string{"", "1", "1.x.3", "1.2.3.4", "-1.2", "2.17.3g"} {
		if v, ok := Parse(in); ok {
			t.Errorf("Parse(%q) = %v, want a failure", in, v)
		}
	}
}

func TestLess(t *testing.T) {
	tests := []struct {
		a, b [3]int
		want bool
	}{
		{[3]int{580, 65, 5}, [3]int{580, 65, 6}, true},
		{[3]int{580, 65, 6}, [3]int{580, 65, 6}, false},
		{[3]int{581, 0, 0}, [3]int{580, 65, 6}, false},
		{[3]int{1, 15, 99}, [3]int{1, 16, 0}, true},
	}
	for _, tt := range tests {
		if got := Less(tt.a, tt.b); got != tt.want {
			t.Errorf("Less(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
