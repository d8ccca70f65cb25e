// SPDX-License-Identifier: MIT
/*
 * The emulator's own definitions of the kernel ABI (sim/preload/abi.h)
 * against the installed uapi headers (<rdma/...> from linux-libc-dev:
 * kernel 6.1's on Debian 12, 6.12's on Debian 13): every field both have at
 * the same offset and size, every number the same, and a structure the
 * installed headers know in full the same size. Where the installed headers
 * are older (6.1's efa_ibv_create_qp ends at driver_qp_type, 6.12's has no
 * sl), ours must extend theirs. A mistake in abi.h
 * would have the emulator misread what a libefa sends.
 */
#include <stddef.h>
#include <stdint.h>

#include <rdma/efa-abi.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "abi.h"
#include "check.h"

#define MSIZE(t, f) sizeof(((t *)0)->f)
/* field f of our struct o and their struct t */
#define FIELD2(o, t, fo, ft)                                                         \
	do {                                                                         \
		CHECK_EQ(offsetof(struct o, fo), offsetof(struct t, ft));             \
		CHECK_EQ(MSIZE(struct o, fo), MSIZE(struct t, ft));                   \
	} while (0)
#define FIELD(o, t, f) FIELD2(o, t, f, f)
#define SIZE(o, t) CHECK_EQ(sizeof(struct o), sizeof(struct t))

static void core(void)
{
	CHECK_EQ(UV_CMD_GET_CONTEXT, IB_USER_VERBS_CMD_GET_CONTEXT);
	CHECK_EQ(UV_CMD_QUERY_DEVICE, IB_USER_VERBS_CMD_QUERY_DEVICE);
	CHECK_EQ(UV_CMD_QUERY_PORT, IB_USER_VERBS_CMD_QUERY_PORT);
	CHECK_EQ(UV_CMD_ALLOC_PD, IB_USER_VERBS_CMD_ALLOC_PD);
	CHECK_EQ(UV_CMD_DEALLOC_PD, IB_USER_VERBS_CMD_DEALLOC_PD);
	CHECK_EQ(UV_CMD_CREATE_AH, IB_USER_VERBS_CMD_CREATE_AH);
	CHECK_EQ(UV_CMD_DESTROY_AH, IB_USER_VERBS_CMD_DESTROY_AH);
	CHECK_EQ(UV_CMD_REG_MR, IB_USER_VERBS_CMD_REG_MR);
	CHECK_EQ(UV_CMD_DEREG_MR, IB_USER_VERBS_CMD_DEREG_MR);
	CHECK_EQ(UV_CMD_CREATE_COMP_CHANNEL, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL);
	CHECK_EQ(UV_CMD_CREATE_CQ, IB_USER_VERBS_CMD_CREATE_CQ);
	CHECK_EQ(UV_CMD_DESTROY_CQ, IB_USER_VERBS_CMD_DESTROY_CQ);
	CHECK_EQ(UV_CMD_CREATE_QP, IB_USER_VERBS_CMD_CREATE_QP);
	CHECK_EQ(UV_CMD_QUERY_QP, IB_USER_VERBS_CMD_QUERY_QP);
	CHECK_EQ(UV_CMD_MODIFY_QP, IB_USER_VERBS_CMD_MODIFY_QP);
	CHECK_EQ(UV_CMD_DESTROY_QP, IB_USER_VERBS_CMD_DESTROY_QP);
	CHECK_EQ(UV_EX_CMD_QUERY_DEVICE, IB_USER_VERBS_EX_CMD_QUERY_DEVICE);
	CHECK_EQ(UV_EX_CMD_CREATE_CQ, IB_USER_VERBS_EX_CMD_CREATE_CQ);
	CHECK_EQ(UV_CMD_COMMAND_MASK, IB_USER_VERBS_CMD_COMMAND_MASK);
	CHECK_EQ(UV_CMD_FLAG_EXTENDED, IB_USER_VERBS_CMD_FLAG_EXTENDED);

	SIZE(uv_cmd_hdr, ib_uverbs_cmd_hdr);
	FIELD(uv_cmd_hdr, ib_uverbs_cmd_hdr, in_words);
	FIELD(uv_cmd_hdr, ib_uverbs_cmd_hdr, out_words);
	SIZE(uv_ex_cmd_hdr, ib_uverbs_ex_cmd_hdr);
	FIELD(uv_ex_cmd_hdr, ib_uverbs_ex_cmd_hdr, provider_in_words);
	FIELD(uv_ex_cmd_hdr, ib_uverbs_ex_cmd_hdr, provider_out_words);
	SIZE(uv_async_event_desc, ib_uverbs_async_event_desc);
	SIZE(uv_get_context, ib_uverbs_get_context);
	SIZE(uv_get_context_resp, ib_uverbs_get_context_resp);
	FIELD(uv_get_context_resp, ib_uverbs_get_context_resp, num_comp_vectors);
	SIZE(uv_query_device_resp, ib_uverbs_query_device_resp);
	FIELD(uv_query_device_resp, ib_uverbs_query_device_resp, max_mr_size);
	FIELD(uv_query_device_resp, ib_uverbs_query_device_resp, max_qp_wr);
	FIELD(uv_query_device_resp, ib_uverbs_query_device_resp, max_ah);
	FIELD(uv_query_device_resp, ib_uverbs_query_device_resp, max_pkeys);
	FIELD(uv_query_device_resp, ib_uverbs_query_device_resp, phys_port_cnt);
	SIZE(uv_ex_query_device, ib_uverbs_ex_query_device);
	SIZE(uv_ex_query_device_resp, ib_uverbs_ex_query_device_resp);
	FIELD(uv_ex_query_device_resp, ib_uverbs_ex_query_device_resp, response_length);
	FIELD(uv_ex_query_device_resp, ib_uverbs_ex_query_device_resp, device_cap_flags_ex);
	FIELD(uv_ex_query_device_resp, ib_uverbs_ex_query_device_resp, max_dm_size);
	SIZE(uv_query_port, ib_uverbs_query_port);
	FIELD(uv_query_port, ib_uverbs_query_port, port_num);
	SIZE(uv_query_port_resp, ib_uverbs_query_port_resp);
	FIELD(uv_query_port_resp, ib_uverbs_query_port_resp, max_msg_sz);
	FIELD(uv_query_port_resp, ib_uverbs_query_port_resp, gid_tbl_len);
	FIELD(uv_query_port_resp, ib_uverbs_query_port_resp, state);
	FIELD(uv_query_port_resp, ib_uverbs_query_port_resp, active_mtu);
	FIELD(uv_query_port_resp, ib_uverbs_query_port_resp, link_layer);
	SIZE(uv_alloc_pd, ib_uverbs_alloc_pd);
	SIZE(uv_alloc_pd_resp, ib_uverbs_alloc_pd_resp);
	SIZE(uv_dealloc_pd, ib_uverbs_dealloc_pd);
	SIZE(uv_reg_mr, ib_uverbs_reg_mr);
	FIELD(uv_reg_mr, ib_uverbs_reg_mr, hca_va);
	FIELD(uv_reg_mr, ib_uverbs_reg_mr, access_flags);
	SIZE(uv_reg_mr_resp, ib_uverbs_reg_mr_resp);
	FIELD(uv_reg_mr_resp, ib_uverbs_reg_mr_resp, rkey);
	SIZE(uv_dereg_mr, ib_uverbs_dereg_mr);
	SIZE(uv_create_comp_channel, ib_uverbs_create_comp_channel);
	SIZE(uv_create_comp_channel_resp, ib_uverbs_create_comp_channel_resp);
	SIZE(uv_create_cq, ib_uverbs_create_cq);
	FIELD(uv_create_cq, ib_uverbs_create_cq, comp_channel);
	SIZE(uv_ex_create_cq, ib_uverbs_ex_create_cq);
	FIELD(uv_ex_create_cq, ib_uverbs_ex_create_cq, flags);
	SIZE(uv_create_cq_resp, ib_uverbs_create_cq_resp);
	SIZE(uv_ex_create_cq_resp, ib_uverbs_ex_create_cq_resp);
	FIELD(uv_ex_create_cq_resp, ib_uverbs_ex_create_cq_resp, response_length);
	SIZE(uv_destroy_cq, ib_uverbs_destroy_cq);
	SIZE(uv_destroy_cq_resp, ib_uverbs_destroy_cq_resp);
	SIZE(uv_ah_attr, ib_uverbs_ah_attr);
	FIELD(uv_ah_attr, ib_uverbs_ah_attr, is_global);
	FIELD(uv_ah_attr, ib_uverbs_ah_attr, port_num);
	FIELD(uv_global_route, ib_uverbs_global_route, sgid_index);
	SIZE(uv_create_qp, ib_uverbs_create_qp);
	FIELD(uv_create_qp, ib_uverbs_create_qp, srq_handle);
	FIELD(uv_create_qp, ib_uverbs_create_qp, max_inline_data);
	FIELD(uv_create_qp, ib_uverbs_create_qp, qp_type);
	FIELD(uv_create_qp, ib_uverbs_create_qp, is_srq);
	SIZE(uv_create_qp_resp, ib_uverbs_create_qp_resp);
	FIELD(uv_create_qp_resp, ib_uverbs_create_qp_resp, max_inline_data);
	SIZE(uv_qp_dest, ib_uverbs_qp_dest);
	SIZE(uv_query_qp, ib_uverbs_query_qp);
	SIZE(uv_query_qp_resp, ib_uverbs_query_qp_resp);
	FIELD(uv_query_qp_resp, ib_uverbs_query_qp_resp, qkey);
	FIELD(uv_query_qp_resp, ib_uverbs_query_qp_resp, qp_state);
	FIELD(uv_query_qp_resp, ib_uverbs_query_qp_resp, rnr_retry);
	SIZE(uv_modify_qp, ib_uverbs_modify_qp);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, qp_handle);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, attr_mask);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, qkey);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, sq_psn);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, pkey_index);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, qp_state);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, cur_qp_state);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, en_sqd_async_notify);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, port_num);
	FIELD(uv_modify_qp, ib_uverbs_modify_qp, rnr_retry);
	SIZE(uv_destroy_qp, ib_uverbs_destroy_qp);
	SIZE(uv_destroy_qp_resp, ib_uverbs_destroy_qp_resp);
	SIZE(uv_create_ah, ib_uverbs_create_ah);
	FIELD(uv_create_ah, ib_uverbs_create_ah, attr);
	SIZE(uv_create_ah_resp, ib_uverbs_create_ah_resp);
	SIZE(uv_destroy_ah, ib_uverbs_destroy_ah);

	CHECK_EQ(UV_ACCESS_LOCAL_WRITE, IB_UVERBS_ACCESS_LOCAL_WRITE);
	CHECK_EQ(UV_ACCESS_REMOTE_WRITE, IB_UVERBS_ACCESS_REMOTE_WRITE);
	CHECK_EQ(UV_ACCESS_REMOTE_READ, IB_UVERBS_ACCESS_REMOTE_READ);
	CHECK_EQ(UV_ACCESS_REMOTE_ATOMIC, IB_UVERBS_ACCESS_REMOTE_ATOMIC);
	CHECK_EQ(UV_ACCESS_ON_DEMAND, IB_UVERBS_ACCESS_ON_DEMAND);
	CHECK_EQ(UV_ACCESS_RELAXED_ORDERING, IB_UVERBS_ACCESS_RELAXED_ORDERING);
	CHECK_EQ(UV_ACCESS_OPTIONAL_RANGE, IB_UVERBS_ACCESS_OPTIONAL_RANGE);
	CHECK_EQ(UV_CQ_FLAGS_TIMESTAMP_COMPLETION, IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION);
	CHECK_EQ(UV_CQ_FLAGS_IGNORE_OVERRUN, IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN);
}

static void ioctls(void)
{
	SIZE(uv_ioctl_hdr, ib_uverbs_ioctl_hdr);
	FIELD(uv_ioctl_hdr, ib_uverbs_ioctl_hdr, num_attrs);
	FIELD(uv_ioctl_hdr, ib_uverbs_ioctl_hdr, driver_id);
	FIELD(uv_ioctl_hdr, ib_uverbs_ioctl_hdr, reserved2);
	SIZE(uv_ioctl_attr, ib_uverbs_attr);
	FIELD(uv_ioctl_attr, ib_uverbs_attr, len);
	FIELD(uv_ioctl_attr, ib_uverbs_attr, flags);
	FIELD(uv_ioctl_attr, ib_uverbs_attr, attr_data);
	FIELD(uv_ioctl_attr, ib_uverbs_attr, data);
	CHECK_EQ(UV_VERBS_IOCTL, RDMA_VERBS_IOCTL);
	CHECK_EQ(UV_ATTR_F_MANDATORY, UVERBS_ATTR_F_MANDATORY);
	CHECK_EQ(UV_ATTR_F_VALID_OUTPUT, UVERBS_ATTR_F_VALID_OUTPUT);
	CHECK_EQ(UV_DRIVER_EFA, RDMA_DRIVER_EFA);
	CHECK_EQ(UV_ID_DRIVER_NS, 1u << UVERBS_ID_NS_SHIFT);
	CHECK_EQ(UV_OBJECT_DEVICE, UVERBS_OBJECT_DEVICE);
	CHECK_EQ(UV_OBJECT_PD, UVERBS_OBJECT_PD);
	CHECK_EQ(UV_OBJECT_CQ, UVERBS_OBJECT_CQ);
	CHECK_EQ(UV_OBJECT_QP, UVERBS_OBJECT_QP);
	CHECK_EQ(UV_OBJECT_AH, UVERBS_OBJECT_AH);
	CHECK_EQ(UV_OBJECT_MR, UVERBS_OBJECT_MR);
	CHECK_EQ(UV_OBJECT_ASYNC_EVENT, UVERBS_OBJECT_ASYNC_EVENT);
	CHECK_EQ(UV_METHOD_MR_DESTROY, UVERBS_METHOD_MR_DESTROY);
	CHECK_EQ(UV_METHOD_QUERY_MR, UVERBS_METHOD_QUERY_MR);
	CHECK_EQ(UV_METHOD_REG_DMABUF_MR, UVERBS_METHOD_REG_DMABUF_MR);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_HANDLE, UVERBS_ATTR_REG_DMABUF_MR_HANDLE);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_PD_HANDLE, UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_OFFSET, UVERBS_ATTR_REG_DMABUF_MR_OFFSET);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_LENGTH, UVERBS_ATTR_REG_DMABUF_MR_LENGTH);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_IOVA, UVERBS_ATTR_REG_DMABUF_MR_IOVA);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_FD, UVERBS_ATTR_REG_DMABUF_MR_FD);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_RESP_LKEY, UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY);
	CHECK_EQ(UV_ATTR_REG_DMABUF_MR_RESP_RKEY, UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY);
}

static void efa(void)
{
	SIZE(efa_uv_alloc_ucontext_cmd, efa_ibv_alloc_ucontext_cmd);
	FIELD(efa_uv_alloc_ucontext_cmd, efa_ibv_alloc_ucontext_cmd, comp_mask);
	SIZE(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, cmds_supp_udata_mask);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, sub_cqs_per_cq);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, inline_buf_size);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, max_llq_size);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, max_tx_batch);
	FIELD(efa_uv_alloc_ucontext_resp, efa_ibv_alloc_ucontext_resp, min_sq_wr);
	CHECK_EQ(EFA_UV_UCONTEXT_CMD_TX_BATCH, EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH);
	CHECK_EQ(EFA_UV_UCONTEXT_CMD_MIN_SQ_WR, EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR);
	CHECK_EQ(EFA_UV_CMDS_SUPP_UDATA_QUERY_DEVICE, EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE);
	CHECK_EQ(EFA_UV_CMDS_SUPP_UDATA_CREATE_AH, EFA_USER_CMDS_SUPP_UDATA_CREATE_AH);
	SIZE(efa_uv_alloc_pd_resp, efa_ibv_alloc_pd_resp);
	FIELD(efa_uv_alloc_pd_resp, efa_ibv_alloc_pd_resp, pdn);
	SIZE(efa_uv_create_cq, efa_ibv_create_cq);
	FIELD(efa_uv_create_cq, efa_ibv_create_cq, cq_entry_size);
	FIELD(efa_uv_create_cq, efa_ibv_create_cq, num_sub_cqs);
	FIELD(efa_uv_create_cq, efa_ibv_create_cq, flags);
	FIELD(efa_uv_create_cq, efa_ibv_create_cq, reserved_58);
	CHECK_EQ(EFA_UV_CREATE_CQ_WITH_COMPLETION_CHANNEL, EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL);
	CHECK_EQ(EFA_UV_CREATE_CQ_WITH_SGID, EFA_CREATE_CQ_WITH_SGID);
	SIZE(efa_uv_create_cq_resp, efa_ibv_create_cq_resp);
	FIELD(efa_uv_create_cq_resp, efa_ibv_create_cq_resp, q_mmap_key);
	FIELD(efa_uv_create_cq_resp, efa_ibv_create_cq_resp, cq_idx);
	FIELD(efa_uv_create_cq_resp, efa_ibv_create_cq_resp, db_off);
	FIELD(efa_uv_create_cq_resp, efa_ibv_create_cq_resp, db_mmap_key);
	CHECK_EQ(EFA_UV_CREATE_CQ_RESP_DB_OFF, EFA_CREATE_CQ_RESP_DB_OFF);
	CHECK_EQ(EFA_UV_QP_DRIVER_TYPE_SRD, EFA_QP_DRIVER_TYPE_SRD);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, comp_mask);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, rq_ring_size);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, sq_ring_size);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, driver_qp_type);
	/* 6.1's command is the one before 6.10; ours extends it */
	CHECK(sizeof(struct efa_ibv_create_qp) >= EFA_UV_CREATE_QP_SIZE_6_1 &&
	      sizeof(struct efa_ibv_create_qp) <= sizeof(struct efa_uv_create_qp),
	      "efa_ibv_create_qp is %zu bytes", sizeof(struct efa_ibv_create_qp));
#ifdef HAVE_EFA_CREATE_QP_FLAGS
	SIZE(efa_uv_create_qp, efa_ibv_create_qp);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, flags);
	CHECK_EQ(EFA_UV_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV,
		 EFA_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV);
#else
	CHECK_EQ(sizeof(struct efa_ibv_create_qp), EFA_UV_CREATE_QP_SIZE_6_1);
#endif
#ifdef HAVE_EFA_CREATE_QP_SL
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, sl);
	FIELD(efa_uv_create_qp, efa_ibv_create_qp, reserved_98);
#endif
	SIZE(efa_uv_create_qp_resp, efa_ibv_create_qp_resp);
	FIELD(efa_uv_create_qp_resp, efa_ibv_create_qp_resp, rq_mmap_key);
	FIELD(efa_uv_create_qp_resp, efa_ibv_create_qp_resp, llq_desc_mmap_key);
	FIELD(efa_uv_create_qp_resp, efa_ibv_create_qp_resp, recv_sub_cq_idx);
	SIZE(efa_uv_create_ah_resp, efa_ibv_create_ah_resp);
	FIELD(efa_uv_create_ah_resp, efa_ibv_create_ah_resp, efa_address_handle);
	SIZE(efa_uv_ex_query_device_resp, efa_ibv_ex_query_device_resp);
	FIELD(efa_uv_ex_query_device_resp, efa_ibv_ex_query_device_resp, max_rdma_size);
	FIELD(efa_uv_ex_query_device_resp, efa_ibv_ex_query_device_resp, device_caps);
#ifdef HAVE_EFA_CREATE_QP_FLAGS
	/* 6.10+ headers (query MR arrived in 6.8) */
	CHECK_EQ(EFA_UV_METHOD_MR_QUERY, EFA_IB_METHOD_MR_QUERY);
	CHECK_EQ(EFA_UV_ATTR_QUERY_MR_HANDLE, EFA_IB_ATTR_QUERY_MR_HANDLE);
	CHECK_EQ(EFA_UV_ATTR_QUERY_MR_RESP_IC_ID_VALIDITY, EFA_IB_ATTR_QUERY_MR_RESP_IC_ID_VALIDITY);
	CHECK_EQ(EFA_UV_ATTR_QUERY_MR_RESP_RECV_IC_ID, EFA_IB_ATTR_QUERY_MR_RESP_RECV_IC_ID);
	CHECK_EQ(EFA_UV_ATTR_QUERY_MR_RESP_RDMA_READ_IC_ID, EFA_IB_ATTR_QUERY_MR_RESP_RDMA_READ_IC_ID);
	CHECK_EQ(EFA_UV_ATTR_QUERY_MR_RESP_RDMA_RECV_IC_ID, EFA_IB_ATTR_QUERY_MR_RESP_RDMA_RECV_IC_ID);
	CHECK_EQ(EFA_UV_QUERY_MR_VALIDITY_RECV_IC_ID, EFA_QUERY_MR_VALIDITY_RECV_IC_ID);
	CHECK_EQ(EFA_UV_QUERY_MR_VALIDITY_RDMA_READ_IC_ID, EFA_QUERY_MR_VALIDITY_RDMA_READ_IC_ID);
	CHECK_EQ(EFA_UV_QUERY_MR_VALIDITY_RDMA_RECV_IC_ID, EFA_QUERY_MR_VALIDITY_RDMA_RECV_IC_ID);
#endif
}

int main(void)
{
	core();
	ioctls();
	efa();
	return check_exit("test_emulator_abi");
}
