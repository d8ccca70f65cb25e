// SPDX-License-Identifier: MIT
/*
 * A library whose constructor uses an emulated EFA device while the
 * dynamic loader's lock is held (it runs inside the dlopen of test_loader),
 * the way a Go c-shared library's runtime or a Python extension's init
 * does. What it does is chosen by LOADER_TEST_MODE:
 *
 *   thread  a thread of its own makes the calls (uverbs open, fstat, ioctl,
 *           write, mmap, dup, fcntl, close; mmap of anonymous memory and
 *           stat of a plain path) and the constructor joins it, as the Go
 *           runtime's threads start while dlopen waits;
 *   front   efadv_query_device on the first device: with libefap2p.so
 *           preloaded, the library starts its Go core, whose runtime
 *           threads call mmap while the constructor waits for them;
 *   signal  the constructor signals the program's other thread and waits
 *           for its handler (test_loader.c), which makes the calls.
 *
 * Each call is checked; loader_ctor_result() tells test_loader what failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/efadv_p2p.h>
#include <infiniband/verbs.h>

#include "loader_test.h"

static char result[512];

static void fail(const char *what, int err)
{
	if (!result[0])
		snprintf(result, sizeof(result), "%s: %s", what, strerror(err));
}

static void *calls_thread(void *arg)
{
	(void)arg;
	loader_test_calls(result, sizeof(result));
	return NULL;
}

static void run_thread(void)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, calls_thread, NULL);

	if (rc) {
		fail("pthread_create", rc);
		return;
	}
	pthread_join(t, NULL);
}

static int core_loaded(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "libefap2p-core") != NULL;
	fclose(f);
	return found;
}

static void run_front(void)
{
	struct efadv_device_attr attr;
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n, rc;

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fail("ibv_get_device_list: no device", errno ? errno : ENODEV);
		return;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fail("ibv_open_device", errno);
		ibv_free_device_list(list);
		return;
	}
	memset(&attr, 0, sizeof(attr));
	rc = efadv_query_device(ctx, &attr, sizeof(attr));
	if (rc)
		fail("efadv_query_device", rc);
	else if (!(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_P2P_DMA))
		fail("efadv_query_device: no P2P_DMA bit from libefap2p", ENOTSUP);
	else if (!core_loaded())
		fail("libefap2p answered without its Go core: nothing started under the lock", ENOTSUP);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

__attribute__((constructor)) static void loader_ctor(void)
{
	const char *mode = getenv("LOADER_TEST_MODE");

	if (!mode) {
		fail("LOADER_TEST_MODE is not set", EINVAL);
	} else if (!strcmp(mode, "thread")) {
		run_thread();
	} else if (!strcmp(mode, "front")) {
		run_front();
	} else if (!strcmp(mode, "signal")) {
		int rc = loader_test_signal(result, sizeof(result));

		if (rc)
			fail("signalling the program's thread", rc);
	} else {
		fail("unknown LOADER_TEST_MODE", EINVAL);
	}
}

const char *loader_ctor_result(void)
{
	return result;
}
