// SPDX-License-Identifier: MIT

package efadv

import (
	"sync"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/verbs"
)

// QueryRaw is libefa's answer, without the P2P part.
var QueryRaw = queryRaw

// BareQuery calls efadv_query_device through purego and nothing else: the
// baseline the benchmarks compare QueryDevice with.
func BareQuery(ctx *verbs.Context, attr *abi.EFADeviceAttr) int32 {
	fn, err := queryDeviceFn()
	if err != nil {
		panic(err)
	}
	p, err := ctx.Acquire()
	if err != nil {
		panic(err)
	}
	defer ctx.Release()
	return int32(dl.Call(fn, p, uintptr(unsafe.Pointer(attr)), abi.EFADeviceAttrSize))
}

// ResetOracle forgets the process's oracle and the cached P2P_DMA bits,
// for benchmarks of the first answer. Not safe while queries run.
func ResetOracle() {
	oracle = sync.OnceValues(buildOracle)
	reach.Store(nil)
}
