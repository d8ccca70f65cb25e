// SPDX-License-Identifier: MIT
/*
 * libefasim's fabric layer (dp_fabric.c): the wire between the emulated
 * devices of the processes, and hosts, that share a fabric directory. It
 * uses the base (internal.h) only; the engine (engine.h) is its one user.
 */
#ifndef EFASIM_FABRIC_H
#define EFASIM_FABRIC_H

#include "internal.h"

#define FAB_GID_LEN 16
#define FAB_PKT_HDR 128

enum fab_pkt_type {
	PKT_SEND = 1,
	PKT_ACK,
	PKT_NACK,
	PKT_READ_REQ,
	PKT_READ_RESP,
	PKT_WRITE,
};
#define PKT_F_IMM 1u
#define PKT_F_LAST 2u
#define PKT_F_SRD 4u
/* A send whose bytes stay in the sender's memory until the receiver copies
 * them from there (its payload is nseg struct fab_seg), as the device
 * fetches a send's bytes from host memory only once it has a receive
 * buffer for them: one copy, straight into that buffer. The buffers are
 * named as the WQE names them (lkey, address, length): the receiver finds
 * them in the sender's published MRs when it copies, so that a region
 * deregistered meanwhile is not read. */
#define PKT_F_PULL 8u

/* The header of every packet in a port slot. */
struct fab_pkt {
	uint8_t type, flags;
	uint16_t status;
	uint32_t len; /* payload bytes that follow the header */
	uint32_t src_qpn, dst_qpn;
	uint32_t qkey, imm;
	uint64_t op; /* the requester's operation */
	uint64_t raddr;
	uint32_t rkey, src_type;
	uint64_t total, offset;
	uint64_t src_nonce;
	uint8_t src_gid[FAB_GID_LEN];
	uint32_t nseg; /* PKT_F_PULL: the segments in the payload */
	uint32_t pad;
};
_Static_assert(sizeof(struct fab_pkt) <= FAB_PKT_HDR, "packet header");

/* One buffer of a pulled send, as its WQE names it. */
struct fab_seg {
	uint64_t iova, len;
	uint32_t key; /* the MR's, whole */
	uint32_t pad;
};
#define FAB_PULL_SEGS 2 /* a send WQE has at most two buffers */

struct fab_qpfile;  /* a mapped QP file (ours: the inbox) */
struct fab_peer;    /* a remote QP as one local QP sees it */

/* The fabric directory of this process (from the configuration). */
const char *fab_dir(void);
/* Allocates a QPN on the device of gid (POSIX lock on its device file)
 * and creates the QP's file. */
int fab_qp_create(const uint8_t gid[FAB_GID_LEN], uint32_t max_qp, uint32_t type,
		  uint32_t max_payload, struct fab_qpfile **out, uint32_t *qpn);
void fab_qp_destroy(struct fab_qpfile *q);
/* A fork child's copy of its parent's QP: unmapped, left alone. */
void fab_qp_forget(struct fab_qpfile *q);
void fab_qp_publish(struct fab_qpfile *q, uint32_t qkey, uint32_t state);
uint64_t fab_qp_nonce(const struct fab_qpfile *q);
/* Calls fn for each packet waiting in the inbox, at most budget; returns
 * how many were consumed. A packet is consumed when fn returns 0; when it
 * returns non-zero the packet stays and that port is retried later. */
typedef int (*fab_rx_fn)(void *arg, const struct fab_pkt *p, const void *payload);
int fab_qp_poll(struct fab_qpfile *q, int budget, fab_rx_fn fn, void *arg);
/* Releases ports held by senders that are gone; call now and then. */
void fab_qp_reap(struct fab_qpfile *q);

/* Looks a remote QP up; 0, -ENODEV (no device has that GID), -ENOENT (no
 * such QP, or it is gone). The peer belongs to the local QP (src). */
int fab_peer_open(const uint8_t gid[FAB_GID_LEN], uint32_t qpn, struct fab_peer **out);
void fab_peer_close(struct fab_peer *p);
void fab_peer_forget(struct fab_peer *p); /* close, keeping the port claim */
bool fab_peer_alive_fast(const struct fab_peer *p);
uint64_t fab_peer_nonce(const struct fab_peer *p);
/* 1 alive, 0 QP destroyed, -1 its process is gone. */
int fab_peer_alive(struct fab_peer *p);
uint32_t fab_peer_type(const struct fab_peer *p);
uint32_t fab_peer_max_payload(const struct fab_peer *p);
/* A slot to fill, or NULL when the port is full (or none is free). */
struct fab_pkt *fab_peer_slot(struct fab_peer *p, const struct fab_qpfile *src, void **payload);
void fab_peer_commit(struct fab_peer *p);

/*
 * Memory regions a peer may read without this process running, as the
 * device serves RDMA reads without the host's CPU, and as the receiver's
 * device takes a pulled send's bytes: the owner publishes them (in its
 * engine's file, so not before fab_engine_init) and names, per QP, the
 * context and PD they are looked up in; a peer finds one by key and copies
 * from the owner's memory itself (process_vm_readv, the owner's token read
 * in the same call: a pid can be reused, a process can exec), then checks
 * that the record did not change meanwhile (a region deregistered is never
 * read). What is not found there is read through packets, where the owner
 * has the last word.
 */
struct fab_rmem {
	pid_t pid;     /* the owner, as this process sees it */
	uint64_t addr; /* the bytes, in the owner's memory */
	/* a word of the owner's memory and its value: read with the bytes,
	 * it tells the owner from another process at that pid */
	uint64_t token_addr, token;
	void *rec;
	uint32_t seq;
};

bool fab_mr_table_ready(void);
/* 0, or -ENOSPC (not published: reads of it take packets) */
int fab_mr_publish(uint64_t ctx, uint32_t pd, uint32_t key, uint32_t access, uint64_t iova,
		   uint64_t len, uint64_t addr);
void fab_mr_unpublish(uint64_t ctx, uint32_t key);
/* The QP's MRs are the context ctx's in PD pd; reads: peers may read them
 * (the device has the RDMA_READ cap). */
void fab_qp_publish_mrs(struct fab_qpfile *q, uint64_t ctx, uint32_t pd, bool reads);
uint32_t fab_peer_state(const struct fab_peer *p);
uint32_t fab_peer_qkey(const struct fab_peer *p);
/* The peer QP's MR of key covering [iova, iova+len) with access (0: the
 * owner's own read of a send's buffer): 0, -ENODEV (its process cannot be
 * reached from here: read through packets, send the bytes), -ENOENT (not
 * published: deregistered, or never), -EACCES (the owner would refuse). */
int fab_peer_mr(struct fab_peer *p, uint32_t key, uint32_t access, uint64_t iova, uint64_t len,
		struct fab_rmem *out);
/* A copy found another process than the owner at its pid (the token
 * differed): the peer's memory is read no more. */
void fab_peer_lost(struct fab_peer *p);
/* After the copy: the record and the QP are as they were. */
bool fab_peer_mr_still(const struct fab_peer *p, const struct fab_rmem *m);

/* The engine's wake-up page: other engines wake a sleeping one.
 * fab_engine_prepare says "about to sleep" and returns the wake count;
 * the engine then checks for work and calls fab_engine_wait. */
int fab_engine_init(void);
uint32_t fab_engine_prepare(void);
void fab_engine_wait(uint32_t seq, long usec);
void fab_engine_awake(void);
void fab_engine_kick(void); /* wakes our own engine */
bool fab_qp_has_pending(const struct fab_qpfile *q);
bool fab_local_gid(const uint8_t gid[FAB_GID_LEN]);
void fab_atfork_child(void);

#endif /* EFASIM_FABRIC_H */
