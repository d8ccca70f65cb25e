// SPDX-License-Identifier: MIT
/*
 * libefasim's commands layer: the emulated ib_uverbs core and efa driver
 * behind /dev/infiniband/uverbsN, errno for errno.
 *
 *   uverbs.c        the uverbs file kind (open, stat, its operations), the
 *                   write() protocol: header checks, the table of commands
 *   uverbs_ioctl.c  RDMA_VERBS_IOCTL: header checks, REG_DMABUF_MR
 *   cmd_device.c    GET_CONTEXT, QUERY_DEVICE (both forms), QUERY_PORT
 *   cmd_verbs.c     PD, MR, CQ, QP and AH commands
 *   wcall.c         one write() call's request, response and driver udata
 *   doorbell.c      hooks on libefa's operations: posts and polls reach the
 *                   device in the program's thread
 *
 * A new write() command is a handler and its line in uverbs.c's table; what
 * it makes is an object type (objects.h).
 */
#ifndef EFASIM_COMMANDS_H
#define EFASIM_COMMANDS_H

#include "abi.h"
#include "objects.h"

/* One write() call, split as ib_uverbs_write splits it. */
struct efasim_wcall {
	struct efasim_uverbs *uv;
	struct efasim_dev *dev;
	int fd;             /* the descriptor written to */
	uint64_t in, out;   /* core request and response (user addresses) */
	size_t inlen, outlen;
	uint64_t uin, uout; /* driver udata */
	size_t uinlen, uoutlen;
};

/* ---- wcall.c: uverbs_request/uverbs_response, the driver's udata ---- */

int efasim_w_request(struct efasim_wcall *c, void *req, size_t len);
int efasim_w_response(struct efasim_wcall *c, const void *resp, size_t len);
int efasim_udata_out(struct efasim_wcall *c, const void *resp, size_t len);
int efasim_udata_in_cleared(struct efasim_wcall *c);

/* ---- uverbs.c ---- */

/* Opens /dev/infiniband/uverbsN: returns an fd or a negative errno. */
int efasim_uverbs_open(struct efasim_dev *dev, int flags);
void efasim_uverbs_stat(const struct efasim_dev *dev, struct stat *st);

/* ---- uverbs_ioctl.c ---- */

/* Returns 0 or a negative errno. Lock held. */
int efasim_uverbs_ioctl_locked(struct efasim_uverbs *uv, unsigned long req, void *arg);

/* ---- the commands (cmd_device.c, cmd_verbs.c): 0 or a negative errno ---- */

int efasim_cmd_get_context(struct efasim_wcall *c);
int efasim_cmd_query_device(struct efasim_wcall *c);
int efasim_cmd_ex_query_device(struct efasim_wcall *c);
int efasim_cmd_query_port(struct efasim_wcall *c);

int efasim_cmd_create_comp_channel(struct efasim_wcall *c);
int efasim_cmd_alloc_pd(struct efasim_wcall *c);
int efasim_cmd_dealloc_pd(struct efasim_wcall *c);
int efasim_cmd_reg_mr(struct efasim_wcall *c);
int efasim_cmd_dereg_mr(struct efasim_wcall *c);
int efasim_cmd_create_cq(struct efasim_wcall *c);
int efasim_cmd_ex_create_cq(struct efasim_wcall *c);
int efasim_cmd_destroy_cq(struct efasim_wcall *c);
int efasim_cmd_create_qp(struct efasim_wcall *c);
int efasim_cmd_modify_qp(struct efasim_wcall *c);
int efasim_cmd_query_qp(struct efasim_wcall *c);
int efasim_cmd_destroy_qp(struct efasim_wcall *c);
int efasim_cmd_create_ah(struct efasim_wcall *c);
int efasim_cmd_destroy_ah(struct efasim_wcall *c);

/* ---- doorbell.c: the program's calls that reach the device ---- */

/* At CREATE_QP: the QP's CQs' polls (and the context's operations). */
void efasim_hook_qp_cqs(struct efasim_wcall *c, struct dp_qp *qp);
/* At MODIFY_QP: the QP's posts. */
void efasim_hook_qp(struct efasim_wcall *c, struct dp_qp *qp);

/* ib_check_mr_access, then the efa driver's supported access flags. */
int efasim_mr_access(const struct efasim_dev *dev, uint32_t flags);

#endif /* EFASIM_COMMANDS_H */
