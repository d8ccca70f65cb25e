// SPDX-License-Identifier: MIT
/*
 * libefap2p's Go core and the host's signals, in the emulated p5.48xlarge:
 * - the threads the Go runtime starts block the asynchronous signals a
 *   host handles (all but SIGCHLD, SIGPROF and SIGURG, which the runtime
 *   keeps open), so the host's handlers for them never run there;
 * - a handler the host installs after the core started, without
 *   SA_ONSTACK and with a large frame, runs while threads keep making
 *   cold calls into Go, and nothing crashes (calls into Go run with the
 *   asynchronous signals blocked);
 * - a SIGSEGV handler the host installed before the core started still
 *   gets its faults (the runtime chains to it), and without one a fault
 *   still kills the process with SIGSEGV.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "shimtest.h"

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);

static struct ibv_context *ctx;
static atomic_int handled, stop;

static int p2p_bit(void)
{
	struct efadv_device_attr attr;

	return !efadv_query_device(ctx, &attr, sizeof(attr)) && (attr.device_caps & P2P_DMA_BIT);
}

/* SigBlk of every thread but the main one blocks the asynchronous signals
 * a host handles (the runtime keeps SIGCHLD, SIGPROF and SIGURG open). */
static void check_go_threads(void)
{
	const unsigned long long want = 1ull << (SIGHUP - 1) | 1ull << (SIGINT - 1) |
					1ull << (SIGTERM - 1) | 1ull << (SIGUSR1 - 1) |
					1ull << (SIGUSR2 - 1) | 1ull << (SIGALRM - 1);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], line[256];
	int others = 0;

	while (d && (e = readdir(d))) {
		unsigned long long blk = 0;
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "SigBlk:", 7))
				blk = strtoull(line + 7, NULL, 16);
		if (f)
			fclose(f);
		others++;
		CHECK((blk & want) == want, "thread %s: SigBlk %llx", e->d_name, blk);
	}
	if (d)
		closedir(d);
	CHECK(others > 0, "no Go thread found");
}

static void big_handler(int sig)
{
	volatile char frame[64 << 10];

	frame[0] = (char)sig;
	frame[sizeof(frame) - 1] = frame[0];
	atomic_fetch_add(&handled, 1);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		kill(getpid(), SIGUSR1);
		usleep(200);
	}
	return NULL;
}

/* Cold calls into Go (a peer not asked before each time) under a rain of
 * SIGUSR1 handled without SA_ONSTACK. */
static void check_late_handler(void)
{
	query_peer_fn q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	struct efadv_p2p_attr a;
	pthread_t th;
	char peer[16];
	int bus, dev, tries;

	signal(SIGUSR1, big_handler);
	pthread_create(&th, NULL, signaller, NULL);
	/* every peer once, and on (a loaded machine may not have run the
	 * signaller yet) until a signal was handled, for at most 10 s */
	for (bus = 0x40, tries = 0; bus < 0xd0 || (!atomic_load(&handled) && tries < 10000); bus++) {
		for (dev = 0; dev < 32; dev++) {
			snprintf(peer, sizeof(peer), "%02x:%02x.%d", bus & 0xff, dev, (bus >> 8) & 7);
			q(ctx, peer, &a, sizeof(a));
		}
		if (bus >= 0xd0) {
			usleep(1000);
			tries++;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	CHECK(atomic_load(&handled) > 0, "SIGUSR1 never handled");
}

static sigjmp_buf jump;

static void segv_handler(int sig)
{
	siglongjmp(jump, sig);
}

/* 0 when the host's own SIGSEGV handler caught the fault. */
static int fault_caught(int with_handler)
{
	volatile int *p = NULL;

	if (with_handler) {
		struct sigaction sa = { .sa_handler = segv_handler };

		sigaction(SIGSEGV, &sa, NULL);
		if (sigsetjmp(jump, 1))
			return 0;
	}
	if (!p2p_bit())	/* starts the core, after the handler */
		return 3;
	*p = 1;
	return 4;
}

static void check_fault(int with_handler)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fault_caught(with_handler));
	waitpid(pid, &st, 0);
	if (with_handler)
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host SIGSEGV handler: status %#x", st);
	else
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "fault: status %#x", st);
}

int main(void)
{
	CHECK(shim_loaded(), "libefap2p is not loaded");
	ctx = open_by_name("rdmap79s0");
	if (!ctx || !shim_loaded())
		return check_exit("test_signals");
	/* before the core starts, so that the children start their own */
	check_fault(1);
	check_fault(0);
	CHECK(p2p_bit(), "rdmap79s0 has no P2P_DMA");
	check_go_threads();
	check_late_handler();
	return check_exit("test_signals");
}
