// SPDX-License-Identifier: MIT

package p2p

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version 3 of the topology file writes a pair as one row, a JSON array:
//
//	[provider, client, map_type, distance, path, policy, outcome,
//	 bandwidth_mbs, latency_ns, acs_redirect, reason]
//
// provider, client and the entries of acs_redirect are PCI functions:
// the index of the function in machine.functions, or its address as a
// string. reason is an index into the file's reasons list, or a string.
// The last two columns are optional. Functions and reasons are written
// once each, so a pair costs a few dozen bytes where version 2's object
// with its reason cost about 850: a file grows with the pairs it holds,
// not with the words around them.
const (
	rowColumns    = 9 // the columns every row has
	rowAllColumns = 11
)

// rowError is an error about one row, its index in the pairs list.
type rowError struct {
	row int
	msg string
}

func (e *rowError) Error() string { return fmt.Sprintf("pairs[%d]: %s", e.row, e.msg) }

// appendRows writes the pairs of tf as rows, functions as their index in
// tf.Machine.Functions where they have one, reasons interned in reasons.
func appendRows(b []byte, tf *TopologyFile, reasons *[]string) []byte {
	index := make(map[Addr]int, len(tf.Machine.Functions))
	for i, f := range tf.Machine.Functions {
		if _, dup := index[f.Addr]; !dup {
			index[f.Addr] = i
		}
	}
	ref := func(b []byte, a Addr) []byte {
		if i, ok := index[a]; ok {
			return strconv.AppendInt(b, int64(i), 10)
		}
		return strconv.AppendQuote(b, a.String())
	}
	interned := map[string]int{}
	b = append(b, '[')
	for i := range tf.Pairs {
		p := &tf.Pairs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    ["...)
		b = ref(b, p.Provider)
		b = append(b, ',', ' ')
		b = ref(b, p.Client)
		for _, s := range [...]string{p.MapType.String(), "", p.Path.String(), p.Policy.String(), p.Outcome.String()} {
			b = append(b, ',', ' ')
			if s == "" {
				b = strconv.AppendInt(b, int64(p.Distance), 10)
				continue
			}
			b = strconv.AppendQuote(b, s)
		}
		b = append(b, ',', ' ')
		b = strconv.AppendInt(b, int64(p.BandwidthMBs), 10)
		b = append(b, ',', ' ')
		b = strconv.AppendInt(b, int64(p.LatencyNs), 10)
		if len(p.ACSRedirect) > 0 || p.Reason != "" {
			b = append(b, ", ["...)
			for j, a := range p.ACSRedirect {
				if j > 0 {
					b = append(b, ',', ' ')
				}
				b = ref(b, a)
			}
			b = append(b, ']')
		}
		if p.Reason != "" {
			n, ok := interned[p.Reason]
			if !ok {
				n = len(*reasons)
				interned[p.Reason] = n
				*reasons = append(*reasons, p.Reason)
			}
			b = append(b, ',', ' ')
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, ']')
	}
	if len(tf.Pairs) > 0 {
		b = append(b, "\n  "...)
	}
	return append(b, ']')
}

// rowReader reads the rows of a version 3 pairs list, which the JSON
// decoder has already found well-formed: it checks shapes and values only.
type rowReader struct {
	data      []byte
	pos       int
	functions []TopoFunction
	reasons   []string
}

var errRowShape = errors.New("malformed row")

func (r *rowReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// next reports whether another value follows in the array being read,
// consuming the comma before it.
func (r *rowReader) next(first bool) bool {
	r.skipSpace()
	if r.pos < len(r.data) && r.data[r.pos] == ']' {
		r.pos++
		return false
	}
	if !first && r.pos < len(r.data) && r.data[r.pos] == ',' {
		r.pos++
		r.skipSpace()
	}
	return r.pos < len(r.data)
}

func (r *rowReader) open() error {
	r.skipSpace()
	if r.pos >= len(r.data) || r.data[r.pos] != '[' {
		return errRowShape
	}
	r.pos++
	return nil
}

// value returns the next value's bytes (a number, a string with its
// quotes, or any other value whole) and what kind it is.
func (r *rowReader) value() (tok []byte, kind byte, err error) {
	r.skipSpace()
	if r.pos >= len(r.data) {
		return nil, 0, errRowShape
	}
	start := r.pos
	switch c := r.data[start]; {
	case c == '"':
		for i := start + 1; i < len(r.data); i++ {
			switch r.data[i] {
			case '\\':
				i++
			case '"':
				r.pos = i + 1
				return r.data[start:r.pos], '"', nil
			}
		}
		return nil, 0, errRowShape
	case c == '-' || c >= '0' && c <= '9':
		i := start + 1
		for i < len(r.data) && bytes.IndexByte([]byte("0123456789.eE+-"), r.data[i]) >= 0 {
			i++
		}
		r.pos = i
		return r.data[start:i], '0', nil
	default:
		// an array, an object, true, false, null: whole, for the error
		var raw json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(r.data[start:]))
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, errRowShape
		}
		r.pos = start + int(dec.InputOffset())
		return r.data[start:r.pos], c, nil
	}
}

func (r *rowReader) int(what string) (int, error) {
	tok, kind, err := r.value()
	if err != nil {
		return 0, err
	}
	if kind != '0' {
		return 0, fmt.Errorf("%s is %s, not a number", what, tok)
	}
	n, ok := atoi(tok)
	if !ok {
		return 0, fmt.Errorf("%s %s is not an integer", what, tok)
	}
	return n, nil
}

// atoi parses a decimal integer of at most 9 digits (row values are),
// without making a string of it: a file holds millions.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// enum reads column col, a string that must be one of names, and returns
// its index (no string is made for it); what and want word the error.
func (r *rowReader) enum(col, what string, names []string, want string) (int, error) {
	tok, kind, err := r.value()
	if err != nil {
		return 0, err
	}
	if kind != '"' {
		return 0, fmt.Errorf("%s is %s, not a string", col, tok)
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		s, err := unquote(tok)
		if err != nil {
			return 0, err
		}
		body = []byte(s)
	}
	for i, n := range names {
		if string(body) == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, body, want)
}

// unquote decodes a JSON string: most hold no escape at all.
func unquote(tok []byte) (string, error) {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	err := json.Unmarshal(tok, &s)
	return s, err
}

// function reads a PCI function: an index into machine.functions or an
// address.
func (r *rowReader) function(what string) (Addr, error) {
	tok, kind, err := r.value()
	if err != nil {
		return Addr{}, err
	}
	switch kind {
	case '0':
		n, ok := atoi(tok)
		if !ok || n < 0 || n >= len(r.functions) {
			return Addr{}, fmt.Errorf("%s %s is not the index of one of the %d machine.functions", what, tok, len(r.functions))
		}
		return r.functions[n].Addr, nil
	case '"':
		s, err := unquote(tok)
		if err != nil {
			return Addr{}, err
		}
		a, err := ParseAddr(s)
		if err != nil {
			return Addr{}, fmt.Errorf("%s: %w", what, err)
		}
		return a, nil
	}
	return Addr{}, fmt.Errorf("%s is %s, neither a machine.functions index nor an address", what, tok)
}

// row reads one row into p.
func (r *rowReader) row(p *TopoPair) error {
	if err := r.open(); err != nil {
		return fmt.Errorf("a pair is a row, [provider, client, map_type, distance, path, policy, outcome, bandwidth_mbs, latency_ns, acs_redirect, reason]")
	}
	var err error
	col := 0
	for r.next(col == 0) {
		if col == rowAllColumns {
			return fmt.Errorf("more than %d columns", rowAllColumns)
		}
		var i int
		switch col {
		case 0:
			p.Provider, err = r.function("provider")
		case 1:
			p.Client, err = r.function("client")
		case 2:
			i, err = r.enum("map_type", "map type", mapTypeNames, "NOT_SUPPORTED, BUS_ADDR or THRU_HOST_BRIDGE")
			p.MapType = MapType(i)
		case 3:
			p.Distance, err = r.int("distance")
		case 4:
			i, err = r.enum("path", "path class", pathClassNames, "LOC, PIX, PXB, PHB, NODE or SYS")
			p.Path = PathClass(i)
		case 5:
			i, err = r.enum("policy", "policy", policyNames, "kernel, amdgpu, nvidia or neuron")
			p.Policy = Policy(i)
		case 6:
			i, err = r.enum("outcome", "outcome", outcomeNames, "p2p, bounced or refused")
			p.Outcome = Outcome(i)
		case 7:
			p.BandwidthMBs, err = r.int("bandwidth_mbs")
		case 8:
			p.LatencyNs, err = r.int("latency_ns")
		case 9:
			err = r.acs(p)
		case 10:
			err = r.reason(p)
		}
		if err != nil {
			return err
		}
		col++
	}
	if col < rowColumns {
		return fmt.Errorf("%d columns, want at least %d (provider, client, map_type, distance, path, policy, outcome, bandwidth_mbs, latency_ns)", col, rowColumns)
	}
	return nil
}

func (r *rowReader) acs(p *TopoPair) error {
	if err := r.open(); err != nil {
		return errors.New("acs_redirect is not a list of functions")
	}
	for first := true; r.next(first); first = false {
		a, err := r.function("acs_redirect")
		if err != nil {
			return err
		}
		p.ACSRedirect = append(p.ACSRedirect, a)
	}
	return nil
}

func (r *rowReader) reason(p *TopoPair) error {
	tok, kind, err := r.value()
	if err != nil {
		return err
	}
	switch kind {
	case '0':
		n, ok := atoi(tok)
		if !ok || n < 0 || n >= len(r.reasons) {
			return fmt.Errorf("reason %s is not the index of one of the %d reasons", tok, len(r.reasons))
		}
		p.Reason = r.reasons[n]
	case '"':
		p.Reason, err = unquote(tok)
	default:
		return fmt.Errorf("reason is %s, neither a reasons index nor a string", tok)
	}
	return err
}

// readRows reads a version 3 pairs list.
func readRows(data []byte, functions []TopoFunction, reasons []string) ([]TopoPair, error) {
	r := &rowReader{data: data, functions: functions, reasons: reasons}
	if err := r.open(); err != nil {
		return nil, errors.New("pairs is not a list")
	}
	pairs := make([]TopoPair, 0, len(data)/64+1) // rows are 50 to 100 bytes
	for first := true; r.next(first); first = false {
		pairs = append(pairs, TopoPair{})
		if err := r.row(&pairs[len(pairs)-1]); err != nil {
			return nil, &rowError{len(pairs) - 1, err.Error()}
		}
	}
	return pairs, nil
}

// member is one member of a JSON object: its key, and its value where it
// lies in the document.
type member struct {
	key string
	off int
	val []byte
}

// objectMembers splits the JSON object data (which json.Valid accepted)
// into its members, without decoding or copying any value.
func objectMembers(data []byte) ([]member, bool) {
	r := &rowReader{data: data}
	r.skipSpace()
	if r.pos >= len(data) || data[r.pos] != '{' {
		return nil, false
	}
	r.pos++
	var out []member
	for {
		r.skipSpace()
		if r.pos < len(data) && data[r.pos] == '}' {
			return out, true
		}
		if r.pos < len(data) && data[r.pos] == ',' {
			r.pos++
			r.skipSpace()
		}
		tok, kind, err := r.value()
		if err != nil || kind != '"' {
			return nil, false
		}
		key, err := unquote(tok)
		if err != nil {
			return nil, false
		}
		r.skipSpace()
		if r.pos >= len(data) || data[r.pos] != ':' {
			return nil, false
		}
		r.pos++
		r.skipSpace()
		start := r.pos
		end := skipValue(data, start)
		if end <= start {
			return nil, false
		}
		r.pos = end
		out = append(out, member{key, start, data[start:end]})
	}
}

// skipValue returns where the JSON value at data[i:] ends, in a document
// json.Valid accepted; i itself when there is none.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipValue(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return i
	}
	j := i
	for j < len(data) && bytes.IndexByte([]byte(",]} \t\n\r"), data[j]) < 0 {
		j++
	}
	return j
}
