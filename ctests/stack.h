// SPDX-License-Identifier: MIT
/*
 * What a C test expects of the installed rdma-core and libfabric, as
 * ctests/stack.py decides it from their releases (the one place that
 * does): the test runs under `stack.py -- PROGRAM`, which sets the
 * EFASTACK_* variables read here. A test started without them stops with
 * status 99 rather than guess a release.
 */
#ifndef EFAP2P_CTESTS_STACK_H
#define EFAP2P_CTESTS_STACK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *stack_var(const char *name)
{
	char var[64];
	const char *v;

	snprintf(var, sizeof(var), "EFASTACK_%s", name);
	v = getenv(var);
	if (!v || !*v) {
		fprintf(stderr, "%s is not set: run this test under ctests/stack.py -- PROGRAM, "
			"which tells it the installed rdma-core and libfabric\n", var);
		exit(99);
	}
	return v;
}

/* a behaviour of stack.py's BEHAVIOURS table: 1 when it holds */
static inline int stack_has(const char *name)
{
	return !strcmp(stack_var(name), "1");
}

/* a number stack.py computes (EFADV_CAPS_MASK, BAD_ADDRESS_STATUS) */
static inline unsigned long stack_num(const char *name)
{
	return strtoul(stack_var(name), NULL, 0);
}

/* the release of rdma-core or libfabric, for messages */
static inline const char *stack_release(const char *lib)
{
	return stack_var(!strcmp(lib, "libfabric") ? "LIBFABRIC" : "RDMA_CORE");
}

#endif
