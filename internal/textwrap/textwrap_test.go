// SPDX-License-Identifier: MIT

package textwrap

import "testing"

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"", 10, ""},
		{"one two three", 7, "one two\nthree"},
		{"  spaced   out  ", 20, "spaced out"},
		{"averyverylongword x", 5, "averyverylongword\nx"},
	} {
		if got := Wrap(tc.in, tc.width); got != tc.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
