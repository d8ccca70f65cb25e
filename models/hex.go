// SPDX-License-Identifier: MIT

package models

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Hex is an unsigned number written in a model as a hex string ("1d0f",
// "0x1d0f", "060400"); a plain JSON number is taken as decimal.
type Hex uint32

// UnmarshalJSON implements json.Unmarshaler.
func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n uint32
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("want a hex string (such as 1d0f), got %s", b)
		}
		*h = Hex(n)
		return nil
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 32)
	if err != nil {
		return fmt.Errorf("%q is not a hex number", s)
	}
	*h = Hex(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (h Hex) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%04x", uint32(h)))
}
