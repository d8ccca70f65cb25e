// SPDX-License-Identifier: MIT
/*
 * rdma-core's EfaQueryDeviceTest idea in plain C: every EFA device of the
 * emulated host answers efadv_query_device with exactly the attributes the
 * model declares. Its caps are the kernel's (the model's device caps as the
 * efa driver of the model's release passes them on), translated into efadv
 * bits (RDMA_READ -> 1<<0, RNR_RETRY -> 1<<1, CQ_WITH_SGID (kernel 1<<3) ->
 * 1<<2, RDMA_WRITE -> 1<<3, UNSOLICITED_WRITE_RECV -> 1<<4), less those the
 * installed libefa does not know (ctests/stack.py, EFADV_CAPS_MASK: rdma-core
 * 44 knows the first three, 46 adds RDMA_WRITE, 52 UNSOLICITED_WRITE_RECV).
 *
 * Usage: test_efadv_query MODEL, run inside `efap2p sim` with that model.
 * The expectations below were written by hand from the model files.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "../stack.h"

/* EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE, which rdma-core 44's header lacks */
#define CAPS_RDMA_WRITE (1u << 3)

struct expect {
	uint32_t caps; /* efadv bits, before libefa drops those it does not know */
	uint32_t max_sq_wr, max_rq_wr, max_rdma_size;
	uint16_t max_sq_sge, max_rq_sge, inline_buf_size;
};

/* models/machines/p5.48xlarge.json, efa_defaults: device_caps RDMA_READ,
 * RNR_RETRY, CQ_NOTIFICATIONS, DATA_POLLING_128, RDMA_WRITE,
 * UNSOLICITED_WRITE_RECV; the driver adds CQ_WITH_SGID for every device;
 * its efa driver is AWS's out-of-tree 2.17.3g, which answers as 6.13's and
 * relays UNSOLICITED_WRITE_RECV (in-tree from 6.10); every NIC uses the
 * defaults. */
static const struct expect p5 = { 0x1f, 4096, 32768, 1073741824, 2, 3, 32 };

/* The 32 NICs: rdmap<bus>s0 for buses 4f-52, 60-63, 71-74, 82-85, 93-96,
 * a4-a7, b5-b8, c6-c9, in decimal. */
static const char *const p5_names[] = {
	"rdmap79s0", "rdmap80s0", "rdmap81s0", "rdmap82s0",
	"rdmap96s0", "rdmap97s0", "rdmap98s0", "rdmap99s0",
	"rdmap113s0", "rdmap114s0", "rdmap115s0", "rdmap116s0",
	"rdmap130s0", "rdmap131s0", "rdmap132s0", "rdmap133s0",
	"rdmap147s0", "rdmap148s0", "rdmap149s0", "rdmap150s0",
	"rdmap164s0", "rdmap165s0", "rdmap166s0", "rdmap167s0",
	"rdmap181s0", "rdmap182s0", "rdmap183s0", "rdmap184s0",
	"rdmap198s0", "rdmap199s0", "rdmap200s0", "rdmap201s0",
};

/* models/machines/trn2.48xlarge.json: efa_defaults as p5's, with the same
 * 6.8 kernel but its in-tree efa driver, which relays no
 * UNSOLICITED_WRITE_RECV (6.10 does), so caps as p5's without it; 16 NICs
 * of device ID efa3, which libefa claims from rdma-core 53 (ctests/stack.py,
 * EFA3): an older one lists no device at all. */
static const struct expect trn2 = { 0xf, 4096, 32768, 1073741824, 2, 3, 32 };

static const char *const trn2_names[] = {
	"rdmap86s0", "rdmap87s0", "rdmap108s0", "rdmap109s0",
	"rdmap130s0", "rdmap131s0", "rdmap152s0", "rdmap153s0",
	"rdmap179s0", "rdmap180s0", "rdmap201s0", "rdmap202s0",
	"rdmap223s0", "rdmap224s0", "rdmap245s0", "rdmap246s0",
};

/* ctests/emulator/refused.json: 03:00.0 uses efa_defaults (RDMA_READ,
 * RNR_RETRY, CQ_NOTIFICATIONS, CQ_WITH_SGID, UNSOLICITED_WRITE_RECV);
 * 05:00.0 overrides caps (RDMA_READ, RDMA_WRITE) and sizes; the driver
 * (the model's kernel: the newest) sets CQ_WITH_SGID on both. */
static const char *const refused_names[] = { "rdmap3s0", "rdmap5s0" };
static const struct expect refused[] = {
	{ 0x17, 4096, 32768, 1073741824, 2, 3, 32 },
	{ 0xd, 2048, 8192, 8388608, 1, 2, 64 },
};

static void check_device(struct ibv_device *dev, const struct expect *e)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct efadv_device_attr a;
	const char *name = ibv_get_device_name(dev);
	uint32_t caps = e->caps & (uint32_t)stack_num("EFADV_CAPS_MASK");
	int rc;

	CHECK(ctx != NULL, "%s: ibv_open_device: %s", name, strerror(errno));
	if (!ctx)
		return;
	memset(&a, 0xa5, sizeof(a));
	rc = efadv_query_device(ctx, &a, sizeof(a));
	CHECK(rc == 0, "%s: efadv_query_device: %s", name, strerror(rc));
	CHECK(a.device_caps == caps, "%s: caps %#x, want %#x (rdma-core %s)", name, a.device_caps, caps,
	      stack_release("rdma-core"));
	CHECK(a.max_sq_wr == e->max_sq_wr && a.max_rq_wr == e->max_rq_wr,
	      "%s: wr %u/%u", name, a.max_sq_wr, a.max_rq_wr);
	CHECK(a.max_sq_sge == e->max_sq_sge && a.max_rq_sge == e->max_rq_sge,
	      "%s: sge %u/%u", name, a.max_sq_sge, a.max_rq_sge);
	CHECK(a.inline_buf_size == e->inline_buf_size, "%s: inline %u", name, a.inline_buf_size);
	CHECK(a.max_rdma_size == e->max_rdma_size, "%s: max_rdma_size %u", name, a.max_rdma_size);
	CHECK(a.comp_mask == 0, "%s: comp_mask %llu", name, (unsigned long long)a.comp_mask);
	/* libefa fills only what fits in inlen; RDMA_READ and RDMA_WRITE
	 * come with max_rdma_size, so a caller that stops at device_caps
	 * lacks them */
	memset(&a, 0xa5, sizeof(a));
	rc = efadv_query_device(ctx, &a, offsetof(struct efadv_device_attr, max_rdma_size));
	CHECK(rc == 0 && a.device_caps == (caps & ~(EFADV_DEVICE_ATTR_CAPS_RDMA_READ | CAPS_RDMA_WRITE)), "%s: short inlen: rc %d caps %#x", name, rc,
	      a.device_caps);
	rc = efadv_query_device(ctx, &a, offsetof(struct efadv_device_attr, inline_buf_size));
	CHECK(rc == EINVAL, "%s: too short inlen: %d", name, rc);
	ibv_close_device(ctx);
}

static void run(const char *const *names, size_t n, const struct expect *per, int same)
{
	struct ibv_device **list;
	size_t i;
	int num = -1, j;

	list = ibv_get_device_list(&num);
	CHECK(list != NULL, "ibv_get_device_list: %s", strerror(errno));
	if (!list)
		return;
	CHECK(num == (int)n, "%d devices, want %zu", num, n);
	for (i = 0; i < n; i++) {
		for (j = 0; j < num; j++)
			if (!strcmp(ibv_get_device_name(list[j]), names[i]))
				break;
		CHECK(j < num, "%s not found", names[i]);
		if (j < num)
			check_device(list[j], same ? per : &per[i]);
	}
	ibv_free_device_list(list);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s p5.48xlarge|trn2.48xlarge|efasim-test-refused\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "p5.48xlarge"))
		run(p5_names, sizeof(p5_names) / sizeof(p5_names[0]), &p5, 1);
	else if (!strcmp(argv[1], "trn2.48xlarge") && stack_has("EFA3"))
		run(trn2_names, sizeof(trn2_names) / sizeof(trn2_names[0]), &trn2, 1);
	else if (!strcmp(argv[1], "trn2.48xlarge")) {
		printf("rdma-core %s: libefa claims no efa3 device (53 does)\n", stack_release("rdma-core"));
		run(NULL, 0, NULL, 1);
	} else if (!strcmp(argv[1], "efasim-test-refused"))
		run(refused_names, 2, refused, 0);
	else
		return 2;
	return check_exit("test_efadv_query");
}
