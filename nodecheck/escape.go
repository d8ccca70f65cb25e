// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes a string read from sysfs or DMI safe for a line of text, a
// terminal and the Prometheus text format: valid UTF-8 with no control or
// format characters. A byte that is not UTF-8 (a Latin-1 "é" in a DMI
// product name) becomes \xe9, a control character \x0a or \u0085, a
// format character (a bidi override) \u202e; everything else is kept.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether Escape would keep s as it is.
func clean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}
