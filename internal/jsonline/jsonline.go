// SPDX-License-Identifier: MIT

// Package jsonline tells which line of a JSON document a decoding error
// points at, for errors that name the file and line (topology files,
// machine models).
//
// It imports nothing of this repository.
package jsonline

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Line returns the 1-based line a JSON decoding error points at:
// the offset a syntax or type error names; for an unknown field or a value
// its type rejected, the first place the quoted name or value the error
// quotes appears; else the decoder's offset.
func Line(data []byte, off int64, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case err != nil:
		msg := err.Error()
		if i := strings.IndexByte(msg, '"'); i >= 0 {
			if j := strings.IndexByte(msg[i+1:], '"'); j >= 0 {
				if k := bytes.Index(data, []byte(msg[i:i+j+2])); k >= 0 {
					off = int64(k)
				}
			}
		}
	}
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
