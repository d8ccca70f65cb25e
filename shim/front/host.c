// SPDX-License-Identifier: MIT
/*
 * May a Go runtime start in this process without hurting it? Asked once,
 * before the core is loaded; when not, the core stays out (precomputed
 * answers or pass-through) and the reason is said once.
 *
 * - One Go runtime a process: a Go program or a Go shared library already
 *   loaded (found by the Go build-ID note, or, where that was left out
 *   with -ldflags=-buildid=, by the build-info blob every Go binary keeps
 *   in its data) would have its preemption signal and its scheduler shared.
 * - Signals the Go runtime never blocks in its threads (SIGCHLD, SIGPROF,
 *   SIGURG): a host that blocks one, to read it from a signalfd or with
 *   sigwait, would have it delivered to a Go thread and lost.
 * - Room: the runtime reserves hundreds of MiB of address space at start
 *   and starts several threads; under RLIMIT_AS, RLIMIT_NPROC or a pids
 *   cgroup without room for them it aborts the process. The address space
 *   is checked against the limit; threads, where a limit or a cgroup bounds
 *   them, by starting a few.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "front.h"

/* A note named "Go" (padded to 4 bytes) of type 4 is the Go build ID. */
static int has_go_note(const char *p, size_t len)
{
	size_t off = 0;

	while (off + sizeof(ElfW(Nhdr)) <= len) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
		size_t name = off + sizeof(*n), desc = name + ((n->n_namesz + 3) & ~3u);

		if (n->n_type == 4 && (n->n_namesz == 3 || n->n_namesz == 4) && desc <= len &&
		    !memcmp(p + name, "Go", 3))
			return 1;
		off = desc + ((n->n_descsz + 3) & ~3u);
	}
	return 0;
}

/* The Go linker's build-info blob starts with this, 16-byte aligned, in
 * the writable data of every Go program and library (Go 1.13 and later). */
static const char buildinfo_magic[14] = "\xff Go buildinf:";

/* Reads other objects' data as it is, redzones an address sanitizer may
 * have poisoned included: not instrumented, and no intercepted memcmp. */
__attribute__((no_sanitize_address))
static int has_go_buildinfo(const char *p, size_t len, uintptr_t addr)
{
	size_t off = (16 - (addr & 15)) & 15, i;

	for (; off + sizeof(buildinfo_magic) <= len; off += 16) {
		for (i = 0; i < sizeof(buildinfo_magic) && p[off + i] == buildinfo_magic[i]; i++)
			;
		if (i == sizeof(buildinfo_magic))
			return 1;
	}
	return 0;
}

static int find_go(struct dl_phdr_info *info, size_t size, void *data)
{
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);

		if ((ph->p_type == PT_NOTE && has_go_note(p, ph->p_memsz)) ||
		    (ph->p_type == PT_LOAD && (ph->p_flags & (PF_W | PF_R)) == (PF_W | PF_R) &&
		     has_go_buildinfo(p, ph->p_filesz, (uintptr_t)p))) {
			*(const char **)data = info->dlpi_name;
			return 1;
		}
	}
	return 0;
}

/* Only one Go runtime may live in a process: is there one already? */
static const char *go_in_process(void)
{
	const char *who = NULL;
	sigset_t old;
	int found;

	/* a loader section: fork waits for it (guard.c) */
	efap2p_loader_enter(&old);
	found = dl_iterate_phdr(find_go, &who);
	efap2p_loader_leave(&old);
	if (!found)
		return NULL;
	return (who && *who) ? who : "the program";
}

/* The signals the Go runtime unblocks in its threads, blocked by the
 * caller; 0 when none is. */
static int go_unblocked_signal(const sigset_t *caller)
{
	static const int sigs[] = { SIGCHLD, SIGPROF, SIGURG };
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigismember(caller, sigs[i]) == 1)
			return sigs[i];
	return 0;
}

/* The process's virtual size, from /proc/self/statm; 0 if unknown. */
static unsigned long long vm_size(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &pages) != 1)
		pages = 0;
	fclose(f);
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

struct probe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int released;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->released)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Can the process start EFAP2P_GO_THREADS more threads at once? 0, or
 * pthread_create's errno. They exist together, then end. */
static int thread_room(void)
{
	struct probe p = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	pthread_t t[EFAP2P_GO_THREADS];
	pthread_attr_t attr;
	int i, started, rc = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (started = 0; started < EFAP2P_GO_THREADS; started++) {
		rc = pthread_create(&t[started], &attr, probe_thread, &p);
		if (rc)
			break;
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&p.lock);
	p.released = 1;
	pthread_cond_broadcast(&p.cond);
	pthread_mutex_unlock(&p.lock);
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return rc;
}

/* Is the number of threads bounded for this process: a finite
 * RLIMIT_NPROC (unless root, whom it does not bind), or a finite pids.max
 * in its cgroup (v2) or one above it? Unknown counts as bounded. Starting
 * threads to find out costs far more than these few reads. */
static int threads_bounded(void)
{
	char line[4096], path[4200], max[32];
	struct rlimit r;
	FILE *f;
	char *cg, *slash;
	int bounded = 0;

	if (getrlimit(RLIMIT_NPROC, &r) || (r.rlim_cur != RLIM_INFINITY && geteuid() != 0))
		return 1;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return 1;
	/* cgroup v2 ("0::PATH") or v1's pids controller ("N:pids:PATH") */
	while (!bounded && fgets(line, sizeof(line), f)) {
		const char *base = "/sys/fs/cgroup";
		char *p = strchr(line, ':');

		if (!p)
			continue;
		if (!strncmp(p, "::", 2))
			cg = p + 2;
		else if (!strncmp(p, ":pids:", 6))
			cg = p + 6, base = "/sys/fs/cgroup/pids";
		else
			continue;
		cg[strcspn(cg, "\n")] = 0;
		for (;;) {
			FILE *m;

			snprintf(path, sizeof(path), "%s%s/pids.max", base, cg);
			m = fopen(path, "re");
			if (m) {
				if (fgets(max, sizeof(max), m) && strncmp(max, "max", 3))
					bounded = 1;
				fclose(m);
			}
			if (bounded || !*cg || !strcmp(cg, "/"))
				break;
			slash = strrchr(cg, '/');
			if (!slash)
				break;
			*slash = 0;
		}
	}
	fclose(f);
	return bounded;
}

int efap2p_host_refuses_go(const sigset_t *caller, char *why, size_t len)
{
	struct rlimit as;
	const char *go = go_in_process();
	int sig = go_unblocked_signal(caller), rc;

	if (go) {
		snprintf(why, len,
			 "%s has a Go runtime and a process can hold only one (Go programs use the efadv package)",
			 go);
		return 1;
	}
	if (sig) {
		snprintf(why, len,
			 "the program blocks SIG%s (to read it from a signalfd or sigwait), and the Go runtime's threads would take it",
			 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		return 1;
	}
	if (!getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY) {
		unsigned long long vm = vm_size();

		if (!vm || vm + EFAP2P_GO_ADDRESS_SPACE > (unsigned long long)as.rlim_cur) {
			snprintf(why, len,
				 "RLIMIT_AS (%llu MiB) leaves no room for the Go runtime's address space (%llu MiB in use, %llu MiB needed)",
				 (unsigned long long)as.rlim_cur >> 20, vm >> 20,
				 (unsigned long long)EFAP2P_GO_ADDRESS_SPACE >> 20);
			return 1;
		}
	}
	rc = threads_bounded() ? thread_room() : 0;
	if (rc) {
		snprintf(why, len,
			 "no room for the Go runtime's threads (RLIMIT_NPROC or a pids cgroup: starting %d threads failed: %s)",
			 EFAP2P_GO_THREADS, strerror(rc));
		return 1;
	}
	return 0;
}
