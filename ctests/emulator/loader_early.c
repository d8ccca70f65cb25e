// SPDX-License-Identifier: MIT
/*
 * A library test_loader_early links (DT_NEEDED): the loader initialises it
 * before the libraries preloaded after the program's own, libefasim
 * included, so its constructor's calls reach the emulator before the
 * emulator's constructor has run.
 */
#include "loader_test.h"

static char result[512];

__attribute__((constructor)) static void loader_early(void)
{
	loader_test_calls(result, sizeof(result));
}

const char *loader_early_result(void);
const char *loader_early_result(void)
{
	return result;
}

/* unused here: loader_test.h declares it for test_loader */
int loader_test_signal(char *why, size_t len)
{
	(void)why;
	(void)len;
	return ENOSYS;
}
