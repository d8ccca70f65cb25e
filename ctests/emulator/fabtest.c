// SPDX-License-Identifier: MIT
/*
 * What fabtests checks, written against the libfabric API (Debian packages
 * no fabtests): libfabric's efa provider over the emulated device, a
 * server and a client that meet over TCP, every byte checked, every wait
 * bounded.
 *
 *   fabtest -e rdm|dgram -p PORT            the server
 *   fabtest -e rdm|dgram -p PORT HOST       the client
 *
 * rdm (SRD): fi_getinfo's answer; tagged ping-pong at sizes from 1 byte to
 * 1 MiB; sends with remote CQ data; fi_inject; tagged messages that arrive
 * before their receives, matched by tag; RMA write and read of 1 MiB; a
 * message longer than its receive buffer (a truncation error completion).
 * dgram (UD): fi_getinfo's answer and a ping-pong up to the MTU with the
 * message prefix, each operation with its fi_context2; whether the provider
 * asks for FI_CONTEXT2 (libfabric 2.1 does: hints without it get no dgram
 * endpoint) follows ctests/stack.py (DGRAM_CONTEXT2), under which the
 * program runs. Exit status 0 when every check passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../stack.h"

#define BUF (2u << 20)
#define WAIT_S 20

static int failures;
static bool server;
static int oob = -1;

#define FAIL(...)                                                    \
	do {                                                         \
		failures++;                                          \
		fprintf(stderr, "FAIL %s:%d: ", server ? "server" : "client", __LINE__); \
		fprintf(stderr, __VA_ARGS__);                        \
		fputc('\n', stderr);                                 \
	} while (0)
#define TRY(call)                                                                     \
	do {                                                                          \
		int rc_ = (int)(call);                                                \
		if (rc_) {                                                            \
			FAIL("%s: %s", #call, fi_strerror(-rc_));                      \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint8_t *buf;
	void *desc;
	size_t prefix; /* FI_MSG_PREFIX: bytes before the payload */
	fi_addr_t peer;
	struct fi_context2 ctx[2]; /* dgram's receive and send (FI_CONTEXT2) */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ out of band */

static void oob_all(bool out, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = out ? send(oob, b, n, MSG_NOSIGNAL) : recv(oob, b, n, 0);

		if (r <= 0) {
			FAIL("the other side went (%s)", r ? strerror(errno) : "closed");
			exit(1);
		}
		b += r;
		n -= (size_t)r;
	}
}

static void oob_send(const void *p, size_t n)
{
	oob_all(true, (void *)p, n);
}

static void oob_recv(void *p, size_t n)
{
	oob_all(false, p, n);
}

/* Both sides reach this point. */
static void sync_sides(void)
{
	char c = 's';

	oob_send(&c, 1);
	oob_recv(&c, 1);
}

static void oob_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	int one = 1, fd;
	double end = now() + WAIT_S;

	if (getaddrinfo(host, port, &hints, &ai)) {
		FAIL("getaddrinfo %s:%s", host ? host : "*", port);
		exit(1);
	}
	if (!host) {
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1)) {
			FAIL("listen on %s: %s", port, strerror(errno));
			exit(1);
		}
		oob = accept(fd, NULL, NULL);
		close(fd);
	} else {
		for (;;) {
			oob = socket(ai->ai_family, SOCK_STREAM, 0);
			if (!connect(oob, ai->ai_addr, ai->ai_addrlen))
				break;
			close(oob);
			if (now() > end) {
				FAIL("connect to %s:%s: %s", host, port, strerror(errno));
				exit(1);
			}
			usleep(50000);
		}
	}
	freeaddrinfo(ai);
	if (oob < 0) {
		FAIL("no connection");
		exit(1);
	}
	setsockopt(oob, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Progresses the endpoint (the efa provider's progress is manual: a
 * target must read its CQ for a peer's emulated RMA to land) until the
 * other side reaches its sync_sides(). */
static void sync_progressing(struct fid_cq *cq)
{
	char c;

	for (;;) {
		struct timeval tv = { 0, 1000 };
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(oob, &rd);
		if (select(oob + 1, &rd, NULL, NULL, &tv) > 0)
			break;
		fi_cq_read(cq, NULL, 0);
	}
	oob_recv(&c, 1);
	oob_send(&c, 1);
}

/* ------------------------------------------------------------ libfabric */

/* fi_getinfo of the efa provider for an endpoint type and hints' mode */
static int efa_getinfo(enum fi_ep_type type, uint64_t mode, struct fi_info **info)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;

	hints->ep_attr->type = type;
	hints->caps = type == FI_EP_RDM ? FI_MSG | FI_TAGGED | FI_RMA : FI_MSG;
	hints->mode = mode;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("efa");
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

/* dgram and FI_CONTEXT2, as the installed libfabric wants it */
static void dgram_context2(void)
{
	struct fi_info *info = NULL;
	int want = stack_has("DGRAM_CONTEXT2");
	int rc = efa_getinfo(FI_EP_DGRAM, FI_MSG_PREFIX, &info);

	if (want && rc != -FI_ENODATA)
		FAIL("dgram hints without FI_CONTEXT2: %s, want no data (libfabric %s)", fi_strerror(-rc),
		     stack_release("libfabric"));
	if (!want && rc)
		FAIL("dgram hints without FI_CONTEXT2: %s (libfabric %s)", fi_strerror(-rc),
		     stack_release("libfabric"));
	if (!want && !rc && (info->mode & FI_CONTEXT2))
		FAIL("dgram asks for FI_CONTEXT2 (libfabric %s)", stack_release("libfabric"));
	if (info)
		fi_freeinfo(info);
	if (!server)
		printf("dgram needs FI_CONTEXT2: %s (libfabric %s)\n", want ? "yes" : "no",
		       stack_release("libfabric"));
}

static void fab_open(struct fab *f, enum fi_ep_type type)
{
	struct fi_cq_attr cqa = { .size = 1024 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	char name[256], peer[256];
	size_t len = sizeof(name);
	int rc;

	if (type == FI_EP_DGRAM)
		dgram_context2();
	rc = efa_getinfo(type, type == FI_EP_DGRAM ? FI_MSG_PREFIX | FI_CONTEXT2 : 0, &f->info);
	if (rc) {
		FAIL("fi_getinfo efa %s: %s", type == FI_EP_RDM ? "rdm" : "dgram", fi_strerror(-rc));
		exit(1);
	}
	/* what fi_info -p efa shows of the emulated device */
	if (strcmp(f->info->fabric_attr->prov_name, "efa") || f->info->ep_attr->type != type)
		FAIL("fi_getinfo answered provider %s type %d", f->info->fabric_attr->prov_name,
		     f->info->ep_attr->type);
	if (type == FI_EP_RDM && (f->info->caps & (FI_TAGGED | FI_RMA)) != (FI_TAGGED | FI_RMA))
		FAIL("rdm caps %#llx lack FI_TAGGED or FI_RMA", (unsigned long long)f->info->caps);
	if (!server)
		printf("fi_getinfo: %s, domain %s, max message %zu, inject %zu, prefix %zu\n",
		       f->info->fabric_attr->prov_name, f->info->domain_attr->name,
		       f->info->ep_attr->max_msg_size, f->info->tx_attr->inject_size,
		       f->info->ep_attr->msg_prefix_size);
	f->prefix = (f->info->mode & FI_MSG_PREFIX) ? f->info->ep_attr->msg_prefix_size : 0;
	TRY(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	TRY(fi_domain(f->fabric, f->info, &f->domain, NULL));
	cqa.format = type == FI_EP_RDM ? FI_CQ_FORMAT_TAGGED : FI_CQ_FORMAT_DATA;
	TRY(fi_cq_open(f->domain, &cqa, &f->cq, NULL));
	TRY(fi_av_open(f->domain, &ava, &f->av, NULL));
	TRY(fi_endpoint(f->domain, f->info, &f->ep, NULL));
	TRY(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(f->ep, &f->av->fid, 0));
	TRY(fi_enable(f->ep));
	f->buf = aligned_alloc(4096, BUF);
	if (!f->buf)
		exit(1);
	memset(f->buf, 0, BUF);
	TRY(fi_mr_reg(f->domain, f->buf, BUF,
		      FI_SEND | FI_RECV | (type == FI_EP_RDM ? FI_READ | FI_WRITE | FI_REMOTE_READ |
						       FI_REMOTE_WRITE : 0),
		      0, 0, 0, &f->mr, NULL));
	f->desc = fi_mr_desc(f->mr);
	TRY(fi_getname(&f->ep->fid, name, &len));
	oob_send(&len, sizeof(len));
	oob_send(name, len);
	oob_recv(&len, sizeof(len));
	if (len > sizeof(peer))
		exit(1);
	oob_recv(peer, len);
	if (fi_av_insert(f->av, peer, 1, &f->peer, 0, NULL) != 1) {
		FAIL("fi_av_insert of the peer's address");
		exit(1);
	}
}

static void fab_close(struct fab *f)
{
	fi_close(&f->mr->fid);
	fi_close(&f->ep->fid);
	fi_close(&f->av->fid);
	fi_close(&f->cq->fid);
	fi_close(&f->domain->fid);
	fi_close(&f->fabric->fid);
	fi_freeinfo(f->info);
	free(f->buf);
}

/* Waits for n completions: how many came; an error completion is read and
 * stored in *err (when given) and counts as one. */
static int wait_cq(struct fab *f, int n, struct fi_cq_tagged_entry *out, struct fi_cq_err_entry *err)
{
	double end = now() + WAIT_S;
	int got = 0;

	while (got < n && now() < end) {
		struct fi_cq_tagged_entry e = { 0 };
		ssize_t r = fi_cq_read(f->cq, &e, 1); /* a dgram CQ's entries are shorter */

		if (r == 1) {
			if (out)
				out[got] = e;
			got++;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(f->cq, &ee, 0);
			if (err)
				*err = ee;
			else
				FAIL("error completion: %s (prov %d)", fi_strerror(ee.err), ee.prov_errno);
			got++;
		} else if (r != -FI_EAGAIN) {
			FAIL("fi_cq_read: %s", fi_strerror((int)-r));
			break;
		}
	}
	if (got < n)
		FAIL("%d of %d completions within %d s", got, n, WAIT_S);
	return got;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 29u + seed * 13u + (i >> 11));
}

static bool same(const uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 29u + seed * 13u + (i >> 11)))
			return false;
	return true;
}

/* Posts until the provider takes it (-FI_EAGAIN: progress and retry). */
#define POST(f, call)                                                                  \
	do {                                                                           \
		double end_ = now() + WAIT_S;                                          \
		ssize_t r_;                                                            \
		while ((r_ = (call)) == -FI_EAGAIN && now() < end_)                    \
			fi_cq_read((f)->cq, NULL, 0);                                  \
		if (r_) {                                                              \
			FAIL("%s: %s", #call, fi_strerror((int)-r_));                  \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

/* ------------------------------------------------------------ rdm */

static void t_pingpong(struct fab *f)
{
	size_t sz;

	for (sz = 1; sz <= (1u << 20); sz *= 4) {
		int it;

		for (it = 0; it < 4; it++) {
			unsigned int seed = (unsigned int)(sz * 7 + (size_t)it);

			if (server) {
				POST(f, fi_trecv(f->ep, f->buf, sz, f->desc, f->peer, 0x100 + it, 0, NULL));
				wait_cq(f, 1, NULL, NULL);
				if (!same(f->buf, sz, seed))
					FAIL("ping-pong: %zu bytes, round %d: wrong data", sz, it);
				fill(f->buf, sz, seed + 1);
				POST(f, fi_tsend(f->ep, f->buf, sz, f->desc, f->peer, 0x200 + it, NULL));
				wait_cq(f, 1, NULL, NULL);
			} else {
				fill(f->buf, sz, seed);
				POST(f, fi_trecv(f->ep, f->buf + BUF / 2, sz, f->desc, f->peer, 0x200 + it, 0,
						 NULL));
				POST(f, fi_tsend(f->ep, f->buf, sz, f->desc, f->peer, 0x100 + it, NULL));
				wait_cq(f, 2, NULL, NULL);
				if (!same(f->buf + BUF / 2, sz, seed + 1))
					FAIL("ping-pong: %zu bytes, round %d: wrong data back", sz, it);
			}
		}
	}
	if (!server)
		printf("tagged ping-pong, 1 B to 1 MiB: %s\n", failures ? "FAILED" : "ok");
}

static void t_cq_data(struct fab *f)
{
	struct fi_cq_tagged_entry e;

	if (server) {
		POST(f, fi_recv(f->ep, f->buf, 4096, f->desc, f->peer, NULL));
		sync_sides();
		wait_cq(f, 1, &e, NULL);
		if (!(e.flags & FI_REMOTE_CQ_DATA) || e.data != 0xc0ffee || e.len != 1000 ||
		    !same(f->buf, 1000, 5))
			FAIL("remote CQ data: flags %#llx data %#llx len %zu", (unsigned long long)e.flags,
			     (unsigned long long)e.data, e.len);
	} else {
		sync_sides();
		fill(f->buf, 1000, 5);
		POST(f, fi_senddata(f->ep, f->buf, 1000, f->desc, 0xc0ffee, f->peer, NULL));
		wait_cq(f, 1, NULL, NULL);
		printf("send with remote CQ data: ok\n");
	}
	sync_sides();
}

static void t_inject(struct fab *f)
{
	size_t isz = f->info->tx_attr->inject_size < 32 ? f->info->tx_attr->inject_size : 32;
	int i;

	if (server) {
		for (i = 0; i < 8; i++)
			POST(f, fi_trecv(f->ep, f->buf + 64 * i, isz, f->desc, f->peer, 0x300 + i, 0, NULL));
		sync_sides();
		wait_cq(f, 8, NULL, NULL);
		for (i = 0; i < 8; i++)
			if (!same(f->buf + 64 * i, isz, 40 + i))
				FAIL("inject %d: wrong data", i);
	} else {
		sync_sides();
		for (i = 0; i < 8; i++) {
			fill(f->buf + 64 * i, isz, 40 + i);
			POST(f, fi_tinject(f->ep, f->buf + 64 * i, isz, f->peer, 0x300 + i));
		}
		/* injects make no completion; progress until the server has all */
	}
	if (!server) {
		sync_progressing(f->cq);
		printf("fi_tinject of %zu bytes: ok\n", isz);
	} else {
		sync_sides();
	}
}

static void t_unexpected(struct fab *f)
{
	int i;

	if (server) {
		sync_sides(); /* the client has sent all 8 before any receive is posted */
		sync_sides();
		for (i = 7; i >= 0; i--)
			POST(f, fi_trecv(f->ep, f->buf + 4096 * i, 4096, f->desc, f->peer, 0x400 + i, 0,
					 NULL));
		wait_cq(f, 8, NULL, NULL);
		for (i = 0; i < 8; i++)
			if (!same(f->buf + 4096 * i, 3000, 60 + i))
				FAIL("unexpected message with tag %#x matched the wrong receive", 0x400 + i);
	} else {
		sync_sides();
		for (i = 0; i < 8; i++) {
			fill(f->buf + 4096 * i, 3000, 60 + i);
			POST(f, fi_tsend(f->ep, f->buf + 4096 * i, 3000, f->desc, f->peer, 0x400 + i, NULL));
		}
		wait_cq(f, 8, NULL, NULL);
		sync_sides();
		printf("tagged messages before their receives, matched by tag: ok\n");
	}
	sync_sides();
}

struct rkey {
	uint64_t addr, key;
};

static void t_rma(struct fab *f)
{
	const size_t n = 1u << 20;
	struct rkey rk;

	if (!(f->info->caps & FI_RMA))
		return;
	if (server) {
		rk.addr = (uintptr_t)f->buf;
		rk.key = fi_mr_key(f->mr);
		fill(f->buf + n, n, 81); /* what the client reads */
		oob_send(&rk, sizeof(rk));
		sync_progressing(f->cq); /* the client wrote, then read */
		if (!same(f->buf, n, 80))
			FAIL("RMA write: the server's buffer does not hold what was written");
	} else {
		oob_recv(&rk, sizeof(rk));
		fill(f->buf, n, 80);
		POST(f, fi_write(f->ep, f->buf, n, f->desc, f->peer, rk.addr, rk.key, NULL));
		wait_cq(f, 1, NULL, NULL);
		POST(f, fi_read(f->ep, f->buf + n, n, f->desc, f->peer, rk.addr + n, rk.key, NULL));
		wait_cq(f, 1, NULL, NULL);
		if (!same(f->buf + n, n, 81))
			FAIL("RMA read: wrong data");
		sync_sides();
		printf("RMA write and read of 1 MiB: %s\n", failures ? "FAILED" : "ok");
	}
	sync_sides();
}

static void t_truncate(struct fab *f)
{
	struct fi_cq_err_entry ee = { 0 };

	if (server) {
		POST(f, fi_trecv(f->ep, f->buf, 64, f->desc, f->peer, 0x500, 0, NULL));
		sync_sides();
		wait_cq(f, 1, NULL, &ee);
		if (ee.err != FI_ETRUNC)
			FAIL("a 128-byte message into a 64-byte receive: error %d (%s), want FI_ETRUNC", ee.err,
			     fi_strerror(ee.err));
	} else {
		sync_sides();
		fill(f->buf, 128, 90);
		POST(f, fi_tsend(f->ep, f->buf, 128, f->desc, f->peer, 0x500, NULL));
		wait_cq(f, 1, NULL, NULL);
	}
	sync_sides();
	if (!server)
		printf("a message longer than its receive: FI_ETRUNC\n");
}

/* ------------------------------------------------------------ dgram */

static void t_dgram(struct fab *f)
{
	size_t max = f->info->ep_attr->max_msg_size, sz, pre = f->prefix;
	int it;

	for (sz = 1; sz <= max; sz = sz * 4 > max && sz != max ? max : sz * 4) {
		for (it = 0; it < 4; it++) {
			unsigned int seed = (unsigned int)(sz + (size_t)it * 3);

			/* a datagram may be lost: the sender waits for the
			 * receiver to be ready */
			if (server) {
				POST(f, fi_recv(f->ep, f->buf, pre + sz, f->desc, f->peer, &f->ctx[0]));
				sync_sides();
				wait_cq(f, 1, NULL, NULL);
				if (!same(f->buf + pre, sz, seed))
					FAIL("dgram %zu bytes round %d: wrong data", sz, it);
			} else {
				fill(f->buf + pre, sz, seed);
				sync_sides();
				POST(f, fi_send(f->ep, f->buf, pre + sz, f->desc, f->peer, &f->ctx[1]));
				wait_cq(f, 1, NULL, NULL);
			}
			sync_sides();
		}
		if (sz == max)
			break;
	}
	if (!server)
		printf("dgram ping-pong, 1 B to %zu B with a %zu-byte prefix: %s\n", max, pre,
		       failures ? "FAILED" : "ok");
}

int main(int argc, char **argv)
{
	const char *ep = "rdm", *port = NULL, *host = NULL;
	struct fab f = { 0 };
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "e:p:")) != -1) {
		if (c == 'e')
			ep = optarg;
		else if (c == 'p')
			port = optarg;
		else
			return 2;
	}
	if (optind < argc)
		host = argv[optind];
	if (!port || (strcmp(ep, "rdm") && strcmp(ep, "dgram"))) {
		fprintf(stderr, "usage: fabtest -e rdm|dgram -p PORT [SERVER]\n");
		return 2;
	}
	server = host == NULL;
	alarm(240);
	oob_connect(host, port);
	fab_open(&f, strcmp(ep, "rdm") ? FI_EP_DGRAM : FI_EP_RDM);
	sync_sides();
	if (!strcmp(ep, "rdm")) {
		t_pingpong(&f);
		sync_sides();
		t_cq_data(&f);
		t_inject(&f);
		t_unexpected(&f);
		t_rma(&f);
		t_truncate(&f);
	} else {
		t_dgram(&f);
	}
	sync_sides();
	fab_close(&f);
	if (failures) {
		fprintf(stderr, "fabtest %s (%s): %d check(s) failed\n", ep, server ? "server" : "client",
			failures);
		return 1;
	}
	printf("fabtest %s (%s): all checks passed\n", ep, server ? "server" : "client");
	return 0;
}
