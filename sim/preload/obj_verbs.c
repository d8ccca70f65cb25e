// SPDX-License-Identifier: MIT
/*
 * The verbs objects of a uverbs file, as the efa driver makes them once the
 * commands have checked their arguments: PDs, MRs (their pages pinned, or
 * a dma-buf attached), CQs and QPs (rings and doorbells in the file's
 * device memory, served by the device thread) and AHs; and, per type, what
 * releasing one gives back. The device learns of MRs, AHs and queues here
 * (engine.h) and forgets them before they are freed.
 */
#include "objects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t pinned_pages; /* REG_MR pages, for RLIMIT_MEMLOCK */

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t page_align(uint64_t n)
{
	return (n + page_size() - 1) & ~(page_size() - 1);
}

/* ------------------------------------------------------------ PD */

const struct efasim_obj_type efasim_pd_type = { "PD", 4, NULL };

/* ------------------------------------------------------------ MR */

static void mr_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	struct efasim_mr *mr = efasim_mr_of(o);

	if (!mr)
		return;
	dp_mr_del(&uv->dp, &mr->dev);
	if (mr->dev.map)
		munmap(mr->dev.map, mr->map_len);
	efasim_obj_put(uv, o->pd);
	pinned_pages -= mr->pinned;
	if (mr->dmabuf)
		efasim_file_put_locked(mr->dmabuf);
	free(mr);
}

const struct efasim_obj_type efasim_mr_type = { "MR", 3, mr_release };

/* ib_umem_get's checks: overflow, no pages, RLIMIT_MEMLOCK, then pinning
 * (every page must be mapped). */
static int umem_check(uint64_t start, uint64_t len, uint64_t *pages)
{
	uint64_t page = page_size(), end = start + len;
	struct rlimit rl;

	if (end < start || ((end + page - 1) & ~(page - 1)) < end)
		return -EINVAL;
	*pages = (((end + page - 1) & ~(page - 1)) - (start & ~(page - 1))) / page;
	if (!*pages)
		return -EINVAL;
	if (geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		if (rl.rlim_cur == 0)
			return -EPERM;
		if (pinned_pages + *pages > rl.rlim_cur / page)
			return -ENOMEM;
	}
	return efasim_user_mapped(start, len);
}

/* The MR object of handle h, in pd: registered with the device. */
static void mr_attach(struct efasim_uverbs *uv, uint32_t h, struct efasim_mr *mr, uint32_t pd)
{
	uv->objs[h].type = &efasim_mr_type;
	uv->objs[h].priv = mr;
	uv->objs[h].pd = pd;
	uv->objs[pd].usecnt++;
	mr->dev.pd = pd;
	mr->dev.key = uv->dev->next_key++;
	dp_mr_add(&uv->dp, &mr->dev);
}

int efasim_mr_create(struct efasim_uverbs *uv, uint32_t pd, uint64_t start, uint64_t length,
		     uint64_t iova, uint32_t access, uint32_t *handle)
{
	struct efasim_mr *mr;
	uint64_t pages;
	uint32_t h;
	int rc;

	rc = umem_check(start, length, &pages);
	if (rc)
		return rc;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	rc = efasim_obj_alloc(uv, &efasim_pending_type, &h);
	if (rc) {
		free(mr);
		return rc;
	}
	mr->pinned = pages;
	mr->dev.access = access;
	mr->dev.iova = iova;
	mr->dev.length = length;
	mr->dev.start = start;
	pinned_pages += pages;
	mr_attach(uv, h, mr, pd);
	*handle = h;
	return 0;
}

/* The device reaches the buffer's pages through a mapping of its own, as
 * the kernel keeps the attachment: the application may close the fd. */
static void map_dmabuf(struct efasim_mr *mr, int fd, uint64_t offset, uint64_t length)
{
	uint64_t page = page_size(), start = offset & ~(page - 1);
	size_t len = (size_t)((offset + length + page - 1) / page * page - start);
	long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);

	if (p == -1) /* an exporter without mmap: the data path reports a bad lkey */
		return;
	mr->dev.map = (void *)p;
	mr->map_len = len;
	mr->dev.map_skew = (size_t)(offset - start);
}

int efasim_mr_create_dmabuf(struct efasim_uverbs *uv, uint32_t handle, uint32_t pd,
			    uint32_t access, uint64_t iova, struct efasim_file *db, int fd,
			    uint64_t offset, uint64_t length)
{
	struct efasim_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return -ENOMEM;
	mr->dev.access = access;
	mr->dev.on_dmabuf = 1;
	mr->dev.iova = iova;
	mr->dev.length = length;
	map_dmabuf(mr, fd, offset, length);
	mr_attach(uv, handle, mr, pd);
	if (db) {
		mr->dmabuf = db;
		efasim_file_get(db);
	}
	return 0;
}

/* ------------------------------------------------------------ CQ */

/* A CQ and the file it belongs to (its async events go there). */
struct efasim_cq {
	struct dp_cq dev;
	struct efasim_uverbs *uv;
};

static struct efasim_cq *cq_of(struct dp_cq *cq)
{
	return (struct efasim_cq *)((char *)cq - offsetof(struct efasim_cq, dev));
}

/* The device's upcalls: a completion event for the channel, a CQ error
 * for the context's async file (struct ib_uverbs_async_event_desc). */
static void cq_notify(struct dp_cq *cq)
{
	efasim_evq_push_locked(cq->channel, cq->user_handle, 0, cq, &cq->comp_events);
}

static void cq_error(struct dp_cq *cq)
{
	struct efasim_uverbs *uv = cq_of(cq)->uv;

	if (uv->async)
		efasim_evq_push_locked(uv->async, cq->user_handle, 0 /* IB_EVENT_CQ_ERR */, cq,
				       &cq->async_events);
}

static void cq_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	struct dp_cq *cq = o->priv;
	bool own;

	if (!cq)
		return;
	own = cq->pid == getpid();
	dp_engine_del_cq(cq);
	/* what was not read about it goes with it, as in ib_uverbs */
	if (cq->channel) {
		efasim_evq_drop_locked(cq->channel, cq);
		efasim_file_put_locked(cq->channel);
	}
	if (uv->async)
		efasim_evq_drop_locked(uv->async, cq);
	efasim_region_free(uv, cq->ring_off, cq->ring_len, cq->ring, own);
	efasim_region_free(uv, cq->db_off, page_size(), (void *)cq->db, own);
	if (uv->ncq)
		uv->ncq--;
	free(cq_of(cq));
}

const struct efasim_obj_type efasim_cq_type = { "CQ", 2, cq_release };

int efasim_cq_create(struct efasim_uverbs *uv, int fd, const struct efasim_cq_attr *a,
		     struct dp_cq **out)
{
	struct efasim_cq *ecq;
	struct dp_cq *cq;
	void *ring, *db;
	uint32_t h;
	int rc;

	if (uv->ncq >= uv->dev->max_cq)
		return -ENOMEM;
	ecq = calloc(1, sizeof(*ecq));
	if (!ecq)
		return -ENOMEM;
	ecq->uv = uv;
	cq = &ecq->dev;
	cq->notify = cq_notify;
	cq->error = cq_error;
	cq->user_handle = a->user_handle;
	cq->depth = a->depth;
	cq->entry_size = a->entry_size;
	cq->nsub = a->nsub;
	cq->ring_len = page_align((uint64_t)cq->entry_size * cq->depth * cq->nsub);
	cq->channel = a->channel;
	rc = efasim_region_alloc(uv, fd, cq->ring_len, &cq->ring_off, &ring);
	if (rc)
		goto err_free;
	cq->ring = ring;
	rc = efasim_region_alloc(uv, fd, page_size(), &cq->db_off, &db);
	if (rc)
		goto err_ring;
	cq->db = db;
	rc = efasim_obj_alloc(uv, &efasim_cq_type, &h);
	if (rc)
		goto err_db;
	cq->handle = h;
	uv->objs[h].priv = cq;
	uv->ncq++;
	if (cq->channel)
		efasim_file_get(cq->channel);
	dp_engine_add_cq(cq);
	*out = cq;
	return 0;

err_db:
	efasim_region_free(uv, cq->db_off, page_size(), db, true);
err_ring:
	efasim_region_free(uv, cq->ring_off, cq->ring_len, ring, true);
err_free:
	free(ecq);
	return rc;
}

/* ------------------------------------------------------------ QP */

static void qp_free_regions(struct efasim_uverbs *uv, struct dp_qp *qp, bool own)
{
	efasim_region_free(uv, qp->sq_off, qp->sq_len, qp->sq, own);
	efasim_region_free(uv, qp->rq_off, qp->rq_len, qp->rq, own);
	efasim_region_free(uv, qp->sqdb_off, qp->sq_db ? page_size() : 0, (void *)qp->sq_db, own);
	efasim_region_free(uv, qp->rqdb_off, qp->rq_db ? page_size() : 0, (void *)qp->rq_db, own);
}

static void qp_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	struct dp_qp *qp = o->priv;
	bool own;

	if (!qp)
		return;
	own = qp->pid == getpid();
	dp_engine_del_qp(qp);
	dp_qp_teardown(qp);
	qp_free_regions(uv, qp, own);
	efasim_obj_put(uv, qp->pd);
	if (qp->scq)
		efasim_obj_put(uv, qp->scq->handle);
	if (qp->rcq)
		efasim_obj_put(uv, qp->rcq->handle);
	free(qp);
}

const struct efasim_obj_type efasim_qp_type = { "QP", 0, qp_release };

static int qp_regions(struct efasim_uverbs *uv, int fd, struct dp_qp *qp,
		      const struct efasim_qp_attr *a)
{
	void *m;
	int rc;

	qp->sq_cnt = a->sq_ring_size / sizeof(struct efa_tx_wqe);
	qp->rq_cnt = a->rq_ring_size / sizeof(struct efa_rx_desc);
	qp->sq_len = page_align(a->sq_ring_size);
	rc = efasim_region_alloc(uv, fd, qp->sq_len, &qp->sq_off, &m);
	if (rc)
		return rc;
	qp->sq = m;
	rc = efasim_region_alloc(uv, fd, page_size(), &qp->sqdb_off, &m);
	if (rc)
		return rc;
	qp->sq_db = m;
	if (!qp->rq_cnt)
		return 0;
	qp->rq_len = page_align(a->rq_ring_size);
	rc = efasim_region_alloc(uv, fd, qp->rq_len, &qp->rq_off, &m);
	if (rc)
		return rc;
	qp->rq = m;
	rc = efasim_region_alloc(uv, fd, page_size(), &qp->rqdb_off, &m);
	if (rc)
		return rc;
	qp->rq_db = m;
	return 0;
}

int efasim_qp_create(struct efasim_uverbs *uv, int fd, const struct efasim_qp_attr *a,
		     struct dp_qp **out)
{
	struct dp_qp *qp;
	uint32_t h;
	int rc;

	rc = dp_engine_start_locked();
	if (rc)
		return rc;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->ctx = &uv->dp;
	qp->dev = uv->dev;
	qp->user_handle = a->user_handle;
	qp->pd = a->pd;
	qp->type = a->type;
	qp->sq_sig_all = a->sq_sig_all;
	qp->scq = uv->objs[a->send_cq].priv;
	qp->rcq = uv->objs[a->recv_cq].priv;
	qp->max_send_wr = a->max_send_wr;
	qp->max_recv_wr = a->max_recv_wr;
	qp->max_send_sge = a->max_send_sge;
	qp->max_recv_sge = a->max_recv_sge;
	qp->max_inline = a->max_inline;
	qp->unsolicited_write_recv = a->unsolicited_write_recv;
	qp->sl = a->sl;
	qp->rnr_retry = 3; /* until MODIFY_QP sets it; 7 retries forever */
	rc = qp_regions(uv, fd, qp, a);
	if (rc)
		goto err_regions;
	rc = dp_qp_setup(qp);
	if (rc)
		goto err_regions;
	rc = efasim_obj_alloc(uv, &efasim_qp_type, &h);
	if (rc)
		goto err_setup;
	qp->handle = h;
	uv->objs[h].priv = qp;
	uv->objs[h].pd = a->pd;
	uv->objs[a->pd].usecnt++;
	uv->objs[a->send_cq].usecnt++;
	uv->objs[a->recv_cq].usecnt++;
	dp_engine_add_qp(qp);
	*out = qp;
	return 0;

err_setup:
	dp_qp_teardown(qp);
err_regions:
	qp_free_regions(uv, qp, true);
	free(qp);
	return rc;
}

/* ------------------------------------------------------------ AH */

static void ah_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	struct dp_ah *ah = o->priv;

	if (!ah)
		return;
	dp_ah_del(&uv->dp, ah);
	efasim_obj_put(uv, o->pd);
	if (uv->nah)
		uv->nah--;
	free(ah);
}

const struct efasim_obj_type efasim_ah_type = { "AH", 1, ah_release };

int efasim_ah_create(struct efasim_uverbs *uv, uint32_t pd, const uint8_t gid[FAB_GID_LEN],
		     uint32_t *handle, uint16_t *ahn_out)
{
	struct dp_ah *ah;
	uint16_t ahn;
	uint32_t h;
	int rc;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	memcpy(ah->gid, gid, FAB_GID_LEN);
	/* the device keeps one AH per (PD, address): the same number again */
	ahn = dp_ah_number(&uv->dp, ah->pd, ah->gid);
	if (ahn == EFA_AH_UNKNOWN) {
		if (uv->nah >= uv->dev->max_ah || uv->nah >= EFA_AH_UNKNOWN) {
			free(ah);
			return -ENOMEM;
		}
		for (ahn = 0; dp_ah_number_used(&uv->dp, ahn); ahn++)
			;
	}
	ah->ahn = ahn;
	rc = efasim_obj_alloc(uv, &efasim_ah_type, &h);
	if (rc) {
		free(ah);
		return rc;
	}
	uv->objs[h].priv = ah;
	uv->objs[h].pd = ah->pd;
	uv->nah++;
	uv->objs[pd].usecnt++;
	dp_ah_add(&uv->dp, ah);
	*handle = h;
	*ahn_out = ahn;
	return 0;
}
