// SPDX-License-Identifier: MIT
/*
 * What the benchmark harnesses (bench_shim, bench_floor) measure a section
 * with: the monotonic clock, the process's CPU time, page faults and
 * context switches (every thread), and callgrind's counters zeroed and
 * dumped around it when the harness runs under callgrind (the macros do
 * nothing otherwise, or without valgrind's header).
 */
#ifndef EFAP2P_BENCHCLOCK_H
#define EFAP2P_BENCHCLOCK_H

#include <sys/resource.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s)
#endif

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The process's CPU time so far, every thread, in microseconds. */
static inline double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* Page faults (minor and major) and context switches so far, every thread. */
static inline void faults(long *flt, long *csw)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*flt = ru.ru_minflt + ru.ru_majflt;
	*csw = ru.ru_nvcsw + ru.ru_nivcsw;
}

#endif /* EFAP2P_BENCHCLOCK_H */
