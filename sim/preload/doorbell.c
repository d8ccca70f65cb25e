// SPDX-License-Identifier: MIT
/*
 * The doorbells, seen where they are rung. libefa rings a doorbell with a
 * plain store to device memory and polls a CQ with plain loads, so a
 * device thread would have to look for work, and on a busy host it gets
 * the CPU late. Instead the device's work is done in the program's own
 * thread, at the calls that lead to it: libefa's operations that
 * libibverbs reaches through function pointers of its public structures
 * (struct ibv_context's ops, struct ibv_cq_ex, struct ibv_qp_ex) are
 * replaced by hooks that call the original and then (a post) send what it
 * queued, or first (a poll) deliver what arrived for that CQ's queues.
 * ibv_req_notify_cq's hook tells the device the CQ is armed (its doorbell
 * alone may be overwritten by the next poll's before the device sees it),
 * and the poll hooks count what the program consumed, for CQ overruns.
 *
 * The structures are the program's: they are read with the safe copies,
 * and a hook is put in place only when the structure is the one the
 * command was about (handle, QPN, the context's descriptors), so a
 * program that does not go through libibverbs is left alone (the device
 * thread serves it as before). Each hook keeps errno as the original left
 * it. A program whose calls do not reach the hooks (it copied the
 * function pointers before they were replaced) is served by the device
 * thread.
 */
#include "commands.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include <infiniband/verbs.h>

enum { H_POLL_CQ, H_REQ_NOTIFY, H_POST_SEND, H_POST_RECV, H_CTX };

typedef int (*poll_cq_fn)(struct ibv_cq *, int, struct ibv_wc *);
typedef int (*req_notify_fn)(struct ibv_cq *, int);
typedef int (*post_send_fn)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
typedef int (*post_recv_fn)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **);
typedef int (*start_poll_fn)(struct ibv_cq_ex *, struct ibv_poll_cq_attr *);
typedef int (*next_poll_fn)(struct ibv_cq_ex *);
typedef int (*wr_complete_fn)(struct ibv_qp_ex *);

/* The contexts whose operations were replaced, and what they were. The
 * originals are libefa's, the same for every context; the last ones seen
 * answer for a structure the device no longer knows. */
struct hooked_ctx {
	uint64_t user;
	void *orig[H_CTX];
};

static struct hooked_ctx *ctxs;
static size_t nctxs;
static void *last_orig[H_CTX];
static start_poll_fn last_start_poll;
static next_poll_fn last_next_poll;
static wr_complete_fn last_wr_complete;

static void *ctx_orig_locked(uint64_t user, int which)
{
	size_t i;

	for (i = 0; i < nctxs; i++)
		if (ctxs[i].user == user)
			return ctxs[i].orig[which];
	return last_orig[which];
}

/* ------------------------------------------------------------ the hooks */

static int hook_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	poll_cq_fn orig;
	struct dp_cq *cq;
	int saved = errno, got;

	dp_engine_hooked();
	efasim_lock();
	orig = (poll_cq_fn)ctx_orig_locked((uintptr_t)ibcq->context, H_POLL_CQ);
	cq = dp_cq_by_user_locked((uintptr_t)ibcq);
	if (cq && cq->pid == efasim_pid()) {
		dp_cq_progress_locked(cq);
		dp_cq_poll_begin_locked(cq, n > 0 ? (uint32_t)n : 0);
	} else {
		cq = NULL;
	}
	efasim_unlock();
	errno = saved;
	got = orig(ibcq, n, wc);
	if (cq)
		dp_cq_poll_end(cq, n > 0 ? (uint32_t)n : 0, got > 0 ? (uint32_t)got : 0);
	return got;
}

static int hook_req_notify_cq(struct ibv_cq *ibcq, int solicited)
{
	req_notify_fn orig;
	struct dp_cq *cq;
	int saved, rc;

	efasim_lock();
	orig = (req_notify_fn)ctx_orig_locked((uintptr_t)ibcq->context, H_REQ_NOTIFY);
	efasim_unlock();
	rc = orig(ibcq, solicited);
	if (rc)
		return rc;
	saved = errno;
	efasim_lock();
	cq = dp_cq_by_user_locked((uintptr_t)ibcq);
	if (cq && cq->pid == efasim_pid())
		dp_cq_armed_locked(cq);
	efasim_unlock();
	errno = saved;
	return rc;
}

/* After a post: what the QP now has to send. */
static void posted(struct ibv_qp *ibqp)
{
	int saved = errno;
	struct dp_qp *qp;

	dp_engine_hooked();
	efasim_lock();
	qp = dp_qp_by_user_locked((uintptr_t)ibqp);
	if (qp)
		dp_qp_progress_locked(qp);
	efasim_unlock();
	errno = saved;
}

static int hook_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	post_send_fn orig;
	int rc;

	efasim_lock();
	orig = (post_send_fn)ctx_orig_locked((uintptr_t)ibqp->context, H_POST_SEND);
	efasim_unlock();
	rc = orig(ibqp, wr, bad);
	posted(ibqp);
	return rc;
}

static int hook_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	post_recv_fn orig;
	int rc;

	efasim_lock();
	orig = (post_recv_fn)ctx_orig_locked((uintptr_t)ibqp->context, H_POST_RECV);
	efasim_unlock();
	rc = orig(ibqp, wr, bad);
	/* nothing waits for a receive buffer (a send that finds none is
	 * refused at once, RNR), so the device has no work to do here: what
	 * arrived is delivered when the program polls */
	dp_engine_hooked();
	return rc;
}

static int hook_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	start_poll_fn orig = last_start_poll;
	struct dp_cq *cq;
	int saved = errno, rc;

	dp_engine_hooked();
	efasim_lock();
	cq = dp_cq_by_user_locked((uintptr_t)cqx);
	if (cq) {
		orig = (start_poll_fn)cq->hooked[0];
		if (cq->pid == efasim_pid()) {
			dp_cq_progress_locked(cq);
			dp_cq_poll_begin_locked(cq, 1);
		} else {
			cq = NULL;
		}
	}
	efasim_unlock();
	errno = saved;
	rc = orig(cqx, attr);
	if (cq)
		dp_cq_poll_end(cq, 1, rc == 0);
	return rc;
}

static int hook_next_poll(struct ibv_cq_ex *cqx)
{
	next_poll_fn orig = last_next_poll;
	struct dp_cq *cq;
	int saved = errno, rc;

	efasim_lock();
	cq = dp_cq_by_user_locked((uintptr_t)cqx);
	if (cq) {
		orig = (next_poll_fn)cq->hooked[1];
		if (cq->pid == efasim_pid())
			dp_cq_poll_begin_locked(cq, 1);
		else
			cq = NULL;
	}
	efasim_unlock();
	errno = saved;
	rc = orig(cqx);
	if (cq)
		dp_cq_poll_end(cq, 1, rc == 0);
	return rc;
}

static int hook_wr_complete(struct ibv_qp_ex *qpx)
{
	wr_complete_fn orig = last_wr_complete;
	struct dp_qp *qp;
	int rc;

	efasim_lock();
	qp = dp_qp_by_user_locked((uintptr_t)&qpx->qp_base);
	if (qp && qp->hooked)
		orig = (wr_complete_fn)qp->hooked;
	efasim_unlock();
	rc = orig(qpx);
	posted(&qpx->qp_base);
	return rc;
}

/* ------------------------------------------------------------ putting them in place */

/* Replaces the function pointer at user address addr (read as orig) by
 * hook, unless it is one already: 0, or -1 when it cannot be read or is
 * NULL. */
static int replace(uint64_t addr, void *hook, void **orig)
{
	void *cur;

	if (efasim_copy_in(&cur, addr, sizeof(cur)) || !cur)
		return -1;
	if (cur == hook)
		return 0;
	/* writable? (writing back what is there changes nothing) */
	if (efasim_copy_out(addr, &cur, sizeof(cur)))
		return -1;
	*orig = cur;
	/* the structure is the program's, checked and writable: one aligned
	 * store, so that a thread calling through it sees one or the other */
	__atomic_store_n((void **)(uintptr_t)addr, hook, __ATOMIC_RELEASE);
	return 0;
}

/* The program's struct ibv_context at user, if it is the one of this
 * uverbs file (its command and async descriptors). */
static bool ctx_is(const struct efasim_wcall *c, uint64_t user)
{
	struct ibv_context ctx;

	if (!user || efasim_copy_in(&ctx, user, sizeof(ctx)))
		return false;
	return ctx.cmd_fd == c->fd && c->uv->async && ctx.async_fd == efasim_fd_of_locked(c->uv->async);
}

static void hook_ctx(uint64_t user)
{
	static void *const hooks[H_CTX] = { (void *)hook_poll_cq, (void *)hook_req_notify_cq,
					    (void *)hook_post_send, (void *)hook_post_recv };
	static const size_t offs[H_CTX] = {
		offsetof(struct ibv_context, ops.poll_cq),
		offsetof(struct ibv_context, ops.req_notify_cq),
		offsetof(struct ibv_context, ops.post_send),
		offsetof(struct ibv_context, ops.post_recv),
	};
	struct hooked_ctx *h = NULL;
	size_t i;

	for (i = 0; i < nctxs; i++)
		if (ctxs[i].user == user)
			h = &ctxs[i];
	if (!h) {
		struct hooked_ctx *n = realloc(ctxs, (nctxs + 1) * sizeof(*n));

		if (!n)
			return;
		ctxs = n;
		h = &ctxs[nctxs++];
		memset(h, 0, sizeof(*h));
		h->user = user;
	}
	for (i = 0; i < H_CTX; i++) {
		void *orig = NULL;

		if (replace(user + offs[i], hooks[i], &orig) == 0 && orig) {
			h->orig[i] = orig;
			last_orig[i] = orig;
		}
	}
}

/* A CQ's struct ibv_cq (its handle, its context's) and poll functions. */
static void hook_cq(struct efasim_wcall *c, struct dp_cq *cq)
{
	struct ibv_cq_ex cqx;
	uint64_t user = cq->user_handle;
	void *orig;

	if (cq->hooked[0] || !user || efasim_copy_in(&cqx, user, sizeof(cqx)) ||
	    cqx.handle != cq->handle || !ctx_is(c, (uintptr_t)cqx.context))
		return;
	hook_ctx((uintptr_t)cqx.context);
	/* libefa gives every CQ the extended poll functions */
	if (!cqx.start_poll || !cqx.next_poll || !cqx.end_poll)
		return;
	orig = NULL;
	if (replace(user + offsetof(struct ibv_cq_ex, start_poll), (void *)hook_start_poll, &orig) ||
	    !orig)
		return;
	cq->hooked[0] = orig;
	last_start_poll = (start_poll_fn)orig;
	orig = NULL;
	if (replace(user + offsetof(struct ibv_cq_ex, next_poll), (void *)hook_next_poll, &orig) == 0 &&
	    orig) {
		cq->hooked[1] = orig;
		last_next_poll = (next_poll_fn)orig;
		/* every way to take an entry is counted from now on */
		cq->counted = true;
	}
	efasim_trace("CQ %u: the program's polls reach the device", cq->handle);
}

void efasim_hook_qp_cqs(struct efasim_wcall *c, struct dp_qp *qp)
{
	if (qp->scq)
		hook_cq(c, qp->scq);
	if (qp->rcq && qp->rcq != qp->scq)
		hook_cq(c, qp->rcq);
}

void efasim_hook_qp(struct efasim_wcall *c, struct dp_qp *qp)
{
	uint64_t user = qp->user_handle;
	struct ibv_qp_ex qpx;
	void *orig = NULL;

	if (qp->hooks_checked)
		return;
	qp->hooks_checked = true;
	if (!user || efasim_copy_in(&qpx, user, sizeof(qpx)) ||
	    qpx.qp_base.handle != qp->handle || qpx.qp_base.qp_num != qp->qpn ||
	    !ctx_is(c, (uintptr_t)qpx.qp_base.context))
		return;
	hook_ctx((uintptr_t)qpx.qp_base.context);
	/* the QP was made with send_ops_flags: the ibv_wr_* API */
	if (qpx.wr_complete &&
	    replace(user + offsetof(struct ibv_qp_ex, wr_complete), (void *)hook_wr_complete, &orig) == 0 &&
	    orig) {
		qp->hooked = orig;
		last_wr_complete = (wr_complete_fn)orig;
	}
	efasim_trace("QP %u: the program's posts reach the device", qp->qpn);
}
