// SPDX-License-Identifier: MIT
/*
 * A minimal test harness for the emulator's C tests: a failed check prints
 * its location and the program goes on; the exit status is the number of
 * failures (capped), so ctest and valgrind see it. Every macro evaluates
 * its arguments once.
 */
#ifndef EFASIM_CHECK_H
#define EFASIM_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			check_failures++;                                   \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,       \
				__LINE__, #cond);                           \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
		}                                                           \
	} while (0)

static inline void check_err(int got, int want, const char *expr, const char *file, int line)
{
	if (got == want)
		return;
	check_failures++;
	fprintf(stderr, "FAIL %s:%d: %s: got %d (%s), want %d (%s)\n", file, line, expr, got,
		strerror(got), want, strerror(want));
}

static inline void check_eq(unsigned long long got, unsigned long long want, const char *expr,
			    const char *file, int line)
{
	if (got == want)
		return;
	check_failures++;
	fprintf(stderr, "FAIL %s:%d: %s: got %llu (%#llx), want %llu (%#llx)\n", file, line, expr,
		got, got, want, want);
}

/* an errno-style result equals the expected errno */
#define CHECK_ERR(got, want) check_err((int)(got), (int)(want), #got, __FILE__, __LINE__)
#define CHECK_EQ(got, want)                                                          \
	check_eq((unsigned long long)(got), (unsigned long long)(want), #got, __FILE__, \
		 __LINE__)

static inline int check_exit(const char *name)
{
	if (check_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
		return check_failures > 100 ? 100 : check_failures;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

#endif
