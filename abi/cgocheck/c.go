// SPDX-License-Identifier: MIT

//go:build cgo

package cgocheck

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#include <stddef.h>
#include <infiniband/verbs.h>
#include <infiniband/efadv.h>
#include <infiniband/efadv_p2p.h>

struct layout {
	const char *name;
	size_t value;
};

static const struct layout layouts[] = {
	{"sizeof(struct efadv_device_attr)", sizeof(struct efadv_device_attr)},
	{"efadv_device_attr.comp_mask", offsetof(struct efadv_device_attr, comp_mask)},
	{"efadv_device_attr.max_sq_wr", offsetof(struct efadv_device_attr, max_sq_wr)},
	{"efadv_device_attr.max_rq_wr", offsetof(struct efadv_device_attr, max_rq_wr)},
	{"efadv_device_attr.max_sq_sge", offsetof(struct efadv_device_attr, max_sq_sge)},
	{"efadv_device_attr.max_rq_sge", offsetof(struct efadv_device_attr, max_rq_sge)},
	{"efadv_device_attr.inline_buf_size", offsetof(struct efadv_device_attr, inline_buf_size)},
	{"efadv_device_attr.reserved", offsetof(struct efadv_device_attr, reserved)},
	{"efadv_device_attr.device_caps", offsetof(struct efadv_device_attr, device_caps)},
	{"efadv_device_attr.max_rdma_size", offsetof(struct efadv_device_attr, max_rdma_size)},
	{"sizeof(struct ibv_device)", sizeof(struct ibv_device)},
	{"ibv_device.node_type", offsetof(struct ibv_device, node_type)},
	{"ibv_device.transport_type", offsetof(struct ibv_device, transport_type)},
	{"ibv_device.name", offsetof(struct ibv_device, name)},
	{"ibv_device.dev_name", offsetof(struct ibv_device, dev_name)},
	{"ibv_device.dev_path", offsetof(struct ibv_device, dev_path)},
	{"ibv_device.ibdev_path", offsetof(struct ibv_device, ibdev_path)},
	{"ibv_context.device", offsetof(struct ibv_context, device)},
	{"sizeof(struct ibv_pd)", sizeof(struct ibv_pd)},
	{"ibv_pd.context", offsetof(struct ibv_pd, context)},
	{"ibv_pd.handle", offsetof(struct ibv_pd, handle)},
	{"sizeof(struct ibv_mr)", sizeof(struct ibv_mr)},
	{"ibv_mr.context", offsetof(struct ibv_mr, context)},
	{"ibv_mr.pd", offsetof(struct ibv_mr, pd)},
	{"ibv_mr.addr", offsetof(struct ibv_mr, addr)},
	{"ibv_mr.length", offsetof(struct ibv_mr, length)},
	{"ibv_mr.handle", offsetof(struct ibv_mr, handle)},
	{"ibv_mr.lkey", offsetof(struct ibv_mr, lkey)},
	{"ibv_mr.rkey", offsetof(struct ibv_mr, rkey)},
	{"sizeof(struct efadv_p2p_attr)", sizeof(struct efadv_p2p_attr)},
	{"efadv_p2p_attr.comp_mask", offsetof(struct efadv_p2p_attr, comp_mask)},
	{"efadv_p2p_attr.map_type", offsetof(struct efadv_p2p_attr, map_type)},
	{"efadv_p2p_attr.distance", offsetof(struct efadv_p2p_attr, distance)},
	{"efadv_p2p_attr.path", offsetof(struct efadv_p2p_attr, path)},
	{"efadv_p2p_attr.outcome", offsetof(struct efadv_p2p_attr, outcome)},
	{"efadv_p2p_attr.policy", offsetof(struct efadv_p2p_attr, policy)},
	{"efadv_p2p_attr.source", offsetof(struct efadv_p2p_attr, source)},
	{"efadv_p2p_attr.bandwidth_mbs", offsetof(struct efadv_p2p_attr, bandwidth_mbs)},
	{"efadv_p2p_attr.latency_ns", offsetof(struct efadv_p2p_attr, latency_ns)},
	{"efadv_p2p_attr.flags", offsetof(struct efadv_p2p_attr, flags)},
	{"efadv_p2p_attr.peer_domain", offsetof(struct efadv_p2p_attr, peer_domain)},
	{"efadv_p2p_attr.peer_bus", offsetof(struct efadv_p2p_attr, peer_bus)},
	{"efadv_p2p_attr.peer_devfn", offsetof(struct efadv_p2p_attr, peer_devfn)},
	{"efadv_p2p_attr.reserved", offsetof(struct efadv_p2p_attr, reserved)},
	{"efadv_p2p_attr.reason", offsetof(struct efadv_p2p_attr, reason)},
	{"efadv_p2p_attr.peer_mem_outcome", offsetof(struct efadv_p2p_attr, peer_mem_outcome)},
	{"efadv_p2p_attr.peer_mem_provider", offsetof(struct efadv_p2p_attr, peer_mem_provider)},
	{"efadv_p2p_attr.kernel_release", offsetof(struct efadv_p2p_attr, kernel_release)},
};

struct constant {
	const char *name;
	long long value;
};

static const struct constant constants[] = {
	{"EFADV_DEVICE_ATTR_CAPS_RDMA_READ", (long long)(EFADV_DEVICE_ATTR_CAPS_RDMA_READ)},
	{"EFADV_DEVICE_ATTR_CAPS_RNR_RETRY", (long long)(EFADV_DEVICE_ATTR_CAPS_RNR_RETRY)},
	{"EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID", (long long)(EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID)},
	{"EFADV_DEVICE_ATTR_CAPS_P2P_DMA", (long long)(EFADV_DEVICE_ATTR_CAPS_P2P_DMA)},
	{"IBV_SYSFS_NAME_MAX", (long long)(IBV_SYSFS_NAME_MAX)},
	{"IBV_SYSFS_PATH_MAX", (long long)(IBV_SYSFS_PATH_MAX)},
	{"IBV_ACCESS_LOCAL_WRITE", (long long)(IBV_ACCESS_LOCAL_WRITE)},
	{"IBV_ACCESS_REMOTE_WRITE", (long long)(IBV_ACCESS_REMOTE_WRITE)},
	{"IBV_ACCESS_REMOTE_READ", (long long)(IBV_ACCESS_REMOTE_READ)},
	{"IBV_ACCESS_REMOTE_ATOMIC", (long long)(IBV_ACCESS_REMOTE_ATOMIC)},
	{"IBV_ACCESS_RELAXED_ORDERING", (long long)(IBV_ACCESS_RELAXED_ORDERING)},
	{"EFADV_P2P_MAP_UNKNOWN", (long long)(EFADV_P2P_MAP_UNKNOWN)},
	{"EFADV_P2P_MAP_NOT_SUPPORTED", (long long)(EFADV_P2P_MAP_NOT_SUPPORTED)},
	{"EFADV_P2P_MAP_BUS_ADDR", (long long)(EFADV_P2P_MAP_BUS_ADDR)},
	{"EFADV_P2P_MAP_THRU_HOST_BRIDGE", (long long)(EFADV_P2P_MAP_THRU_HOST_BRIDGE)},
	{"EFADV_P2P_PATH_UNKNOWN", (long long)(EFADV_P2P_PATH_UNKNOWN)},
	{"EFADV_P2P_PATH_LOC", (long long)(EFADV_P2P_PATH_LOC)},
	{"EFADV_P2P_PATH_PIX", (long long)(EFADV_P2P_PATH_PIX)},
	{"EFADV_P2P_PATH_PXB", (long long)(EFADV_P2P_PATH_PXB)},
	{"EFADV_P2P_PATH_PHB", (long long)(EFADV_P2P_PATH_PHB)},
	{"EFADV_P2P_PATH_NODE", (long long)(EFADV_P2P_PATH_NODE)},
	{"EFADV_P2P_PATH_SYS", (long long)(EFADV_P2P_PATH_SYS)},
	{"EFADV_P2P_OUTCOME_UNKNOWN", (long long)(EFADV_P2P_OUTCOME_UNKNOWN)},
	{"EFADV_P2P_OUTCOME_P2P", (long long)(EFADV_P2P_OUTCOME_P2P)},
	{"EFADV_P2P_OUTCOME_BOUNCED", (long long)(EFADV_P2P_OUTCOME_BOUNCED)},
	{"EFADV_P2P_OUTCOME_REFUSED", (long long)(EFADV_P2P_OUTCOME_REFUSED)},
	{"EFADV_P2P_POLICY_KERNEL", (long long)(EFADV_P2P_POLICY_KERNEL)},
	{"EFADV_P2P_POLICY_AMDGPU", (long long)(EFADV_P2P_POLICY_AMDGPU)},
	{"EFADV_P2P_POLICY_NVIDIA", (long long)(EFADV_P2P_POLICY_NVIDIA)},
	{"EFADV_P2P_POLICY_NEURON", (long long)(EFADV_P2P_POLICY_NEURON)},
	{"EFADV_P2P_POLICY_XE", (long long)(EFADV_P2P_POLICY_XE)},
	{"EFADV_P2P_POLICY_VFIO", (long long)(EFADV_P2P_POLICY_VFIO)},
	{"EFADV_P2P_POLICY_I915", (long long)(EFADV_P2P_POLICY_I915)},
	{"EFADV_P2P_PEER_MEM_UNKNOWN", (long long)(EFADV_P2P_PEER_MEM_UNKNOWN)},
	{"EFADV_P2P_PEER_MEM_NONE", (long long)(EFADV_P2P_PEER_MEM_NONE)},
	{"EFADV_P2P_PEER_MEM_NVIDIA", (long long)(EFADV_P2P_PEER_MEM_NVIDIA)},
	{"EFADV_P2P_PEER_MEM_NVIDIA_PEERMEM", (long long)(EFADV_P2P_PEER_MEM_NVIDIA_PEERMEM)},
	{"EFADV_P2P_PEER_MEM_NEURON", (long long)(EFADV_P2P_PEER_MEM_NEURON)},
	{"EFADV_P2P_PEER_MEM_OTHER", (long long)(EFADV_P2P_PEER_MEM_OTHER)},
	{"EFADV_P2P_SOURCE_COMPUTED", (long long)(EFADV_P2P_SOURCE_COMPUTED)},
	{"EFADV_P2P_SOURCE_ACPI", (long long)(EFADV_P2P_SOURCE_ACPI)},
	{"EFADV_P2P_SOURCE_TOPOLOGY_FILE", (long long)(EFADV_P2P_SOURCE_TOPOLOGY_FILE)},
	{"EFADV_P2P_FLAG_UNCERTAIN", (long long)(EFADV_P2P_FLAG_UNCERTAIN)},
	{"EFADV_P2P_FLAG_ASSUMED", (long long)(EFADV_P2P_FLAG_ASSUMED)},
	{"EFADV_P2P_FLAG_AMBIGUOUS_PEER", (long long)(EFADV_P2P_FLAG_AMBIGUOUS_PEER)},
};

static size_t nlayouts(void) { return sizeof(layouts) / sizeof(layouts[0]); }
static const char *layout_name(size_t i) { return layouts[i].name; }
static size_t layout_value(size_t i) { return layouts[i].value; }
static size_t nconstants(void) { return sizeof(constants) / sizeof(constants[0]); }
static const char *constant_name(size_t i) { return constants[i].name; }
static long long constant_value(size_t i) { return constants[i].value; }
*/
import "C"

// layout is one C size or offset, by name.
type layout struct {
	name string
	c    uintptr
}

// cLayouts returns the sizes and offsets the C compiler sees.
func cLayouts() []layout {
	var out []layout
	for i := C.size_t(0); i < C.nlayouts(); i++ {
		out = append(out, layout{C.GoString(C.layout_name(i)), uintptr(C.layout_value(i))})
	}
	return out
}

// cConstants returns the C constants, by name.
func cConstants() map[string]int64 {
	out := map[string]int64{}
	for i := C.size_t(0); i < C.nconstants(); i++ {
		out[C.GoString(C.constant_name(i))] = int64(C.constant_value(i))
	}
	return out
}
