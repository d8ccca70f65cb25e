// SPDX-License-Identifier: MIT
/*
 * The floor of the computed first answer (scripts/bench-shim.sh runs it;
 * ctest does not): what a C process pays, at the least, to start a Go
 * runtime and make the sysfs reads the answer needs.
 *
 *   bench_floor OPS [GOLIB]
 *
 * OPS lists the system calls to replay, one a line, as
 * scripts/floor-ops.py writes them from a trace of the real first answer
 * (paths relative to $SYSFS_PATH):
 *
 *   open SLOT FLAGS PATH      openat(AT_FDCWD, PATH, FLAGS)
 *   read SLOT SIZE            read(SLOT's fd, SIZE bytes)
 *   pread SLOT SIZE OFFSET    pread(SLOT's fd, SIZE bytes at OFFSET)
 *   getdents SLOT SIZE        getdents64(SLOT's fd, SIZE bytes)
 *   close SLOT
 *   readlink SIZE PATH        readlinkat(AT_FDCWD, PATH, SIZE bytes)
 *
 * They are replayed with raw system calls, as the Go core makes them (not
 * through libc, where the emulator interposes). With GOLIB, an empty Go
 * c-shared library (ctests/shim/emptycore) is loaded and its function
 * called first. Prints key=value pairs: load_us (dlopen and the first
 * call), replay_us, total_us, cpu_us (the whole process's CPU time, every
 * thread, over both), faults and csw (page faults and context switches,
 * every thread), calls.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "benchclock.h"

enum { OP_OPEN, OP_READ, OP_PREAD, OP_GETDENTS, OP_CLOSE, OP_READLINK };

struct op {
	int kind, slot, flags;
	long size, off;
	char *path;
};

#define SLOTS 256

static char *join(const char *root, const char *rel)
{
	size_t n = strlen(root) + strlen(rel) + 2;
	char *p = malloc(n);

	if (!p)
		exit(2);
	snprintf(p, n, "%s/%s", root, rel);
	return p;
}

/* Reads the ops file; every path made absolute before anything is timed. */
static struct op *load(const char *file, const char *root, int *n)
{
	char line[8192], what[16], path[4096];
	struct op *ops = NULL;
	int cap = 0;
	FILE *f = fopen(file, "r");

	if (!f) {
		perror(file);
		exit(2);
	}
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		struct op o = { 0 };

		if (sscanf(line, "%15s", what) != 1)
			continue;
		if (!strcmp(what, "open") &&
		    sscanf(line, "open %d %i %4095s", &o.slot, &o.flags, path) == 3) {
			o.kind = OP_OPEN;
			o.path = join(root, path);
		} else if (!strcmp(what, "read") && sscanf(line, "read %d %ld", &o.slot, &o.size) == 2) {
			o.kind = OP_READ;
		} else if (!strcmp(what, "pread") &&
			   sscanf(line, "pread %d %ld %ld", &o.slot, &o.size, &o.off) == 3) {
			o.kind = OP_PREAD;
		} else if (!strcmp(what, "getdents") &&
			   sscanf(line, "getdents %d %ld", &o.slot, &o.size) == 2) {
			o.kind = OP_GETDENTS;
		} else if (!strcmp(what, "close") && sscanf(line, "close %d", &o.slot) == 1) {
			o.kind = OP_CLOSE;
		} else if (!strcmp(what, "readlink") &&
			   sscanf(line, "readlink %ld %4095s", &o.size, path) == 2) {
			o.kind = OP_READLINK;
			o.path = join(root, path);
		} else {
			fprintf(stderr, "%s: cannot read: %s", file, line);
			exit(2);
		}
		if (o.slot < 0 || o.slot >= SLOTS || o.size < 0 || o.size > 65536) {
			fprintf(stderr, "%s: out of range: %s", file, line);
			exit(2);
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 1024;
			ops = realloc(ops, (size_t)cap * sizeof(*ops));
			if (!ops)
				exit(2);
		}
		ops[(*n)++] = o;
	}
	fclose(f);
	return ops;
}

static void replay(const struct op *ops, int n)
{
	static char buf[65536];
	long fd[SLOTS];
	int i;

	for (i = 0; i < n; i++) {
		const struct op *o = &ops[i];

		switch (o->kind) {
		case OP_OPEN:
			fd[o->slot] = syscall(SYS_openat, AT_FDCWD, o->path, o->flags, 0);
			break;
		case OP_READ:
			syscall(SYS_read, fd[o->slot], buf, o->size);
			break;
		case OP_PREAD:
			syscall(SYS_pread64, fd[o->slot], buf, o->size, o->off);
			break;
		case OP_GETDENTS:
			syscall(SYS_getdents64, fd[o->slot], buf, o->size);
			break;
		case OP_CLOSE:
			syscall(SYS_close, fd[o->slot]);
			break;
		case OP_READLINK:
			syscall(SYS_readlinkat, AT_FDCWD, o->path, buf, o->size);
			break;
		}
	}
}

int main(int argc, char **argv)
{
	const char *root = getenv("SYSFS_PATH");
	double t0, t1, t2, c0, c1;
	long f0, f1, s0, s1;
	struct op *ops;
	int n;

	if (argc < 2 || argc > 3 || !root) {
		fprintf(stderr, "usage: bench_floor OPS [GOLIB], with SYSFS_PATH set\n");
		return 2;
	}
	ops = load(argv[1], root, &n);
	CALLGRIND_ZERO_STATS;
	faults(&f0, &s0);
	c0 = cpu_us();
	t0 = now_ns() / 1e3;
	if (argc == 3) {
		void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		int (*fn)(void) = h ? (int (*)(void))dlsym(h, "efap2p_empty") : NULL;

		if (!fn) {
			fprintf(stderr, "%s: %s\n", argv[2], dlerror());
			return 2;
		}
		fn();
	}
	t1 = now_ns() / 1e3;
	replay(ops, n);
	t2 = now_ns() / 1e3;
	c1 = cpu_us();
	faults(&f1, &s1);
	CALLGRIND_DUMP_STATS_AT("floor");
	printf("load_us=%.1f replay_us=%.1f total_us=%.1f cpu_us=%.0f faults=%ld csw=%ld calls=%d\n",
	       t1 - t0, t2 - t1, t2 - t0, c1 - c0, f1 - f0, s1 - s0, n);
	return 0;
}
