// SPDX-License-Identifier: MIT

// Package modversion reads the versions kernel modules publish in
// /sys/module/NAME/version ("580.65.06", "2.17.3") and orders them.
package modversion

import (
	"strconv"
	"strings"
)

// Parse reads MAJOR.MINOR[.PATCH] (surrounding white space allowed); a
// missing patch is 0. ok is false for anything else.
func Parse(s string) (v [3]int, ok bool) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return [3]int{}, false
		}
		v[i] = n
	}
	return v, true
}

// Less reports whether a is an older version than b.
func Less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
