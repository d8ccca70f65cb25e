// SPDX-License-Identifier: MIT
/*
 * The emulator answers calls made before its constructor ran: the
 * constructor of a library this program links (loader_early.c) uses an
 * emulated device first. Run inside `efap2p sim`; the test's wrapper also
 * checks (EFASIM_TRACE=1) that the emulator saw them come that early.
 */
#include <stdio.h>

const char *loader_early_result(void);

int main(void)
{
	const char *why = loader_early_result();

	if (why[0]) {
		printf("FAIL early: %s\n", why);
		return 1;
	}
	printf("ok early: the calls of a constructor that ran first were answered\n");
	return 0;
}
