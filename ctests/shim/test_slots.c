// SPDX-License-Identifier: MIT
/*
 * The warm paths' device-pointer table (shim/front/front.h), on its own:
 * a device whose pointer's first slot holds another device's is found
 * inline, in the slot efap2p_dev_of gave it, as one in its first slot is;
 * a pointer not in the table, or one reused under another name, is not.
 * Nothing is timed: a device found inline is one whose answer costs no
 * call (efap2p_dev_caps_slow, here a stub that counts its calls).
 */
#include <stdio.h>
#include <stdlib.h>

#include "front.h"

struct efap2p_dev_slot efap2p_dev_slots[EFAP2P_DEV_SLOTS];
static int slow_calls;

int efap2p_dev_caps_slow(const struct ibv_device *device)
{
	(void)device;
	slow_calls++;
	return EFAP2P_UNKNOWN;
}

static int failures;

static void want(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

static uint32_t first_slot(const struct ibv_device *d)
{
	return efap2p_hash_ptr((uintptr_t)d) & (EFAP2P_DEV_SLOTS - 1);
}

/* Puts d in slot i under its name, with answer caps. */
static void place(uint32_t i, struct ibv_device *d, int caps)
{
	struct efap2p_dev_slot *s = &efap2p_dev_slots[i & (EFAP2P_DEV_SLOTS - 1)];

	memset(s->name, 0, sizeof(s->name));
	memcpy(s->name, d->name, strlen(d->name));
	s->long_name = 0;
	s->dev = (int)(i & 0xff);
	atomic_store(&s->caps, caps);
	atomic_store(&s->ptr, (uintptr_t)d);
}

int main(void)
{
	/* more devices than slots: two of them share a first slot */
	enum { N = 2 * EFAP2P_DEV_SLOTS };
	struct ibv_device *devs = calloc(N, sizeof(*devs)), *a = NULL, *b = NULL, *c;
	static int seen[EFAP2P_DEV_SLOTS];
	int i;

	if (!devs)
		return 2;
	for (i = 0; i < N && !b; i++) {
		uint32_t h = first_slot(&devs[i]);

		if (seen[h]) {
			a = &devs[seen[h] - 1];
			b = &devs[i];
		}
		seen[h] = i + 1;
	}
	if (!b) {
		printf("FAIL no two devices share a first slot\n");
		return 1;
	}
	snprintf(a->name, sizeof(a->name), "rdmap16s27");
	snprintf(b->name, sizeof(b->name), "rdmap79s0");
	place(first_slot(a), a, EFAP2P_NO);
	place(first_slot(a) + 1, b, EFAP2P_YES); /* as efap2p_dev_of probes */

	want(efap2p_dev_slot_of(a) == &efap2p_dev_slots[first_slot(a)], "the first device is in its first slot");
	want(efap2p_dev_slot_of(b) == &efap2p_dev_slots[(first_slot(a) + 1) & (EFAP2P_DEV_SLOTS - 1)],
	     "the second device is found in the next slot");
	slow_calls = 0;
	want(efap2p_dev_caps_of(a) == EFAP2P_NO && efap2p_dev_caps_of(b) == EFAP2P_YES,
	     "each device's answer is its own");
	want(slow_calls == 0, "both answers were read inline, without a call");

	/* a pointer the table does not hold: the probe ends at an empty slot */
	for (c = devs; c < devs + N && (c == a || c == b || efap2p_dev_slots[first_slot(c)].ptr); c++)
		;
	want(c < devs + N && !efap2p_dev_slot_of(c), "a device not in the table is not found");
	/* b's memory reused by another device: its name tells them apart */
	snprintf(b->name, sizeof(b->name), "rdmap80s0");
	want(!efap2p_dev_slot_of(b), "a pointer reused under another name is not taken for the old device");
	free(devs);
	if (!failures)
		printf("test_slots: ok\n");
	return failures ? 1 : 0;
}
