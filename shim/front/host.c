// SPDX-License-Identifier: MIT
/*
 * May a Go runtime start in this process without hurting it? Asked once,
 * before the core is loaded; when not, the core stays out (precomputed
 * answers or pass-through) and the reason is said once.
 *
 * The rules are ones that cannot be wrong on another machine: facts read
 * from files and limits, never a threshold measured here.
 *
 * - One Go runtime a process: a Go program or a Go shared library already
 *   loaded would have its preemption signal and its scheduler shared. It
 *   is told by each loaded object's file on disk: the sections only the Go
 *   linker writes (.go.buildinfo in every Go binary since 1.13, with or
 *   without a build ID; the build ID note; the runtime's pclntab), or,
 *   without section headers, the build ID note and the build info at the
 *   start of the data, where Go's own reader looks. Never the objects'
 *   memory: a host may keep pages of its data inaccessible, and a C
 *   program may carry a Go binary among its data. An object whose file
 *   cannot be read counts as one that might be Go.
 * - Signals the Go runtime never blocks in its threads (SIGCHLD, SIGPROF,
 *   SIGURG): a host that blocks one, to read it from a signalfd or with
 *   sigwait, would have it delivered to a Go thread and lost.
 * - Memory: under a finite RLIMIT_AS or RLIMIT_DATA, whatever its size,
 *   the runtime can die of an address-space reservation refused.
 * - Threads: where a finite RLIMIT_NPROC (for every user but the initial
 *   namespace's root, told by its real uid and namespace) or a pids cgroup
 *   bounds them, the runtime's threads must fit: tried by starting as many
 *   at once.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/* The Go linker's build-info blob starts with this, 16-byte aligned (in
 * the section .go.buildinfo, at the start of the writable data). */
static const char buildinfo_magic[14] = "\xff Go buildinf:";

/* The sections only the Go linker writes: the build info (Go 1.13 and
 * later, every build mode, -buildid= or not), the build ID note, the
 * runtime's function table. */
static int go_section(const char *name)
{
	return !strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid") ||
	       !strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab");
}

#define READ_MAX (64u << 10)	/* a string table, a note, a data head */

/* Reads len bytes at off into a new buffer; NULL with errno set. */
static char *pread_new(int fd, uint64_t off, size_t len)
{
	char *buf = malloc(len ? len : 1);
	size_t got = 0;

	while (buf && got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			errno = n ? errno : EIO;
			return NULL;
		}
		got += (size_t)n;
	}
	return buf;
}

/* From the section headers: 1 Go, 0 not, -1 with errno when they cannot
 * be read. */
static int go_by_sections(int fd, const ElfW(Ehdr) *eh)
{
	ElfW(Shdr) sh[64], strtab;
	uint32_t i, n;
	char *names;
	int go = 0;

	if (eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shstrndx >= eh->e_shnum ||
	    pread(fd, &strtab, sizeof(strtab), (off_t)(eh->e_shoff + eh->e_shstrndx * sizeof(strtab))) !=
		    (ssize_t)sizeof(strtab) ||
	    !strtab.sh_size || strtab.sh_size > READ_MAX) {
		errno = ENOEXEC;
		return -1;
	}
	names = pread_new(fd, strtab.sh_offset, strtab.sh_size);
	if (!names)
		return -1;
	names[strtab.sh_size - 1] = 0;
	for (i = 0; !go && i < eh->e_shnum; i += n) {
		uint32_t j;

		n = eh->e_shnum - i < 64 ? eh->e_shnum - i : 64;
		if (pread(fd, sh, n * sizeof(sh[0]), (off_t)(eh->e_shoff + i * sizeof(sh[0]))) !=
		    (ssize_t)(n * sizeof(sh[0]))) {
			free(names);
			errno = ENOEXEC;
			return -1;
		}
		for (j = 0; !go && j < n; j++)
			go = sh[j].sh_name < strtab.sh_size && go_section(names + sh[j].sh_name);
	}
	free(names);
	return go;
}

/* Without section headers (sstrip): the Go build ID note, or the build
 * info at the start of the first writable segment, where Go's own reader
 * (debug/buildinfo) looks. 1, 0, or -1 with errno. */
static int go_by_segments(int fd, const ElfW(Ehdr) *eh)
{
	ElfW(Phdr) ph;
	int i, go = 0, data_seen = 0;

	if (eh->e_phentsize != sizeof(ph) || eh->e_phnum > 256) {
		errno = ENOEXEC;
		return -1;
	}
	for (i = 0; !go && i < eh->e_phnum; i++) {
		size_t len, off;
		char *buf;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh->e_phoff + (size_t)i * sizeof(ph))) != sizeof(ph)) {
			errno = ENOEXEC;
			return -1;
		}
		if (ph.p_type == PT_LOAD && (ph.p_flags & (PF_W | PF_X)) == PF_W && !data_seen++)
			len = ph.p_filesz < READ_MAX ? ph.p_filesz : READ_MAX;
		else if (ph.p_type == PT_NOTE)
			len = ph.p_filesz < READ_MAX ? ph.p_filesz : READ_MAX;
		else
			continue;
		buf = pread_new(fd, ph.p_offset, len);
		if (!buf)
			return -1;
		if (ph.p_type == PT_NOTE)
			go = has_go_note(buf, len);
		for (off = (16 - (ph.p_vaddr & 15)) & 15;
		     ph.p_type == PT_LOAD && !go && off + sizeof(buildinfo_magic) <= len; off += 16)
			go = !memcmp(buf + off, buildinfo_magic, sizeof(buildinfo_magic));
		free(buf);
	}
	return go;
}

#if __SIZEOF_POINTER__ == 8
#define ELFCLASS_HERE ELFCLASS64
#else
#define ELFCLASS_HERE ELFCLASS32
#endif

/* Does the object file at path hold a Go runtime? 1, 0, or -1 with errno
 * when it cannot be told (unreadable, not an ELF file of this machine). */
static int file_has_go(const char *path)
{
	ElfW(Ehdr) eh;
	struct stat st;
	int fd, go = -1, err = ENOEXEC;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st))
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	else if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
		 !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS_HERE &&
		 eh.e_ehsize == sizeof(eh)) {
		go = eh.e_shoff && eh.e_shnum ? go_by_sections(fd, &eh) : go_by_segments(fd, &eh);
		err = go < 0 ? errno : 0;
	}
	close(fd);
	errno = err;
	return go;
}

/* The loaded objects' files, listed while the loader's list is held
 * (dl_iterate_phdr, in a loader section, allocating nothing), read after
 * it: the main program (/proc/self/exe), every object with a path but this
 * library and the vDSO (no file). */
struct objects {
	char *names;	/* NUL-separated */
	size_t len, cap;	/* what was listed (even past cap), the room */
	int n;
};

static int in_object(const struct dl_phdr_info *info, uintptr_t addr)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz)
			return 1;
	}
	return 0;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
	struct objects *o = data;
	const char *name = info->dlpi_name;
	size_t n;

	(void)size;
	if (!name || !*name)
		name = o->n ? NULL : "/proc/self/exe";	/* the program comes first */
	o->n++;
	if (!name || !strchr(name, '/') || in_object(info, (uintptr_t)efap2p_host_refuses_go))
		return 0;
	n = strlen(name) + 1;
	if (o->len + n <= o->cap)
		memcpy(o->names + o->len, name, n);
	o->len += n;
	return 0;
}

/* Lists the objects into o; 0 or ENOMEM. */
static int list_objects(struct objects *o)
{
	size_t cap = 16384;
	int tries;

	for (tries = 0; tries < 4; tries++, cap = 2 * o->len + 4096) {
		sigset_t old;

		free(o->names);
		o->names = malloc(cap);
		if (!o->names)
			return ENOMEM;
		o->cap = cap;
		o->len = 0;
		o->n = 0;
		efap2p_loader_enter(&old);
		dl_iterate_phdr(collect, o);
		efap2p_loader_leave(&old);
		if (o->len <= o->cap)
			return 0;
	}
	return ENOMEM;
}

/* Only one Go runtime may live in a process: is there one already? 1 and
 * why when there is, or when an object's file cannot tell. */
static int go_in_process(char *why, size_t len)
{
	struct objects o = { NULL, 0, 0, 0 };
	size_t off;
	int found = 0, rc = list_objects(&o);

	if (rc) {
		snprintf(why, len, "the loaded objects cannot be listed (%s) to tell whether one has a Go runtime",
			 strerror(rc));
		found = 1;
		o.len = 0;
	}
	for (off = 0; !found && off < o.len; off += strlen(o.names + off) + 1) {
		const char *path = o.names + off;
		int go = file_has_go(path), err = errno;

		if (go > 0)
			snprintf(why, len,
				 "%s has a Go runtime and a process can hold only one (Go programs use the efadv package)",
				 strcmp(path, "/proc/self/exe") ? path : "the program");
		else if (go < 0)
			snprintf(why, len, "%s cannot be read to tell whether it has a Go runtime (%s)",
				 strcmp(path, "/proc/self/exe") ? path : "the program", strerror(err));
		found = go != 0;
	}
	free(o.names);
	return found;
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

/* A finite RLIMIT_AS or RLIMIT_DATA: 1 and why. The Go runtime reserves
 * address space as its heap grows and dies of a reservation refused
 * ("fatal error: out of memory"), killing the process; how much it will
 * want depends on the machine and on what the host does, so no size of
 * limit is known to be enough. */
static int memory_limited(char *why, size_t len)
{
	static const struct {
		int res;
		const char *name;
	} limits[] = { { RLIMIT_AS, "RLIMIT_AS" }, { RLIMIT_DATA, "RLIMIT_DATA" } };
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit r;

		if (getrlimit(limits[i].res, &r)) {
			snprintf(why, len, "%s cannot be read (%s)", limits[i].name, strerror(errno));
			return 1;
		}
		if (r.rlim_cur != RLIM_INFINITY) {
			snprintf(why, len,
				 "%s is set (%llu MiB), and the Go runtime ends the process when its heap cannot grow",
				 limits[i].name, (unsigned long long)r.rlim_cur >> 20);
			return 1;
		}
	}
	return 0;
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

/* The inode of the initial user namespace's file in nsfs
 * (PROC_USER_INIT_INO, include/linux/proc_ns.h: fixed since Linux 3.8). */
#define INIT_USER_NS_INO 0xEFFFFFFDu

/*
 * Does RLIMIT_NPROC not bind this process? The kernel waives it (fork's
 * check) for one user, the initial user namespace's root by real uid, and
 * for holders of CAP_SYS_RESOURCE or CAP_SYS_ADMIN there. Only the first is
 * told here, from /proc: uid 0 of any other user namespace (a rootless
 * container) is another user, bound like any, and so is an effective uid 0
 * of a real one that is not. (A namespace root made for itself, unshare -Ur
 * run by root, is still the kernel's root and is waived; it is probed all
 * the same, which costs the probe and nothing else.)
 */
static int nproc_waived(void)
{
	struct stat st;

	return getuid() == 0 && !stat("/proc/self/ns/user", &st) && st.st_ino == INIT_USER_NS_INO;
}

/* Is the number of threads bounded for this process: a finite
 * RLIMIT_NPROC that is not waived for it, or a finite pids.max in its
 * cgroup (v2, v1's pids controller) or one above it? Unknown counts as
 * bounded. Starting threads to find out (threads_room, ~0.4 ms on an idle
 * machine, tens of ms on a loaded one) costs far more than these reads. */
static int threads_bounded(void)
{
	char line[4096], path[4200], max[32];
	struct rlimit r;
	FILE *f;
	char *cg, *slash;
	int bounded = 0;

	if (getrlimit(RLIMIT_NPROC, &r) || (r.rlim_cur != RLIM_INFINITY && !nproc_waived()))
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
	int sig = go_unblocked_signal(caller), rc;

	if (go_in_process(why, len))
		return 1;
	if (sig) {
		snprintf(why, len,
			 "the program blocks SIG%s (to read it from a signalfd or sigwait), and the Go runtime's threads would take it",
			 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		return 1;
	}
	if (memory_limited(why, len))
		return 1;
	rc = threads_bounded() ? thread_room() : 0;
	if (rc) {
		snprintf(why, len,
			 "no room for the Go runtime's threads (RLIMIT_NPROC or a pids cgroup: starting %d threads failed: %s)",
			 EFAP2P_GO_THREADS, strerror(rc));
		return 1;
	}
	return 0;
}
