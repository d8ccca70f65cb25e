// SPDX-License-Identifier: MIT

// Package textwrap fills words into lines, for the reasons and findings
// the tool and its libraries print.
package textwrap

import "strings"

// Wrap fills the words of s into lines of at most width columns (a longer
// word has a line of its own), separated by newlines.
func Wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
