// SPDX-License-Identifier: MIT

//go:build cgo

// Package indexfuzz drives the C front's topology index parser
// (shim/front/index.c) from Go, so that the Go fuzzer can compare it with
// the Go reader (answer.ReadIndex) on the same bytes: both must
// accept the same files, and answer the same lookups. Only its tests use it.
package indexfuzz

/*
#cgo CFLAGS: -I${SRCDIR}/.. -I${SRCDIR}/../../../include -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include "index.c"

// parse_all parses a whole index as the front reads it: the head, then the
// strings, each checked.
static int parse_all(struct efap2p_index *ix, const uint8_t *data, size_t len)
{
	int rc = efap2p_index_parse(ix, data, len);

	if (!rc && ix->file_size != len)
		rc = EINVAL;
	if (!rc)
		rc = efap2p_index_attach(ix, (const char *)data + ix->strs_off, ix->strs_len);
	return rc;
}

// parse_head parses the head only, as the front reads a file first: the
// header, the table and the sections before the dma-buf ones.
static int parse_head(struct efap2p_index *ix, const uint8_t *data, size_t len, size_t head)
{
	return head > len ? EINVAL : efap2p_index_parse(ix, data, head);
}

// attach_rest attaches the records after the head, then the strings.
static int attach_rest(struct efap2p_index *ix, const uint8_t *data, size_t head)
{
	int rc = efap2p_index_attach_records(ix, data + head, head, ix->strs_off - head);

	if (!rc && !efap2p_index_complete(ix))
		rc = EINVAL;
	if (!rc)
		rc = efap2p_index_attach(ix, (const char *)data + ix->strs_off, ix->strs_len);
	return rc;
}
*/
import "C"

import "unsafe"

// Index is a parsed index; it keeps the bytes it points into.
type Index struct {
	ix   C.struct_efap2p_index
	data unsafe.Pointer
}

// Parse parses data with the C parser; nil when it refuses it.
func Parse(data []byte) *Index {
	if len(data) == 0 {
		return nil
	}
	x := &Index{data: C.CBytes(data)}
	if C.parse_all(&x.ix, (*C.uint8_t)(x.data), C.size_t(len(data))) != 0 {
		C.free(x.data)
		return nil
	}
	return x
}

// ParseLazy parses data as the front reads a file: the first head bytes,
// then, by Attach, the rest.
func ParseLazy(data []byte, head int) *Index {
	if len(data) == 0 {
		return nil
	}
	x := &Index{data: C.CBytes(data)}
	if C.parse_head(&x.ix, (*C.uint8_t)(x.data), C.size_t(len(data)), C.size_t(head)) != 0 {
		C.free(x.data)
		return nil
	}
	return x
}

// HeadLen is how much of data the front reads first (efap2p_index_head_len
// on the bytes it reads to decide: the header and the longest table); 0
// when those are malformed.
func HeadLen(data []byte) int {
	first := min(len(data), C.EFAP2P_INDEX_HEADER+16*C.EFAP2P_SEC_KINDS)
	if first == 0 {
		return 0
	}
	return int(C.efap2p_index_head_len((*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(first), C.uint64_t(len(data))))
}

// Attach attaches what ParseLazy left: false when it is refused.
func (x *Index) Attach(head int) bool {
	return C.attach_rest(&x.ix, (*C.uint8_t)(x.data), C.size_t(head)) == 0
}

// Free releases the copy of the bytes.
func (x *Index) Free() { C.free(x.data) }

// NIC looks a NIC up: its flags and summary.
func (x *Index) NIC(key uint64) (flags uint32, summary string, ok bool) {
	var n C.struct_efap2p_index_nic
	if C.efap2p_index_nic(&x.ix, C.uint64_t(key), &n) != 0 {
		return 0, "", false
	}
	return uint32(n.flags), C.GoString(C.efap2p_index_str(&x.ix, n.summary)), true
}

// Dmabuf looks a (NIC, exporter) decision up.
func (x *Index) Dmabuf(nic uint64, exp string) (decision, errno int, reason string, ok bool) {
	var d C.struct_efap2p_index_dmabuf
	var a C.struct_efadv_p2p_attr
	cexp := C.CString(exp)
	defer C.free(unsafe.Pointer(cexp))
	if C.efap2p_index_dmabuf(&x.ix, C.uint64_t(nic), cexp, &d) != 0 {
		return 0, 0, "", false
	}
	C.efap2p_index_attr(&x.ix, d.attr, &a)
	return int(d.decision), int(d.err), C.GoString(a.reason), true
}

// Peer looks a (NIC, peer) attr up: its outcome and reason.
func (x *Index) Peer(nic, peer uint64) (outcome uint32, reason string, ok bool) {
	var rec *C.uint8_t
	var a C.struct_efadv_p2p_attr
	if C.efap2p_index_peer(&x.ix, C.uint64_t(nic), C.uint64_t(peer), &rec) != 0 {
		return 0, "", false
	}
	C.efap2p_index_attr(&x.ix, rec, &a)
	return uint32(a.outcome), C.GoString(a.reason), true
}
