// SPDX-License-Identifier: MIT

package jsonline

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestLine(t *testing.T) {
	type doc struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	for _, tt := range []struct {
		name, data string
		want       int
	}{
		{"syntax error on line 3", "{\n  \"a\": 1,\n  \"b\" \"x\"\n}", 3},
		{"type error on line 2", "{\n  \"a\": \"one\"\n}", 2},
		{"unknown field on line 4", "{\n  \"a\": 1,\n  \"b\": \"x\",\n  \"zz\": 2\n}", 4},
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(tt.data)))
		dec.DisallowUnknownFields()
		var d doc
		err := dec.Decode(&d)
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		if got := Line([]byte(tt.data), dec.InputOffset(), err); got != tt.want {
			t.Errorf("%s: line %d, want %d (%v)", tt.name, got, tt.want, err)
		}
	}
	if got := Line([]byte("a\nb\nc"), 99, nil); got != 3 {
		t.Errorf("an offset past the end: line %d, want 3", got)
	}
	if got := Line([]byte("a\nb"), -5, nil); got != 1 {
		t.Errorf("a negative offset: line %d, want 1", got)
	}
}
