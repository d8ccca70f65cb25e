// SPDX-License-Identifier: MIT

// Package cgocheck holds the cgo test that compares package abi with the
// installed rdma-core headers and efap2p's include/infiniband/efadv_p2p.h:
// every size, offset and constant. It is its own package so that abi
// itself builds without cgo; without cgo this package is empty.
package cgocheck
