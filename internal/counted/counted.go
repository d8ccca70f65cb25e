// SPDX-License-Identifier: MIT

// Package counted writes a count and its noun as a sentence wants them:
// "1 NIC", "4 NICs", "0 GPUs".
package counted

import "strconv"

// Noun returns n and noun, the noun with an "s" unless n is 1. It knows
// only regular plurals, which are all the project's messages count.
func Noun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
