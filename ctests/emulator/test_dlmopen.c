// SPDX-License-Identifier: MIT
/*
 * A program with a second libc: libraries loaded into link-map namespaces
 * of their own (dlmopen LM_ID_NEWLM) before it touches the emulated
 * devices.
 *
 *     test_dlmopen GO_LIBRARY C_LIBRARY [ROUNDS [bare]]
 *
 * run inside `efap2p sim` (with libefap2p.so preloaded or not). ROUNDS
 * (40) fresh processes, each with a deadline of 30 s, each of which
 *
 *   - loads C_LIBRARY (nslib.c) into a namespace of its own: its calls on
 *     /sys and /dev/infiniband paths (stat, open, opendir, readlink, ioctl)
 *     go to its namespace's libc, which the preloaded emulator is not in,
 *     and answer as the system calls do (this host's files), while the same
 *     paths in the program's namespace are the emulated host's;
 *   - loads GO_LIBRARY (ctests/shim/golib) into another: its runtime
 *     starts its threads through that namespace's libc;
 *   - at once lists, opens and queries every emulated device and reads
 *     their sysfs folder, for 200 ms at least, while those threads start;
 *   - runs the Go library's collector.
 *
 * Each process first starts and joins one thread of its own, as a program
 * must on glibc (2.36 to 2.41 checked) before a library it dlmopen()s
 * starts threads: the dynamic loader allocates every new thread's TLS
 * vector with the program namespace's malloc, also for a thread the other
 * namespace's libc starts, and that malloc takes no lock while its own
 * libc has never started a thread (__libc_single_threaded). Without it
 * ("bare") the program's heap breaks in some of the rounds ("malloc():
 * unsorted double linked list corrupted", "malloc assertion failure in
 * sysmalloc"), emulated or not: the failure the test shows when the thread
 * is left out.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "../child.h"
#include "check.h"

static void *nothing(void *arg)
{
	return arg;
}

/* The program's libc has started a thread: its malloc locks from now on. */
static void start_a_thread(void)
{
	pthread_t t;

	CHECK_ERR(pthread_create(&t, NULL, nothing, NULL), 0);
	pthread_join(t, NULL);
}

/* Entries of /sys/class/infiniband, as the program's namespace sees it. */
static int sysfs_devices(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL, "opendir /sys/class/infiniband: %s", strerror(errno));
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Lists, opens and queries every device; the number listed. */
static int touch_devices(void)
{
	struct ibv_device **list;
	int n = 0, i;

	list = ibv_get_device_list(&n);
	CHECK(list && n > 0, "no emulated device listed");
	for (i = 0; list && i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct efadv_device_attr efa;
		struct ibv_device_attr attr;

		CHECK(ctx != NULL, "cannot open %s: %s", ibv_get_device_name(list[i]), strerror(errno));
		if (!ctx)
			continue;
		CHECK_ERR(ibv_query_device(ctx, &attr), 0);
		CHECK_EQ(attr.vendor_id, 0x1d0f);
		memset(&efa, 0, sizeof(efa));
		CHECK_ERR(efadv_query_device(ctx, &efa, sizeof(efa)), 0);
		CHECK(efa.max_sq_wr > 0, "%s: efadv_query_device answered no max_sq_wr",
		      ibv_get_device_name(list[i]));
		CHECK_ERR(ibv_close_device(ctx), 0);
	}
	if (list)
		ibv_free_device_list(list);
	return n;
}

static int one(const char *golib, const char *clib, int bare)
{
	char why[512];
	int (*probe)(char *, size_t), (*gc)(void), listed, passes = 0;
	struct stat st;
	double start;
	void *c, *g;

	CHECK(!stat("/dev/infiniband/uverbs0", &st) && S_ISCHR(st.st_mode) &&
	      major(st.st_rdev) == 231, "no emulated uverbs0: not inside efap2p sim");
	if (!bare)
		start_a_thread();

	c = dlmopen(LM_ID_NEWLM, clib, RTLD_NOW | RTLD_LOCAL);
	CHECK(c != NULL, "dlmopen %s: %s", clib, dlerror());
	probe = c ? (int (*)(char *, size_t))dlsym(c, "nslib_probe") : NULL;
	CHECK(!c || probe, "no nslib_probe in %s", clib);
	if (probe)
		CHECK(probe(why, sizeof(why)) == 0, "%s", why);

	g = dlmopen(LM_ID_NEWLM, golib, RTLD_NOW | RTLD_LOCAL);
	CHECK(g != NULL, "dlmopen %s: %s", golib, dlerror());
	start = child_now_s();
	do {
		listed = touch_devices();
		CHECK_EQ(sysfs_devices(), listed);
		passes++;
	} while (passes < 3 || child_now_s() - start < 0.2);

	gc = g ? (int (*)(void))dlsym(g, "golib_gc") : NULL;
	CHECK(!g || gc, "no golib_gc in %s", golib);
	if (gc) {
		alarm(20);
		CHECK(gc() == 1, "golib_gc failed");
		alarm(0);
	}
	printf("%d devices, %d passes\n", listed, passes);
	return check_exit("test_dlmopen one");
}

/* One round: this program's "one" in a process of its own, 30 s at most;
 * its output in out. The exit status, -signal, or CHILD_HUNG for a hang. */
static int round_of(char **args, char *out, size_t len)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1001;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(p[1]);
	return child_wait(pid, p[0], 30, out, len);
}

int main(int argc, char **argv)
{
	static char out[16384];
	int rounds, bare, r, failed = 0;

	if (argc >= 4 && !strcmp(argv[1], "one"))
		return one(argv[2], argv[3], argc > 4 && !strcmp(argv[4], "bare"));
	if (argc < 3) {
		fprintf(stderr, "usage: test_dlmopen GO_LIBRARY C_LIBRARY [ROUNDS [bare]]\n");
		return 2;
	}
	rounds = argc > 3 ? atoi(argv[3]) : 40;
	bare = argc > 4 && !strcmp(argv[4], "bare");
	for (r = 0; r < rounds; r++) {
		char *args[] = { "test_dlmopen", "one", argv[1], argv[2], bare ? "bare" : NULL, NULL };
		int rc = round_of(args, out, sizeof(out));

		if (!rc)
			continue;
		fprintf(stderr, "FAIL round %d: %s %d\n", r,
			rc == CHILD_HUNG ? "hung for 30 s," : rc < 0 ? "killed by signal" : "exit status",
			rc < 0 && rc != CHILD_HUNG ? -rc : rc);
		if (!failed++)
			fprintf(stderr, "its output:\n%s---\n", out);
	}
	CHECK(!failed, "%d of %d rounds failed (the first above)", failed, rounds);
	if (!failed)
		printf("test_dlmopen: %d rounds%s: a C and a Go library each in a namespace of its own, "
		       "the devices answered, the collector ran\n", rounds, bare ? " (bare)" : "");
	return check_exit("test_dlmopen");
}
