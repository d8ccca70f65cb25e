// SPDX-License-Identifier: MIT

//go:build cgo

package cgocheck

import (
	"testing"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
)

// goLayouts are the same sizes and offsets as package abi declares them.
func goLayouts() map[string]uintptr {
	var d abi.EFADeviceAttr
	var dev abi.IBVDevice
	var ctx abi.IBVContextHead
	var pd abi.IBVPD
	var mr abi.IBVMR
	var p abi.P2PAttr
	return map[string]uintptr{
		"sizeof(struct efadv_device_attr)":  unsafe.Sizeof(d),
		"efadv_device_attr.comp_mask":       unsafe.Offsetof(d.CompMask),
		"efadv_device_attr.max_sq_wr":       unsafe.Offsetof(d.MaxSQWR),
		"efadv_device_attr.max_rq_wr":       unsafe.Offsetof(d.MaxRQWR),
		"efadv_device_attr.max_sq_sge":      unsafe.Offsetof(d.MaxSQSGE),
		"efadv_device_attr.max_rq_sge":      unsafe.Offsetof(d.MaxRQSGE),
		"efadv_device_attr.inline_buf_size": unsafe.Offsetof(d.InlineBufSize),
		"efadv_device_attr.reserved":        unsafe.Offsetof(d.InlineBufSizeEx),
		"efadv_device_attr.device_caps":     unsafe.Offsetof(d.DeviceCaps),
		"efadv_device_attr.max_rdma_size":   unsafe.Offsetof(d.MaxRDMASize),

		"sizeof(struct ibv_device)": unsafe.Sizeof(dev),
		"ibv_device.node_type":      unsafe.Offsetof(dev.NodeType),
		"ibv_device.transport_type": unsafe.Offsetof(dev.TransportType),
		"ibv_device.name":           unsafe.Offsetof(dev.Name),
		"ibv_device.dev_name":       unsafe.Offsetof(dev.DevName),
		"ibv_device.dev_path":       unsafe.Offsetof(dev.DevPath),
		"ibv_device.ibdev_path":     unsafe.Offsetof(dev.IBDevPath),
		"ibv_context.device":        unsafe.Offsetof(ctx.Device),

		"sizeof(struct ibv_pd)": unsafe.Sizeof(pd),
		"ibv_pd.context":        unsafe.Offsetof(pd.Context),
		"ibv_pd.handle":         unsafe.Offsetof(pd.Handle),

		"sizeof(struct ibv_mr)": unsafe.Sizeof(mr),
		"ibv_mr.context":        unsafe.Offsetof(mr.Context),
		"ibv_mr.pd":             unsafe.Offsetof(mr.PD),
		"ibv_mr.addr":           unsafe.Offsetof(mr.Addr),
		"ibv_mr.length":         unsafe.Offsetof(mr.Length),
		"ibv_mr.handle":         unsafe.Offsetof(mr.Handle),
		"ibv_mr.lkey":           unsafe.Offsetof(mr.LKey),
		"ibv_mr.rkey":           unsafe.Offsetof(mr.RKey),

		"sizeof(struct efadv_p2p_attr)": unsafe.Sizeof(p),
		"efadv_p2p_attr.comp_mask":      unsafe.Offsetof(p.CompMask),
		"efadv_p2p_attr.map_type":       unsafe.Offsetof(p.MapType),
		"efadv_p2p_attr.distance":       unsafe.Offsetof(p.Distance),
		"efadv_p2p_attr.path":           unsafe.Offsetof(p.Path),
		"efadv_p2p_attr.outcome":        unsafe.Offsetof(p.Outcome),
		"efadv_p2p_attr.policy":         unsafe.Offsetof(p.Policy),
		"efadv_p2p_attr.source":         unsafe.Offsetof(p.Source),
		"efadv_p2p_attr.bandwidth_mbs":  unsafe.Offsetof(p.BandwidthMBs),
		"efadv_p2p_attr.latency_ns":     unsafe.Offsetof(p.LatencyNs),
		"efadv_p2p_attr.flags":          unsafe.Offsetof(p.Flags),
		"efadv_p2p_attr.peer_domain":    unsafe.Offsetof(p.PeerDomain),
		"efadv_p2p_attr.peer_bus":       unsafe.Offsetof(p.PeerBus),
		"efadv_p2p_attr.peer_devfn":     unsafe.Offsetof(p.PeerDevFn),
		"efadv_p2p_attr.reserved":       unsafe.Offsetof(p.Reserved),
		"efadv_p2p_attr.reason":         unsafe.Offsetof(p.Reason),

		"efadv_p2p_attr.peer_mem_outcome":  unsafe.Offsetof(p.PeerMemOutcome),
		"efadv_p2p_attr.peer_mem_provider": unsafe.Offsetof(p.PeerMemProvider),
		"efadv_p2p_attr.kernel_release":    unsafe.Offsetof(p.KernelRelease),
	}
}

func goConstants() map[string]int64 {
	return map[string]int64{
		"EFADV_DEVICE_ATTR_CAPS_RDMA_READ":    abi.EFADeviceCapRDMARead,
		"EFADV_DEVICE_ATTR_CAPS_RNR_RETRY":    abi.EFADeviceCapRNRRetry,
		"EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID": abi.EFADeviceCapCQWithSGID,
		"EFADV_DEVICE_ATTR_CAPS_P2P_DMA":      abi.EFADeviceCapP2PDMA,
		"IBV_SYSFS_NAME_MAX":                  abi.IBVSysfsNameMax,
		"IBV_SYSFS_PATH_MAX":                  abi.IBVSysfsPathMax,
		"IBV_ACCESS_LOCAL_WRITE":              abi.IBVAccessLocalWrite,
		"IBV_ACCESS_REMOTE_WRITE":             abi.IBVAccessRemoteWrite,
		"IBV_ACCESS_REMOTE_READ":              abi.IBVAccessRemoteRead,
		"IBV_ACCESS_REMOTE_ATOMIC":            abi.IBVAccessRemoteAtomic,
		"IBV_ACCESS_RELAXED_ORDERING":         abi.IBVAccessRelaxedOrder,
		"EFADV_P2P_MAP_UNKNOWN":               abi.P2PMapUnknown,
		"EFADV_P2P_MAP_NOT_SUPPORTED":         abi.P2PMapNotSupported,
		"EFADV_P2P_MAP_BUS_ADDR":              abi.P2PMapBusAddr,
		"EFADV_P2P_MAP_THRU_HOST_BRIDGE":      abi.P2PMapThruHostBridge,
		"EFADV_P2P_PATH_UNKNOWN":              abi.P2PPathUnknown,
		"EFADV_P2P_PATH_LOC":                  abi.P2PPathLOC,
		"EFADV_P2P_PATH_PIX":                  abi.P2PPathPIX,
		"EFADV_P2P_PATH_PXB":                  abi.P2PPathPXB,
		"EFADV_P2P_PATH_PHB":                  abi.P2PPathPHB,
		"EFADV_P2P_PATH_NODE":                 abi.P2PPathNODE,
		"EFADV_P2P_PATH_SYS":                  abi.P2PPathSYS,
		"EFADV_P2P_OUTCOME_UNKNOWN":           abi.P2POutcomeUnknown,
		"EFADV_P2P_OUTCOME_P2P":               abi.P2POutcomeP2P,
		"EFADV_P2P_OUTCOME_BOUNCED":           abi.P2POutcomeBounced,
		"EFADV_P2P_OUTCOME_REFUSED":           abi.P2POutcomeRefused,
		"EFADV_P2P_POLICY_KERNEL":             abi.P2PPolicyKernel,
		"EFADV_P2P_POLICY_AMDGPU":             abi.P2PPolicyAMDGPU,
		"EFADV_P2P_POLICY_NVIDIA":             abi.P2PPolicyNVIDIA,
		"EFADV_P2P_POLICY_NEURON":             abi.P2PPolicyNeuron,
		"EFADV_P2P_POLICY_XE":                 abi.P2PPolicyXe,
		"EFADV_P2P_POLICY_VFIO":               abi.P2PPolicyVFIO,
		"EFADV_P2P_POLICY_I915":               abi.P2PPolicyI915,
		"EFADV_P2P_PEER_MEM_UNKNOWN":          abi.P2PPeerMemUnknown,
		"EFADV_P2P_PEER_MEM_NONE":             abi.P2PPeerMemNone,
		"EFADV_P2P_PEER_MEM_NVIDIA":           abi.P2PPeerMemNVIDIA,
		"EFADV_P2P_PEER_MEM_NVIDIA_PEERMEM":   abi.P2PPeerMemNVIDIAPeermem,
		"EFADV_P2P_PEER_MEM_NEURON":           abi.P2PPeerMemNeuron,
		"EFADV_P2P_PEER_MEM_OTHER":            abi.P2PPeerMemOther,
		"EFADV_P2P_SOURCE_COMPUTED":           abi.P2PSourceComputed,
		"EFADV_P2P_SOURCE_ACPI":               abi.P2PSourceACPI,
		"EFADV_P2P_SOURCE_TOPOLOGY_FILE":      abi.P2PSourceTopologyFile,
		"EFADV_P2P_FLAG_UNCERTAIN":            abi.P2PFlagUncertain,
		"EFADV_P2P_FLAG_AMBIGUOUS_PEER":       abi.P2PFlagAmbiguousPeer,
		"EFADV_P2P_FLAG_ASSUMED":              abi.P2PFlagAssumed,
	}
}

// TestLayouts fails on any drift between package abi and the C headers.
func TestLayouts(t *testing.T) {
	g := goLayouts()
	seen := 0
	for _, l := range cLayouts() {
		v, ok := g[l.name]
		if !ok {
			t.Errorf("%s: not declared in package abi", l.name)
			continue
		}
		seen++
		if v != l.c {
			t.Errorf("%s: Go %d, C %d", l.name, v, l.c)
		}
	}
	if seen != len(g) {
		t.Errorf("package abi declares %d layouts, C checked %d", len(g), seen)
	}
	if abi.EFADeviceAttrSize != g["sizeof(struct efadv_device_attr)"] || abi.P2PAttrSize != g["sizeof(struct efadv_p2p_attr)"] {
		t.Error("size constants disagree with the structs")
	}
	if abi.EFADeviceAttrDeviceCapsOffset != g["efadv_device_attr.device_caps"] || abi.EFADeviceAttrDeviceCapsEnd != abi.EFADeviceAttrDeviceCapsOffset+4 {
		t.Error("device_caps offset constants disagree")
	}
	if abi.P2PAttrMinLen != g["efadv_p2p_attr.distance"]+4 {
		t.Error("P2PAttrMinLen is not the end of distance")
	}
}

func TestConstants(t *testing.T) {
	g := goConstants()
	c := cConstants()
	if len(g) != len(c) {
		t.Fatalf("%d Go constants, %d C constants", len(g), len(c))
	}
	for name, cv := range c {
		if gv, ok := g[name]; !ok || gv != cv {
			t.Errorf("%s: Go %d (declared %v), C %d", name, gv, ok, cv)
		}
	}
}
