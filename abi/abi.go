// SPDX-License-Identifier: MIT

// Package abi mirrors, in Go, the C ABI efap2p speaks: the parts of
// rdma-core's structs it reads or fills (efadv_device_attr, ibv_device,
// ibv_context, ibv_pd, ibv_mr), libefa's capability bits, and efap2p's own
// extension (include/infiniband/efadv_p2p.h). It needs no cgo; the
// package abi/cgocheck checks every size, offset and constant here against
// the installed headers.
package abi

// EFADeviceAttr is struct efadv_device_attr (32 bytes). rdma-core 44 names
// the two bytes at offset 18 reserved[2]; later releases fill them as
// inline_buf_size_ex. Both layouts have the same size and offsets.
type EFADeviceAttr struct {
	CompMask        uint64
	MaxSQWR         uint32
	MaxRQWR         uint32
	MaxSQSGE        uint16
	MaxRQSGE        uint16
	InlineBufSize   uint16
	InlineBufSizeEx uint16 // reserved[2] in rdma-core 44
	DeviceCaps      uint32
	MaxRDMASize     uint32
}

// Offsets within EFADeviceAttr that decide which fields an inlen covers.
const (
	EFADeviceAttrSize             = 32
	EFADeviceAttrDeviceCapsOffset = 24
	EFADeviceAttrDeviceCapsEnd    = 28 // inlen must reach this for the caps to be filled
)

// efadv_device_attr.device_caps bits (EFADV_DEVICE_ATTR_CAPS_*).
const (
	EFADeviceCapRDMARead             = 1 << 0
	EFADeviceCapRNRRetry             = 1 << 1
	EFADeviceCapCQWithSGID           = 1 << 2
	EFADeviceCapRDMAWrite            = 1 << 3
	EFADeviceCapUnsolicitedWriteRecv = 1 << 4
	EFADeviceCapCQWithExtMemDmabuf   = 1 << 5
	EFADeviceCapCompCntr             = 1 << 6
	// EFADeviceCapP2PDMA is efap2p's extension: the NIC gets true P2P DMA
	// into at least one accelerator of the host. The top bit, so that it
	// never collides with a bit rdma-core assigns from the bottom.
	EFADeviceCapP2PDMA = 1 << 31
)

// Sizes of the fixed strings of struct ibv_device.
const (
	IBVSysfsNameMax = 64
	IBVSysfsPathMax = 256
)

// IBVDevice is struct ibv_device.
type IBVDevice struct {
	Ops           [2]uintptr // struct _ibv_device_ops
	NodeType      int32
	TransportType int32
	Name          [IBVSysfsNameMax]byte
	DevName       [IBVSysfsNameMax]byte
	DevPath       [IBVSysfsPathMax]byte
	IBDevPath     [IBVSysfsPathMax]byte
}

// IBVContextHead is the start of struct ibv_context: its device pointer is
// its first member, the only one efap2p reads.
type IBVContextHead struct {
	Device uintptr // struct ibv_device *
}

// IBVPD is struct ibv_pd.
type IBVPD struct {
	Context uintptr // struct ibv_context *
	Handle  uint32
	_       [4]byte
}

// IBVMR is struct ibv_mr.
type IBVMR struct {
	Context uintptr // struct ibv_context *
	PD      uintptr // struct ibv_pd *
	Addr    uintptr
	Length  uint64 // size_t
	Handle  uint32
	LKey    uint32
	RKey    uint32
	_       [4]byte
}

// IBV access flags used with dma-buf registrations (enum ibv_access_flags).
const (
	IBVAccessLocalWrite   = 1 << 0
	IBVAccessRemoteWrite  = 1 << 1
	IBVAccessRemoteRead   = 1 << 2
	IBVAccessRemoteAtomic = 1 << 3
	IBVAccessRelaxedOrder = 1 << 20
)

// P2PAttr is struct efadv_p2p_attr (80 bytes; 64 up to reason before
// efap2p 1.1).
type P2PAttr struct {
	CompMask     uint64
	MapType      uint32
	Distance     int32
	Path         uint32
	Outcome      uint32
	Policy       uint32
	Source       uint32
	BandwidthMBs uint32
	LatencyNs    uint32
	Flags        uint32
	PeerDomain   uint32
	PeerBus      uint8
	PeerDevFn    uint8
	Reserved     [6]uint8
	Reason       uintptr // const char *, owned by the library
	// Since efap2p 1.1 (filled when inlen reaches them).
	PeerMemOutcome  uint32
	PeerMemProvider uint32
	KernelRelease   uintptr // const char *, owned by the library
}

// P2PAttr layout: the size, and the end of the fields a caller's inlen must
// cover at least (through distance).
const (
	P2PAttrSize   = 80
	P2PAttrMinLen = 16
	// P2PAttrSizeV1 is the size before the peer-memory and release
	// fields (efap2p 1.0): callers passing it keep working.
	P2PAttrSizeV1 = 64
)

// enum efadv_p2p_map_type.
const (
	P2PMapUnknown        = 0
	P2PMapNotSupported   = 1
	P2PMapBusAddr        = 2
	P2PMapThruHostBridge = 3
)

// enum efadv_p2p_path.
const (
	P2PPathUnknown = 0
	P2PPathLOC     = 1
	P2PPathPIX     = 2
	P2PPathPXB     = 3
	P2PPathPHB     = 4
	P2PPathNODE    = 5
	P2PPathSYS     = 6
)

// enum efadv_p2p_outcome.
const (
	P2POutcomeUnknown = 0
	P2POutcomeP2P     = 1
	P2POutcomeBounced = 2
	P2POutcomeRefused = 3
)

// enum efadv_p2p_policy.
const (
	P2PPolicyKernel = 0
	P2PPolicyAMDGPU = 1
	P2PPolicyNVIDIA = 2
	P2PPolicyNeuron = 3
	P2PPolicyXe     = 4
	P2PPolicyVFIO   = 5
	P2PPolicyI915   = 6
)

// enum efadv_p2p_source.
const (
	P2PSourceComputed     = 0
	P2PSourceACPI         = 1
	P2PSourceTopologyFile = 2
)

// enum efadv_p2p_peer_mem.
const (
	P2PPeerMemUnknown       = 0
	P2PPeerMemNone          = 1
	P2PPeerMemNVIDIA        = 2
	P2PPeerMemNVIDIAPeermem = 3
	P2PPeerMemNeuron        = 4
	P2PPeerMemOther         = 5
)

// efadv_p2p_attr.flags.
const (
	P2PFlagUncertain     = 1 << 0
	P2PFlagAmbiguousPeer = 1 << 1
	P2PFlagAssumed       = 1 << 2
)

// Symbol versions of the functions efap2p interposes or adds.
const (
	EFAVersion     = "EFA_1.1"      // efadv_query_device
	IBVerbsVersion = "IBVERBS_1.12" // ibv_reg_dmabuf_mr
	EFAP2PVersion  = "EFAP2P_1.0"   // efadv_p2p_*
)
