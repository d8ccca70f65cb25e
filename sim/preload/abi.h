// SPDX-License-Identifier: MIT
/*
 * The kernel ABI the emulated ib_uverbs core and efa driver speak: the
 * write() commands and their responses, the RDMA_VERBS_IOCTL header and
 * attributes, and the efa driver's udata. Our own definitions, written from
 * what the kernel's uapi headers (include/uapi/rdma/ib_user_verbs.h,
 * rdma_user_ioctl_cmds.h, ib_user_ioctl_cmds.h, ib_user_ioctl_verbs.h,
 * efa-abi.h) state as facts: field order, sizes, numbers.
 *
 * Why not the installed uapi headers (<rdma/...> from linux-libc-dev:
 * kernel 6.1's on Debian 12, 6.12's on Debian 13): they are a snapshot of
 * one kernel. Built against 6.1's, the emulator would not know the flags
 * field of EFA's create-QP command (kernel 6.10) and refuse it where a 6.10
 * kernel accepts it; built against 6.12's, it would accept it where a 6.8
 * kernel refuses it, and refuse the service level 6.13 accepts. Here every structure has its newest layout, and the
 * command handlers decide what each field means by the release of the
 * model's efa driver (efasim_efa_at_least: the kernel's in-tree driver, or
 * AWS's out-of-tree one by its version), as that driver does.
 * ctests/emulator/test_emulator_abi.c checks these definitions against
 * whichever uapi headers are installed.
 *
 * The names carry our own prefixes (uv_, UV_, efa_uv_, EFA_UV_) so that a
 * file may include <infiniband/verbs.h> (which brings the installed uapi
 * headers) beside this one.
 */
#ifndef EFASIM_ABI_H
#define EFASIM_ABI_H

#include <stdint.h>

typedef uint64_t uv_u64 __attribute__((aligned(8)));

/* ------------------------------------------------------------ releases */

/* A kernel release as a number: KREL(6, 10) */
#define KREL(major, minor) ((uint32_t)(major) << 16 | (uint32_t)(minor) << 8)

/*
 * What arrived in which release of the efa driver and ib_uverbs, as far as
 * the libefa and libibverbs of rdma-core 44 and 56 ask for it (the table
 * in README.md lists every method they call).
 */
#define KREL_EFA_QUERY_MR KREL(6, 8)        /* EFA_IB_METHOD_MR_QUERY ("RDMA/efa: Add EFA query MR support") */
#define KREL_EFA_QP_FLAGS KREL(6, 10)       /* efa_ibv_create_qp.flags: UNSOLICITED_WRITE_RECV */
#define KREL_EFA_QP_SL KREL(6, 13)          /* efa_ibv_create_qp.sl ("Add option to set QP service level on create") */

/* ------------------------------------------------------------ write() commands */

enum {
	UV_CMD_GET_CONTEXT = 0,
	UV_CMD_QUERY_DEVICE = 1,
	UV_CMD_QUERY_PORT = 2,
	UV_CMD_ALLOC_PD = 3,
	UV_CMD_DEALLOC_PD = 4,
	UV_CMD_CREATE_AH = 5,
	UV_CMD_DESTROY_AH = 8,
	UV_CMD_REG_MR = 9,
	UV_CMD_DEREG_MR = 13,
	UV_CMD_CREATE_COMP_CHANNEL = 17,
	UV_CMD_CREATE_CQ = 18,
	UV_CMD_DESTROY_CQ = 20,
	UV_CMD_CREATE_QP = 24,
	UV_CMD_QUERY_QP = 25,
	UV_CMD_MODIFY_QP = 26,
	UV_CMD_DESTROY_QP = 27,
	/* extended commands (UV_CMD_FLAG_EXTENDED) */
	UV_EX_CMD_QUERY_DEVICE = UV_CMD_QUERY_DEVICE,
	UV_EX_CMD_CREATE_CQ = UV_CMD_CREATE_CQ,
};

#define UV_CMD_COMMAND_MASK 0xffu
#define UV_CMD_FLAG_EXTENDED 0x80000000u

struct uv_cmd_hdr {
	uint32_t command;
	uint16_t in_words;  /* 4-byte words, header included */
	uint16_t out_words;
};

struct uv_ex_cmd_hdr {
	uv_u64 response;
	uint16_t provider_in_words; /* 8-byte words */
	uint16_t provider_out_words;
	uint32_t cmd_hdr_reserved;
};

struct uv_async_event_desc {
	uv_u64 element;
	uint32_t event_type;
	uint32_t reserved;
};

struct uv_get_context {
	uv_u64 response;
};

struct uv_get_context_resp {
	uint32_t async_fd;
	uint32_t num_comp_vectors;
};

struct uv_query_device {
	uv_u64 response;
};

struct uv_query_device_resp {
	uv_u64 fw_ver;
	uv_u64 node_guid; /* big-endian */
	uv_u64 sys_image_guid; /* big-endian */
	uv_u64 max_mr_size;
	uv_u64 page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t device_cap_flags;
	uint32_t max_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_ee_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_ee_init_rd_atom;
	uint32_t atomic_cap;
	uint32_t max_ee;
	uint32_t max_rdd;
	uint32_t max_mw;
	uint32_t max_raw_ipv6_qp;
	uint32_t max_raw_ethy_qp;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_fmr;
	uint32_t max_map_per_fmr;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
	uint8_t reserved[4];
};

struct uv_ex_query_device {
	uint32_t comp_mask;
	uint32_t reserved;
};

struct uv_ex_query_device_resp {
	struct uv_query_device_resp base;
	uint32_t comp_mask;
	uint32_t response_length;
	struct {
		uv_u64 general_caps;
		uint32_t rc_odp_caps, uc_odp_caps, ud_odp_caps;
		uint32_t reserved;
	} odp_caps;
	uv_u64 timestamp_mask;
	uv_u64 hca_core_clock;
	uv_u64 device_cap_flags_ex;
	struct {
		uint32_t supported_qpts;
		uint32_t max_rwq_indirection_tables;
		uint32_t max_rwq_indirection_table_size;
		uint32_t reserved;
	} rss_caps;
	uint32_t max_wq_type_rq;
	uint32_t raw_packet_caps;
	struct {
		uint32_t max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved;
	} tm_caps;
	struct {
		uint16_t max_cq_moderation_count, max_cq_moderation_period;
		uint32_t reserved;
	} cq_moderation_caps;
	uv_u64 max_dm_size;
	uint32_t xrc_odp_caps;
	uint32_t reserved;
};

struct uv_query_port {
	uv_u64 response;
	uint8_t port_num;
	uint8_t reserved[7];
};

struct uv_query_port_resp {
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint32_t gid_tbl_len;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t state;
	uint8_t max_mtu;
	uint8_t active_mtu;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint8_t reserved;
};

struct uv_alloc_pd {
	uv_u64 response;
};

struct uv_alloc_pd_resp {
	uint32_t pd_handle;
};

struct uv_dealloc_pd {
	uint32_t pd_handle;
};

struct uv_reg_mr {
	uv_u64 response;
	uv_u64 start;
	uv_u64 length;
	uv_u64 hca_va;
	uint32_t pd_handle;
	uint32_t access_flags;
};

struct uv_reg_mr_resp {
	uint32_t mr_handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct uv_dereg_mr {
	uint32_t mr_handle;
};

struct uv_create_comp_channel {
	uv_u64 response;
};

struct uv_create_comp_channel_resp {
	uint32_t fd;
};

struct uv_create_cq {
	uv_u64 response;
	uv_u64 user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t reserved;
};

struct uv_ex_create_cq {
	uv_u64 user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t comp_mask;
	uint32_t flags;
	uint32_t reserved;
};

enum {
	UV_CQ_FLAGS_TIMESTAMP_COMPLETION = 1 << 0,
	UV_CQ_FLAGS_IGNORE_OVERRUN = 1 << 1,
};

struct uv_create_cq_resp {
	uint32_t cq_handle;
	uint32_t cqe;
};

struct uv_ex_create_cq_resp {
	struct uv_create_cq_resp base;
	uint32_t comp_mask;
	uint32_t response_length;
};

struct uv_destroy_cq {
	uv_u64 response;
	uint32_t cq_handle;
	uint32_t reserved;
};

struct uv_destroy_cq_resp {
	uint32_t comp_events_reported;
	uint32_t async_events_reported;
};

struct uv_global_route {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t reserved;
};

struct uv_ah_attr {
	struct uv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
	uint8_t reserved;
};

struct uv_create_qp {
	uv_u64 response;
	uv_u64 user_handle;
	uint32_t pd_handle;
	uint32_t send_cq_handle;
	uint32_t recv_cq_handle;
	uint32_t srq_handle;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint8_t sq_sig_all;
	uint8_t qp_type;
	uint8_t is_srq;
	uint8_t reserved;
};

struct uv_create_qp_resp {
	uint32_t qp_handle;
	uint32_t qpn;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t reserved;
};

struct uv_qp_dest {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint16_t reserved;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

struct uv_query_qp {
	uv_u64 response;
	uint32_t qp_handle;
	uint32_t attr_mask;
};

struct uv_query_qp_resp {
	struct uv_qp_dest dest;
	struct uv_qp_dest alt_dest;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t sq_sig_all;
	uint8_t reserved[5];
};

struct uv_modify_qp {
	struct uv_qp_dest dest;
	struct uv_qp_dest alt_dest;
	uint32_t qp_handle;
	uint32_t attr_mask;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
	uint8_t en_sqd_async_notify;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t reserved[2];
};

struct uv_destroy_qp {
	uv_u64 response;
	uint32_t qp_handle;
	uint32_t reserved;
};

struct uv_destroy_qp_resp {
	uint32_t events_reported;
};

struct uv_create_ah {
	uv_u64 response;
	uv_u64 user_handle;
	uint32_t pd_handle;
	uint32_t reserved;
	struct uv_ah_attr attr;
};

struct uv_create_ah_resp {
	uint32_t ah_handle;
};

struct uv_destroy_ah {
	uint32_t ah_handle;
};

/* ib_uverbs_access_flags */
enum {
	UV_ACCESS_LOCAL_WRITE = 1 << 0,
	UV_ACCESS_REMOTE_WRITE = 1 << 1,
	UV_ACCESS_REMOTE_READ = 1 << 2,
	UV_ACCESS_REMOTE_ATOMIC = 1 << 3,
	UV_ACCESS_MW_BIND = 1 << 4,
	UV_ACCESS_ZERO_BASED = 1 << 5,
	UV_ACCESS_ON_DEMAND = 1 << 6,
	UV_ACCESS_HUGETLB = 1 << 7,
	UV_ACCESS_FLUSH_GLOBAL = 1 << 8,
	UV_ACCESS_FLUSH_PERSISTENT = 1 << 9,
	UV_ACCESS_RELAXED_ORDERING = 1 << 20, /* the first optional flag */
	UV_ACCESS_OPTIONAL_RANGE = ((1 << 30) - 1) & ~((1 << 20) - 1),
};

/* ------------------------------------------------------------ RDMA_VERBS_IOCTL */

struct uv_ioctl_attr {
	uint16_t attr_id;
	uint16_t len;
	uint16_t flags;     /* UV_ATTR_F_* */
	uint16_t attr_data; /* enum_data.elem_id in the low byte for enum attributes */
	union {
		uv_u64 data;
		int64_t data_s64;
	};
};

struct uv_ioctl_hdr {
	uint16_t length; /* bytes, attributes included */
	uint16_t object_id;
	uint16_t method_id;
	uint16_t num_attrs;
	uv_u64 reserved1;
	uint32_t driver_id;
	uint32_t reserved2;
};

/* _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr) */
#define UV_VERBS_IOCTL 0xc0181b01ul

enum {
	UV_ATTR_F_MANDATORY = 1 << 0,
	UV_ATTR_F_VALID_OUTPUT = 1 << 1,
};

/* enum rdma_driver_id */
#define UV_DRIVER_EFA 17

/* an id with this bit is the driver's (UVERBS_ID_NS_SHIFT 12) */
#define UV_ID_DRIVER_NS 0x1000u

/* enum uverbs_default_objects */
enum {
	UV_OBJECT_DEVICE = 0,
	UV_OBJECT_PD = 1,
	UV_OBJECT_COMP_CHANNEL = 2,
	UV_OBJECT_CQ = 3,
	UV_OBJECT_QP = 4,
	UV_OBJECT_SRQ = 5,
	UV_OBJECT_AH = 6,
	UV_OBJECT_MR = 7,
	UV_OBJECT_MW = 8,
	UV_OBJECT_FLOW = 9,
	UV_OBJECT_XRCD = 10,
	UV_OBJECT_RWQ_IND_TBL = 11,
	UV_OBJECT_WQ = 12,
	UV_OBJECT_FLOW_ACTION = 13,
	UV_OBJECT_DM = 14,
	UV_OBJECT_COUNTERS = 15,
	UV_OBJECT_ASYNC_EVENT = 16,
};

/* enum uverbs_methods_mr */
enum {
	UV_METHOD_DM_MR_REG = 0,
	UV_METHOD_MR_DESTROY = 1,
	UV_METHOD_ADVISE_MR = 2,
	UV_METHOD_QUERY_MR = 3,
	UV_METHOD_REG_DMABUF_MR = 4,
};

/* enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids */
enum {
	UV_ATTR_REG_DMABUF_MR_HANDLE = 0,
	UV_ATTR_REG_DMABUF_MR_PD_HANDLE = 1,
	UV_ATTR_REG_DMABUF_MR_OFFSET = 2,
	UV_ATTR_REG_DMABUF_MR_LENGTH = 3,
	UV_ATTR_REG_DMABUF_MR_IOVA = 4,
	UV_ATTR_REG_DMABUF_MR_FD = 5,
	UV_ATTR_REG_DMABUF_MR_ACCESS_FLAGS = 6,
	UV_ATTR_REG_DMABUF_MR_RESP_LKEY = 7,
	UV_ATTR_REG_DMABUF_MR_RESP_RKEY = 8,
};

/* ------------------------------------------------------------ the efa driver's udata */

enum {
	EFA_UV_UCONTEXT_CMD_TX_BATCH = 1 << 0,  /* comp_mask, later supported_caps */
	EFA_UV_UCONTEXT_CMD_MIN_SQ_WR = 1 << 1,
};

struct efa_uv_alloc_ucontext_cmd {
	uint32_t comp_mask;
	uint8_t reserved_20[4];
};

enum {
	EFA_UV_CMDS_SUPP_UDATA_QUERY_DEVICE = 1 << 0,
	EFA_UV_CMDS_SUPP_UDATA_CREATE_AH = 1 << 1,
};

struct efa_uv_alloc_ucontext_resp {
	uint32_t comp_mask;
	uint32_t cmds_supp_udata_mask;
	uint16_t sub_cqs_per_cq;
	uint16_t inline_buf_size;
	uint32_t max_llq_size;
	uint16_t max_tx_batch;
	uint16_t min_sq_wr;
	uint8_t reserved_a0[4];
};

struct efa_uv_alloc_pd_resp {
	uint32_t comp_mask;
	uint16_t pdn;
	uint8_t reserved_30[2];
};

enum {
	EFA_UV_CREATE_CQ_WITH_COMPLETION_CHANNEL = 1 << 0,
	EFA_UV_CREATE_CQ_WITH_SGID = 1 << 1,
};

struct efa_uv_create_cq {
	uint32_t comp_mask;
	uint32_t cq_entry_size;
	uint16_t num_sub_cqs;
	uint8_t flags;
	uint8_t reserved_58[5];
};

enum {
	EFA_UV_CREATE_CQ_RESP_DB_OFF = 1 << 0,
};

struct efa_uv_create_cq_resp {
	uint32_t comp_mask;
	uint8_t reserved_20[4];
	uv_u64 q_mmap_key;
	uv_u64 q_mmap_size;
	uint16_t cq_idx;
	uint8_t reserved_d0[2];
	uint32_t db_off;
	uv_u64 db_mmap_key;
};

enum {
	EFA_UV_QP_DRIVER_TYPE_SRD = 0,
};

enum {
	EFA_UV_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV = 1 << 0,
};

/*
 * The newest layout. Up to 6.9 the command ends at driver_qp_type (16
 * bytes, anything after it must be zero); 6.10 adds flags (the rest
 * reserved, must be zero); 6.13 gives the byte after flags to sl.
 */
struct efa_uv_create_qp {
	uint32_t comp_mask;
	uint32_t rq_ring_size; /* bytes */
	uint32_t sq_ring_size; /* bytes */
	uint32_t driver_qp_type;
	uint16_t flags;
	uint8_t sl;
	uint8_t reserved_98[5];
};

#define EFA_UV_CREATE_QP_SIZE_6_1 16 /* offsetof(flags): the command before 6.10 */

struct efa_uv_create_qp_resp {
	uint32_t comp_mask;
	uint32_t rq_db_offset;
	uint32_t sq_db_offset;
	uint32_t llq_desc_offset;
	uv_u64 rq_mmap_key;
	uv_u64 rq_mmap_size;
	uv_u64 rq_db_mmap_key;
	uv_u64 sq_db_mmap_key;
	uv_u64 llq_desc_mmap_key;
	uint16_t send_sub_cq_idx;
	uint16_t recv_sub_cq_idx;
	uint8_t reserved_1e0[4];
};

struct efa_uv_create_ah_resp {
	uint32_t comp_mask;
	uint16_t efa_address_handle;
	uint8_t reserved_30[2];
};

struct efa_uv_ex_query_device_resp {
	uint32_t comp_mask;
	uint32_t max_sq_wr;
	uint32_t max_rq_wr;
	uint16_t max_sq_sge;
	uint16_t max_rq_sge;
	uint32_t max_rdma_size;
	uint32_t device_caps;
};

/* EFA_IB_METHOD_MR_QUERY on object MR (6.8) and its attributes */
#define EFA_UV_METHOD_MR_QUERY UV_ID_DRIVER_NS
enum {
	EFA_UV_ATTR_QUERY_MR_HANDLE = UV_ID_DRIVER_NS,
	EFA_UV_ATTR_QUERY_MR_RESP_IC_ID_VALIDITY,
	EFA_UV_ATTR_QUERY_MR_RESP_RECV_IC_ID,
	EFA_UV_ATTR_QUERY_MR_RESP_RDMA_READ_IC_ID,
	EFA_UV_ATTR_QUERY_MR_RESP_RDMA_RECV_IC_ID,
};

enum {
	EFA_UV_QUERY_MR_VALIDITY_RECV_IC_ID = 1 << 0,
	EFA_UV_QUERY_MR_VALIDITY_RDMA_READ_IC_ID = 1 << 1,
	EFA_UV_QUERY_MR_VALIDITY_RDMA_RECV_IC_ID = 1 << 2,
};

#endif /* EFASIM_ABI_H */
