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
 *   loaded, in any of the loader's namespaces (dlmopen), would have its
 *   preemption signal and its scheduler shared. It is told by each loaded
 *   object's file on disk: the sections only the Go linker writes
 *   (.go.buildinfo in every Go binary since 1.13, with or without a build
 *   ID; the build ID note; the runtime's pclntab), or, without section
 *   headers, the build ID note and the build info at the start of the
 *   data, where Go's own reader looks. The file read is the one mapped:
 *   the mapping itself where the process may open it, else a path whose
 *   file has the mapping's inode (a file renamed over the loaded one is
 *   another). Never the objects' memory: a host may keep pages of its data
 *   inaccessible, and a C program may carry a Go binary among its data. An
 *   object whose file cannot be read, or was replaced since it was loaded,
 *   counts as one that might be Go.
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
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
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

/* Does the object file open at fd hold a Go runtime? 1, 0, or -1 with
 * errno when it cannot be told (not an ELF file of this machine). */
static int fd_has_go(int fd)
{
	ElfW(Ehdr) eh;
	struct stat st;
	int go = -1, err = ENOEXEC;

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
	errno = err;
	return go;
}

static int open_ro(const char *path)
{
	int fd;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	return fd;
}

/* Does the object file at path hold a Go runtime? As fd_has_go, and -1
 * with errno when it cannot be opened. */
static int file_has_go(const char *path)
{
	int fd = open_ro(path), go, err;

	if (fd < 0)
		return -1;
	go = fd_has_go(fd);
	err = errno;
	close(fd);
	errno = err;
	return go;
}

/*
 * The loaded objects, of every link-map namespace the loader has (the
 * default one, and each dlmopen() made): listed while the loader's list is
 * held (dl_iterate_phdr, in a loader section, allocating nothing), then
 * found in /proc/self/maps by the address of their dynamic section, and
 * read from the file that mapping maps. Each entry of names: the address
 * (aligned), then the name the loader keeps, NUL-terminated. The program
 * is "/proc/self/exe"; this library and the vDSO (no file) are left out.
 */
struct objects {
	char *names;
	size_t len, cap;	/* what was listed (even past cap), the room */
	int n;
	int seen;		/* objects the loader showed */
};

#define PROGRAM "/proc/self/exe"

static void add_object(struct objects *o, uintptr_t addr, const char *name)
{
	size_t at = (o->len + sizeof(addr) - 1) & ~(sizeof(addr) - 1), n = strlen(name) + 1;

	if (at + sizeof(addr) + n <= o->cap) {
		memcpy(o->names + at, &addr, sizeof(addr));
		memcpy(o->names + at + sizeof(addr), name, n);
	}
	o->len = at + sizeof(addr) + n;
	o->n++;
}

/* The address of info's dynamic section, 0 without one. */
static uintptr_t dynamic_of(const struct dl_phdr_info *info)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			return info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	return 0;
}

/* The loader's list for debuggers (struct r_debug_extended, glibc 2.35:
 * one a namespace, chained), where the program's DT_DEBUG points. */
static const struct r_debug_extended *debug_list(uintptr_t dyn)
{
	const ElfW(Dyn) *d = (const ElfW(Dyn) *)dyn;

	for (; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_DEBUG && d->d_un.d_ptr)
			return (const struct r_debug_extended *)d->d_un.d_ptr;
	return NULL;
}

static void add_link_map(struct objects *o, const struct link_map *l, int program)
{
	const char *name = l->l_name;

	if ((const void *)l->l_ld == (const void *)_DYNAMIC)
		return;		/* this library */
	if (program)
		name = PROGRAM;
	if (!name || !strchr(name, '/'))
		return;		/* the vDSO: no file */
	add_object(o, (uintptr_t)l->l_ld, name);
}

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
	struct objects *o = data;
	uintptr_t dyn = dynamic_of(info);
	const struct r_debug_extended *r = debug_list(dyn);
	int ns;

	(void)size;
	if (r) {
		/* the program's: every namespace, then stop */
		o->len = 0;
		o->n = 0;
		for (ns = 0; r; r = r->base.r_version >= 2 ? r->r_next : NULL, ns++) {
			const struct link_map *l;

			for (l = r->base.r_map; l; l = l->l_next)
				add_link_map(o, l, !ns && l == r->base.r_map && (!l->l_name || !*l->l_name));
		}
		return 1;
	}
	/* no debugger list (a program without DT_DEBUG): this namespace, the
	 * program first */
	if (dyn != (uintptr_t)_DYNAMIC) {
		if (!o->seen && (!info->dlpi_name || !*info->dlpi_name))
			add_object(o, dyn, PROGRAM);
		else if (info->dlpi_name && strchr(info->dlpi_name, '/'))
			add_object(o, dyn, info->dlpi_name);
	}
	o->seen++;
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
		o->seen = 0;
		efap2p_loader_enter(&old);
		dl_iterate_phdr(collect, o);
		efap2p_loader_leave(&old);
		if (o->len <= o->cap)
			return 0;
	}
	return ENOMEM;
}

/* A loaded object and the mapping that holds its dynamic section. */
struct object {
	uintptr_t addr;
	const char *name;
	int mapped;
	unsigned long start, end;
	unsigned int major, minor;
	unsigned long long ino;
	char *path;	/* the mapping's, as the kernel shows it */
};

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = ((const struct object *)a)->addr, y = ((const struct object *)b)->addr;

	return x < y ? -1 : x > y;
}

/* One line of /proc/self/maps: the objects whose address it holds get
 * its mapping (objs sorted by address). */
static void match_line(char *line, struct object *objs, int n)
{
	unsigned long start, end;
	unsigned long long off, ino;
	unsigned int major, minor;
	char perms[8], *path;
	int at = 0, lo = 0, hi = n;

	if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &major, &minor, &ino,
		   &at) < 7 || !at || !ino)
		return;
	while (lo < hi) {	/* the first object at or past start */
		int mid = (lo + hi) / 2;

		if (objs[mid].addr < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	path = line + at;
	path[strcspn(path, "\n")] = 0;
	for (; lo < n && objs[lo].addr < end; lo++) {
		struct object *ob = &objs[lo];

		if (ob->mapped)
			continue;
		ob->mapped = 1;
		ob->start = start;
		ob->end = end;
		ob->major = major;
		ob->minor = minor;
		ob->ino = ino;
		ob->path = strdup(path);
	}
}

/* Finds each object's mapping in /proc/self/maps; 0 or an errno. */
static int find_mappings(struct object *objs, int n)
{
	char buf[8192];
	size_t have = 0;
	int fd = open_ro("/proc/self/maps"), err = 0;

	if (fd < 0)
		return errno;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line, *nl;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			err = errno;
		if (got <= 0)
			break;
		have += (size_t)got;
		buf[have] = 0;
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			match_line(line, objs, n);
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)	/* a line longer than a path: not an object's */
			have = 0;
	}
	close(fd);
	return err;
}

/* Is the file open at fd the one ob's mapping maps? Its inode, and its
 * device -- which the kernel shows as the file system's where stat shows
 * a subvolume's (btrfs), and, before Linux 6.8, as the layer's where stat
 * shows the overlay's (overlayfs): there the inode decides. */
static int maps_file(int fd, const struct object *ob)
{
	struct statfs sf;
	struct stat st;

	if (fstat(fd, &st) || (unsigned long long)st.st_ino != ob->ino)
		return 0;
	if (major(st.st_dev) == ob->major && minor(st.st_dev) == ob->minor)
		return 1;
	return !fstatfs(fd, &sf) && ((unsigned long)sf.f_type == BTRFS_SUPER_MAGIC ||
				     (unsigned long)sf.f_type == OVERLAYFS_SUPER_MAGIC);
}

/*
 * Opens the file ob was loaded from: the mapping itself (map_files, where
 * the process may: CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else its path
 * as the kernel shows it, else the name the loader keeps, each only if it
 * is still the file mapped (not one renamed over it since). -1 with errno,
 * and *replaced set when a file found there is another.
 */
static int open_object(const struct object *ob, int *replaced)
{
	static const char deleted[] = " (deleted)";
	const char *paths[2] = { ob->path, ob->name };
	char mf[64];
	int i, fd, err = ENOENT;

	*replaced = 0;
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", ob->start, ob->end);
	fd = open_ro(mf);
	if (fd >= 0)
		return fd;
	for (i = 0; i < 2; i++) {
		size_t n = paths[i] ? strlen(paths[i]) : 0;

		if (!n || paths[i][0] != '/' ||
		    (n >= sizeof(deleted) - 1 && !strcmp(paths[i] + n - (sizeof(deleted) - 1), deleted))) {
			*replaced |= i == 0 && n;
			continue;
		}
		fd = open_ro(paths[i]);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (maps_file(fd, ob))
			return fd;
		close(fd);
		*replaced = 1;
	}
	errno = err;
	return -1;
}

/* Only one Go runtime may live in a process: is there one already? 1 and
 * why when there is, or when an object's file cannot tell. */
static int go_in_process(char *why, size_t len)
{
	struct objects o = { NULL, 0, 0, 0, 0 };
	struct object *objs = NULL;
	size_t off;
	int found = 0, i, n = 0, listed, rc = list_objects(&o);

	if (!rc && !(objs = calloc((size_t)o.n + 1, sizeof(*objs))))
		rc = ENOMEM;
	for (off = 0; !rc && off < o.len; n++) {
		off = (off + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
		memcpy(&objs[n].addr, o.names + off, sizeof(uintptr_t));
		objs[n].name = o.names + off + sizeof(uintptr_t);
		off += sizeof(uintptr_t) + strlen(objs[n].name) + 1;
	}
	if (!rc) {
		qsort(objs, (size_t)n, sizeof(*objs), by_addr);
		rc = find_mappings(objs, n);
	}
	listed = n;
	if (rc) {
		snprintf(why, len, "the loaded objects cannot be listed (%s) to tell whether one has a Go runtime",
			 strerror(rc));
		found = 1;
	}
	for (i = 0; !found && i < n; i++) {
		struct object *ob = &objs[i];
		int program = !strcmp(ob->name, PROGRAM), fd, go, err, replaced = 0;
		const char *name = program ? "the program" : ob->path ? ob->path : ob->name;

		if (!program && !ob->mapped) {
			/* not mapped from a file (remapped, or unloaded since
			 * it was listed) */
			snprintf(why, len, "%s is not mapped from its file, so it cannot tell whether it has a Go runtime",
				 ob->name);
			found = 1;
			break;
		}
		if (program) {
			fd = -1;
			go = file_has_go(PROGRAM);
		} else {
			fd = open_object(ob, &replaced);
			go = fd < 0 ? -1 : fd_has_go(fd);
		}
		err = errno;
		if (fd >= 0)
			close(fd);
		if (go > 0)
			snprintf(why, len,
				 "%s has a Go runtime and a process can hold only one (Go programs use the efadv package)",
				 name);
		else if (!program && fd < 0 && replaced)
			snprintf(why, len,
				 "%s was replaced or removed since it was loaded, so its file cannot tell whether it has a Go runtime",
				 ob->name);
		else if (go < 0)
			snprintf(why, len, "%s cannot be read to tell whether it has a Go runtime (%s)", name,
				 strerror(err));
		found = go != 0;
	}
	for (i = 0; i < listed; i++)
		free(objs[i].path);
	free(objs);
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
