// SPDX-License-Identifier: MIT
/*
 * libefap2p in hosts its Go core would hurt, each mode a process of its
 * own (ctest runs them with a timeout, so that a hang fails):
 *
 *   signalfd  the host blocks SIGCHLD and reaps its children through a
 *             signalfd: every child's exit still reaches it
 *   as        RLIMIT_AS of 256 MiB: the first calls answer, the process
 *             lives
 *   as-sweep  every RLIMIT_AS from 256 MiB to 4 GiB in steps of 50 MiB, each
 *             a process of its own started under the limit (with a timeout):
 *             16 threads and the main one ask, the process exits 0, and a
 *             core that was needed is said to be kept out once
 *   nproc     RLIMIT_NPROC at the process count (as an unprivileged user):
 *             the same
 *   nproc-userns  the same as root of a user namespace that an
 *             unprivileged user made (a rootless container): that root is
 *             bound by RLIMIT_NPROC too (77, skipped, where user
 *             namespaces cannot be made); with the path of efap2p as third
 *             argument, its boot-time topology file is written there first
 *             (not root's own unshare -Ur: the kernel's root, which it
 *             stays, is not bound by RLIMIT_NPROC, and its threads start)
 *   guard-page  the program keeps a page of its own .data inaccessible:
 *             the core's first need does not fault on it
 *   with-lib  a library (the third argument) is loaded before the first
 *             call: one that carries a Go binary's build info among its
 *             data (a Go executable as data) but no Go runtime (godata.c),
 *             where the core still loads, or a Go one (golib.go), where it
 *             does not: its collector still runs afterwards
 *   with-lib-ns  the same, loaded into a link-map namespace of its own
 *             (dlmopen LM_ID_NEWLM), after the program started and joined
 *             a thread (glibc's loader needs it, mode_with_lib says why)
 *   replaced  a Go library (third argument) loaded, then a C library
 *             (fourth) renamed over its file: the core stays out, the Go
 *             library's collector runs, and the log says why (the loaded
 *             file read through its mapping by root; "replaced-nocap":
 *             without CAP_SYS_ADMIN, the file there is another)
 *   ctor      a library (the third argument, ctorcall.c) whose constructor
 *             asks every device is loaded: the first calls, the core's
 *             load with them, run under the loader's lock
 *   first-signal  a SIGUSR1 handler that calls efadv_query_device runs
 *             inside the loader during the first call (LD_AUDIT=sigaudit):
 *             no deadlock, and the handler's call starts no load
 *   sigpipe   a SIGPIPE handler calls efadv_query_device while the first
 *             call writes a log line to a broken pipe: no deadlock
 *   cancel    the first caller is cancelled while it writes a log line to a
 *             full pipe: later calls from another thread still return
 *   dlclose   dlopen, use, dlclose, dlopen again: the second instance uses
 *             the core the first loaded, and the P2P_DMA bit stays
 *   storm     a SIGALRM 20 us after the last was handled, whose handler
 *             asks every device and a peer, while the first calls of the
 *             process run: no deadlock, and the main thread's answers are
 *             right
 *   peer-first  a pairwise query, then every device (the index's records
 *             are read on demand by the first)
 *   fork-storm  a SIGALRM 300 us after the last, whose handler forks,
 *             while the first calls run: no deadlock, every child exits
 *   nested-fork  a single-threaded program forks child after child while
 *             a SIGALRM every 500 us forks from its handler, many of them
 *             inside the program's fork (between its prepare and parent
 *             handlers); then the first calls (the core's load, the
 *             caches' inserts) return, in a worker with a watchdog
 *   abandon   20 fresh processes whose first calls a timer abandons
 *             (siglongjmp from its SIGALRM handler) 50 us to 100 ms in:
 *             the thread then asks again and is answered (P2P_DMA, the
 *             pairwise query, cancellation enabled again), and so is
 *             another thread
 *   ask       asks every device
 *   list      asks every device and prints "NAME BIT" lines, then whether
 *             the Go core is mapped and how many threads run
 *
 * The second argument says what the answers should be: "p2p" (every EFA
 * device has P2P_DMA: the emulated p5.48xlarge with a topology file, or
 * with the core), "none" (no device has it: the core is kept out and no
 * file answers), "any" (not checked). "nocore" after it: the Go core must
 * not be mapped at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "../child.h"
#include "shimtest.h"

typedef int (*query_fn)(struct ibv_context *, struct efadv_device_attr *, uint32_t);

static struct ibv_device **devs;
static struct ibv_context *ctxs[64];
static int ndevs;
static query_fn query = efadv_query_device;

static void open_all(void)
{
	int i;

	devs = ibv_get_device_list(&ndevs);
	CHECK(devs && ndevs > 0, "no RDMA device");
	if (!devs || ndevs <= 0)
		exit(check_exit("test_host"));
	if (ndevs > 64)
		ndevs = 64;
	for (i = 0; i < ndevs; i++) {
		ctxs[i] = ibv_open_device(devs[i]);
		CHECK(ctxs[i] != NULL, "cannot open %s", ibv_get_device_name(devs[i]));
	}
}

/* The number of devices whose answer has P2P_DMA. */
static int ask_all(void)
{
	struct efadv_device_attr attr;
	int i, n = 0;

	for (i = 0; i < ndevs; i++) {
		if (!ctxs[i])
			continue;
		memset(&attr, 0, sizeof(attr));
		CHECK_ERR(query(ctxs[i], &attr, sizeof(attr)), 0);
		if (attr.device_caps & P2P_DMA_BIT)
			n++;
	}
	return n;
}

static void check_answers(const char *want, int got)
{
	if (!strcmp(want, "p2p"))
		CHECK(got == ndevs, "%d of %d devices have P2P_DMA, want all", got, ndevs);
	else if (!strcmp(want, "none"))
		CHECK(got == 0, "%d of %d devices have P2P_DMA, want none", got, ndevs);
}

static void mode_list(void)
{
	struct efadv_device_attr attr;
	int i;

	open_all();
	for (i = 0; i < ndevs; i++) {
		memset(&attr, 0, sizeof(attr));
		CHECK_ERR(query(ctxs[i], &attr, sizeof(attr)), 0);
		printf("%s %d\n", ibv_get_device_name(devs[i]), !!(attr.device_caps & P2P_DMA_BIT));
	}
	printf("core %d threads %d\n", core_mapped(), (int)status_field("Threads:"));
}

static void mode_signalfd(const char *want)
{
	enum { CHILDREN = 16 };
	struct signalfd_siginfo si;
	struct pollfd p;
	sigset_t set;
	int i, reaped = 0, fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_CLOEXEC);
	CHECK(fd >= 0, "signalfd: %s", strerror(errno));
	open_all();
	check_answers(want, ask_all());
	for (i = 0; i < CHILDREN; i++) {
		pid_t pid = fork();

		if (!pid)
			_exit(0);
		CHECK(pid > 0, "fork: %s", strerror(errno));
		usleep(2000);
	}
	p.fd = fd;
	p.events = POLLIN;
	while (reaped < CHILDREN && poll(&p, 1, 3000) == 1) {
		if (read(fd, &si, sizeof(si)) != sizeof(si))
			break;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			reaped++;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	CHECK(reaped == CHILDREN, "the signalfd reported %d of %d child exits", reaped, CHILDREN);
}

static void mode_as(const char *want)
{
	struct rlimit r = { 256ul << 20, 256ul << 20 };

	CHECK_ERR(setrlimit(RLIMIT_AS, &r) ? errno : 0, 0);
	open_all();
	check_answers(want, ask_all());
}

/* ---- RLIMIT_AS: every limit, each a process started under it ---- */

#define ASKERS 16

static void *asker(void *arg)
{
	*(int *)arg = ask_all();
	return NULL;
}

/* Under the limit it was started with: 16 threads ask at once (the first
 * calls race), then the main thread. */
static void mode_as_one(const char *want)
{
	pthread_t t[ASKERS];
	pthread_attr_t attr;
	int got[ASKERS], made[ASKERS], i, started = 0;

	open_all();
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (i = 0; i < ASKERS; i++) {
		made[i] = !pthread_create(&t[i], &attr, asker, &got[i]);
		started += made[i];
	}
	pthread_attr_destroy(&attr);
	CHECK(started > 0, "no asking thread could be started");
	for (i = 0; i < ASKERS; i++)
		if (made[i]) {
			pthread_join(t[i], NULL);
			check_answers(want, got[i]);
		}
	check_answers(want, ask_all());
}

/* Runs this program's as-one mode under RLIMIT_AS = limit, with a 20 s
 * timeout; its stderr is kept in err (NUL-terminated). The exit status,
 * or -signal, or CHILD_HUNG for a timeout. */
static int run_under_as(unsigned long long limit, const char *want, int nocore, char *err,
			size_t len)
{
	char *args[] = { "test_host", "as-one", (char *)want, nocore ? "nocore" : NULL, NULL };
	int p[2];
	pid_t pid;

	CHECK_ERR(pipe(p) ? errno : 0, 0);
	pid = fork();
	if (pid == 0) {
		struct rlimit r = { limit, limit };

		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		if (setrlimit(RLIMIT_AS, &r))
			_exit(120);
		execv("/proc/self/exe", args);
		_exit(121);
	}
	close(p[1]);
	return child_wait(pid, p[0], 20, err, len);
}

static int count_lines(const char *text, const char *prefix, const char *with)
{
	const char *l;
	int n = 0;

	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);

		if (!strncmp(l, prefix, strlen(prefix)) && memmem(l, len, with, strlen(with)))
			n++;
	}
	return n;
}

/* "none" (the core is needed): exactly one error line, about RLIMIT_AS;
 * "p2p" (the index answers): no error line. */
static void mode_as_sweep(const char *want, int nocore)
{
	static char err[64 << 10];
	unsigned long long mib;
	int runs = 0;

	for (mib = 256; mib <= 4096; mib += 50, runs++) {
		int rc = run_under_as(mib << 20, want, nocore, err, sizeof(err)), lines;

		CHECK(rc == 0, "RLIMIT_AS %llu MiB: %s %d", mib,
		      rc == CHILD_HUNG ? "hung for 20 s," : rc < 0 ? "killed by signal" : "exit status",
		      rc < 0 && rc != CHILD_HUNG ? -rc : rc);
		lines = count_lines(err, "efap2p: error:", "");
		if (!strcmp(want, "none"))
			CHECK(lines == 1 && count_lines(err, "efap2p: error:", "RLIMIT_AS") == 1,
			      "RLIMIT_AS %llu MiB: %d error lines, want one about RLIMIT_AS", mib, lines);
		else
			CHECK(lines == 0, "RLIMIT_AS %llu MiB: %d error lines, want none", mib, lines);
		if (rc || (lines != !strcmp(want, "none")))
			fprintf(stderr, "--- its stderr:\n%s---\n", err);
	}
	printf("test_host: %d limits\n", runs);
}

static void *noop(void *arg)
{
	return arg;
}

/* As nobody, with RLIMIT_NPROC at the processes nobody has now: no thread
 * can be started. */
static void mode_nproc(const char *want)
{
	struct rlimit r = { 1, 1 };
	pthread_t t;

	open_all();
	if (geteuid() == 0) {
		CHECK_ERR(setgid(65534) ? errno : 0, 0);
		CHECK_ERR(setuid(65534) ? errno : 0, 0);
	}
	CHECK_ERR(setrlimit(RLIMIT_NPROC, &r) ? errno : 0, 0);
	CHECK(pthread_create(&t, NULL, noop, NULL) != 0,
	      "a thread could still be started: the test does not test");
	check_answers(want, ask_all());
}

/* Root of a user namespace an unprivileged user made, as in a rootless
 * container: 0 when this process is that, 77 when user namespaces cannot
 * be made here. The devices stay open; the emulated host's tree is made
 * readable to the user, and (for_export) its boot-time topology folder
 * the user's. */
static int become_userns_root(int for_export)
{
	const char *root = getenv("EFAP2P_TOPOLOGY_ROOT");
	char path[4096], map[64];
	int fd;

	if (root && chmod(root, 0755))
		CHECK(0, "chmod %s: %s", root, strerror(errno));
	if (root && for_export) {
		snprintf(path, sizeof(path), "%s/run", root);
		if (mkdir(path, 0755) && errno != EEXIST)
			CHECK(0, "%s: %s", path, strerror(errno));
		snprintf(path, sizeof(path), "%s/run/efap2p", root);
		if ((mkdir(path, 0755) && errno != EEXIST) || chown(path, 65534, 65534))
			CHECK(0, "%s: %s", path, strerror(errno));
	}
	CHECK_ERR(setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		  setresuid(65534, 65534, 65534) ? errno : 0, 0);
	/* a changed uid made the process undumpable: its /proc files root's */
	prctl(PR_SET_DUMPABLE, 1);
	if (unshare(CLONE_NEWUSER)) {
		printf("test_host: skipped: an unprivileged user cannot make a user namespace here (%s)\n",
		       strerror(errno));
		return 77;
	}
	snprintf(map, sizeof(map), "0 65534 1\n");
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		CHECK(write(fd, "deny", 4) == 4, "setgroups: %s", strerror(errno));
		close(fd);
	}
	fd = open("/proc/self/uid_map", O_WRONLY);
	CHECK(fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map), "uid_map: %s",
	      strerror(errno));
	if (fd >= 0)
		close(fd);
	fd = open("/proc/self/gid_map", O_WRONLY);
	CHECK(fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map), "gid_map: %s",
	      strerror(errno));
	if (fd >= 0)
		close(fd);
	CHECK(geteuid() == 0, "euid %u in the user namespace, want 0", (unsigned)geteuid());
	return 0;
}

/* Runs efap2p export --boot, as the unit would inside the container. */
static void export_boot(const char *efap2p)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(efap2p, "efap2p", "export", "--boot", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "%s export --boot failed", efap2p);
}

/* RLIMIT_NPROC at this user's thread count, as root of a user namespace;
 * with efap2p, its boot-time topology file written there first. */
static int mode_nproc_userns(const char *want, const char *efap2p)
{
	struct rlimit r = { 1, 1 };
	pthread_t t;
	int rc;

	open_all();
	rc = become_userns_root(efap2p != NULL);
	if (rc)
		return rc;
	if (efap2p)
		export_boot(efap2p);
	CHECK_ERR(setrlimit(RLIMIT_NPROC, &r) ? errno : 0, 0);
	CHECK(pthread_create(&t, NULL, noop, NULL) != 0,
	      "a thread could still be started: the test does not test");
	check_answers(want, ask_all());
	return 0;
}

/* A page of the program's own initialised data, made inaccessible (a
 * guard page, sealed data), then the first call that needs the core. */
__attribute__((used, aligned(4096))) char guarded[3 << 12] = { 1 };

static void mode_guard_page(const char *want)
{
	char *page = guarded + 4096;

	open_all();
	CHECK_ERR(mprotect(page, 4096, PROT_NONE) ? errno : 0, 0);
	check_answers(want, ask_all());
	CHECK_ERR(mprotect(page, 4096, PROT_READ | PROT_WRITE) ? errno : 0, 0);
	CHECK(guarded[0] == 1, "the data changed");
}

/* A Go library's collector runs (golib.go): it hangs where a second Go
 * runtime shares the process. The alarm's default action ends a hang. */
static void run_go_gc(void *h)
{
	int (*gc)(void) = h ? (int (*)(void))dlsym(h, "golib_gc") : NULL;

	if (!gc)
		return;
	alarm(10);
	CHECK(gc() == 1, "golib_gc failed");
	alarm(0);
	printf("test_host: the Go library's collector ran\n");
}

/* A library loaded before the devices are opened and the first call that
 * needs the core (into a link-map namespace of its own with ns). A
 * program must start a thread of its own before a library it dlmopen()s
 * starts threads, on glibc: the dynamic loader allocates each new thread's
 * TLS vector with the program namespace's malloc, which takes no lock
 * while the program's libc has never started a thread itself, and the
 * heap broke in about 1 run in 10 (ctests/emulator/test_dlmopen.c). */
static void mode_with_lib(const char *want, const char *lib, int ns)
{
	void *h;

	if (ns) {
		pthread_t t;

		CHECK_ERR(pthread_create(&t, NULL, noop, NULL), 0);
		pthread_join(t, NULL);
	}
	h = ns ? dlmopen(LM_ID_NEWLM, lib, RTLD_NOW | RTLD_LOCAL) : dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "dlopen %s: %s", lib, dlerror());
	open_all();
	check_answers(want, ask_all());
	run_go_gc(h);
}

/* Can this process open its mappings through /proc/self/map_files? */
static int map_files_open(void)
{
	char line[512], path[128];
	unsigned long start, end;
	FILE *f = fopen("/proc/self/maps", "re");
	int fd = -1;

	while (f && fd < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &start, &end) == 2 && strchr(line, '/')) {
			snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", start, end);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			break;
		}
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* Drops CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE from the effective set:
 * the mappings cannot be opened through map_files, files still can. */
static void drop_map_files_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	static const int caps[] = { CAP_SYS_ADMIN, 40 /* CAP_CHECKPOINT_RESTORE */ };
	size_t i;

	CHECK_ERR(syscall(SYS_capget, &h, d) ? errno : 0, 0);
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		d[caps[i] / 32].effective &= ~(1u << (caps[i] % 32));
	CHECK_ERR(syscall(SYS_capset, &h, d) ? errno : 0, 0);
}

/* A Go library (golib) loaded from a file that a C library (clib) is
 * then renamed over, as an upgrade would: the loaded object is still Go,
 * and the core must stay out. The library's log says why: the loaded
 * file was read through its mapping (root), or the file there now is
 * another (nocap: without CAP_SYS_ADMIN, or not root). */
static void mode_replaced(const char *want, const char *golib, const char *clib, int nocap)
{
	const char *why, *tmpdir = getenv("TMPDIR");
	char dir[256], path[512], tmp[512], log[8192] = "", cmd[2048];
	int fd, saved;
	ssize_t n;
	void *h;

	if (nocap)
		drop_map_files_caps();
	why = map_files_open() ? "has a Go runtime" : "was replaced or removed since it was loaded";
	snprintf(dir, sizeof(dir), "%s/efap2p-replaced.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/libplugin.so", dir);
	snprintf(tmp, sizeof(tmp), "%s/libplugin.so.new", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && cp '%s' '%s'", golib, path, clib, tmp);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
	CHECK_ERR(rename(tmp, path) ? errno : 0, 0);
	open_all();
	/* the library's log, kept in a file */
	fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	saved = dup(STDERR_FILENO);
	CHECK(fd >= 0 && saved >= 0, "cannot keep stderr: %s", strerror(errno));
	dup2(fd, STDERR_FILENO);
	check_answers(want, ask_all());
	dup2(saved, STDERR_FILENO);
	n = pread(fd, log, sizeof(log) - 1, 0);
	log[n > 0 ? n : 0] = 0;
	fputs(log, stderr);
	CHECK(strstr(log, why) != NULL, "the library does not say the loaded library \"%s\"", why);
	run_go_gc(h);
	unlink(path);
	rmdir(dir);
}

/* A library whose constructor makes the process's first calls (ctorcall.c):
 * under the loader's lock its thread holds. */
static void mode_ctor(const char *want, const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const int *devices = h ? dlsym(h, "ctorcall_devices") : NULL;
	const int *p2p = h ? dlsym(h, "ctorcall_p2p") : NULL;

	CHECK(devices && p2p, "dlopen %s: %s", lib, h ? "no counts" : dlerror());
	if (!devices || !p2p)
		return;
	ndevs = *devices;
	CHECK(ndevs > 0, "the constructor found no RDMA device");
	check_answers(want, *p2p);
}

/* ---- a handler calling in during the first call ---- */

/* Is the Go core mapped? With system calls only: a signal handler asks. */
static int core_mapped_now(void)
{
	static const char name[] = "libefap2p-core";
	char buf[8192];
	size_t keep = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;

	while (fd >= 0 && !found && (n = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
		size_t len = keep + (size_t)n;

		found = memmem(buf, len, name, sizeof(name) - 1) != NULL;
		keep = len < sizeof(name) ? len : sizeof(name) - 1;
		memmove(buf, buf + len - keep, keep);
	}
	if (fd >= 0)
		close(fd);
	return found;
}

static volatile sig_atomic_t usr1_calls, usr1_loaded, usr1_rc;

static void on_usr1(int sig)
{
	struct efadv_device_attr attr;
	int saved = errno, before = core_mapped_now(), rc;

	(void)sig;
	rc = query(ctxs[0], &attr, sizeof(attr));
	if (rc)
		usr1_rc = rc;
	usr1_loaded |= !before && core_mapped_now();
	usr1_calls++;
	errno = saved;
}

/* SIGUSR1 is raised (by the audit module sigaudit.c, LD_AUDIT) inside the
 * loader, while the first call resolves a symbol with dlsym or dlvsym;
 * its handler asks too. No deadlock, no load started by the handler, and
 * the main thread's answers are right. */
static void mode_first_signal(const char *want)
{
	open_all();
	signal(SIGUSR1, on_usr1);
	check_answers(want, ask_all());
	CHECK(usr1_calls == 1, "the handler ran %d times, want once (is LD_AUDIT set?)", (int)usr1_calls);
	CHECK(!usr1_loaded, "the handler's call loaded the Go core");
	CHECK_ERR(usr1_rc, 0);
}

static void on_sigpipe(int sig)
{
	(void)sig;
	ask_all();
}

static void mode_sigpipe(const char *want)
{
	int p[2];

	CHECK_ERR(pipe(p) ? errno : 0, 0);
	close(p[0]);
	signal(SIGPIPE, on_sigpipe);
	/* the first call writes this complaint to the broken pipe */
	setenv("EFAP2P_MODE", "bogus", 1);
	open_all();
	dup2(p[1], STDERR_FILENO);
	check_answers(want, ask_all());
}

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);
static query_peer_fn query_peer;
static volatile sig_atomic_t in_handler_calls;

static volatile sig_atomic_t alarm_storm_over;

/* Armed again 20 us after it returns, not every 20 us: on a loaded
 * machine a handler preempted for longer than the period would find the
 * next signal pending at once, and the thread would run nothing else. */
static void on_alarm(int sig)
{
	struct itimerval next = { { 0, 0 }, { 0, 20 } };
	struct efadv_p2p_attr a;
	int saved = errno;

	(void)sig;
	ask_all();
	if (query_peer)
		query_peer(ctxs[0], "0000:53:00.0", &a, sizeof(a));
	in_handler_calls++;
	if (!alarm_storm_over)
		setitimer(ITIMER_REAL, &next, NULL);
	errno = saved;
}

static void mode_storm(const char *want)
{
	struct itimerval it = { { 0, 0 }, { 0, 20 } };
	struct efadv_p2p_attr a;
	char peer[32];
	int i, got;

	open_all();
	query_peer = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &it, NULL);
	got = ask_all();
	for (i = 0; query_peer && i < 256; i++) {
		snprintf(peer, sizeof(peer), "0000:%02x:00.0", i);
		while (query_peer(ctxs[0], peer, &a, sizeof(a)) == EAGAIN)
			;
	}
	alarm_storm_over = 1;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	check_answers(want, got);
	CHECK(in_handler_calls > 0, "the handler never ran");
	printf("test_host: %d calls from the handler\n", (int)in_handler_calls);
}

/* A SIGALRM 300 us after the last one was handled, whose handler forks a
 * child that exits at once, while the first calls of the process run
 * (cache inserts, the core's load): no fork waits for something its own
 * thread holds. (The timer is armed again only after the fork: a signal
 * arriving during fork makes the kernel start it over.) */
static volatile sig_atomic_t handler_forks, handler_fork_failures, storm_over;

static void on_alarm_fork(int sig)
{
	struct itimerval next = { { 0, 0 }, { 0, 300 } };
	int saved = errno, st;
	pid_t pid = fork();

	(void)sig;
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		handler_fork_failures++;
	handler_forks++;
	if (!storm_over)
		setitimer(ITIMER_REAL, &next, NULL);
	errno = saved;
}

static void mode_fork_storm(const char *want)
{
	struct itimerval it = { { 0, 0 }, { 0, 300 } };
	struct efadv_p2p_attr a;
	query_peer_fn q;
	char peer[32];
	int i, got;

	open_all();
	q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	signal(SIGALRM, on_alarm_fork);
	setitimer(ITIMER_REAL, &it, NULL);
	got = ask_all();
	for (i = 0; q && i < 256; i++) {
		snprintf(peer, sizeof(peer), "0000:%02x:00.0", i);
		q(ctxs[i % ndevs], peer, &a, sizeof(a));
	}
	storm_over = 1;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	check_answers(want, got);
	CHECK(handler_forks > 0, "the handler never ran");
	CHECK(!handler_fork_failures, "%d of the handler's forks failed", (int)handler_fork_failures);
	printf("test_host: %d forks from the handler\n", (int)handler_forks);
}

/* ---- forks nested in the program's own fork() ---- */

/* This program's fork handlers, registered after the library's: its
 * prepare runs before the library's, its parent and child handlers after,
 * so that nest_depth > 0 spans the library's handlers and the system call. */
static volatile sig_atomic_t nest_depth, nested_forks, nest_handler_forks, nest_failures;

static void nest_prepare(void)
{
	nest_depth++;
}

static void nest_done(void)
{
	nest_depth--;
}

static void on_alarm_nest(int sig)
{
	int saved = errno, st, inside = nest_depth > 0;
	pid_t pid = fork();

	(void)sig;
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		nest_failures++;
	nested_forks += inside;
	nest_handler_forks++;
	errno = saved;
}

/* One process (single-threaded, the library never asked yet): fork after
 * fork, each child exiting at once, while a SIGALRM every 500 us forks
 * from its handler: many of those land inside the program's fork. Then
 * the first calls, which load the core (loader sections) and fill the
 * caches (the insert lock): no lock a fork took may be left held. */
static void nest_worker(const char *want)
{
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	double start = child_now_s();
	int forks = 0;

	pthread_atfork(nest_prepare, nest_done, nest_done);
	signal(SIGALRM, on_alarm_nest);
	setitimer(ITIMER_REAL, &it, NULL);
	/* at most 20 s: where a nested fork leaks the loader's lock, every
	 * later fork waits 2 s for it */
	while (forks < 4000 && child_now_s() - start < 20) {
		int st;
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0) {
			CHECK(errno == EAGAIN || errno == EINTR, "fork: %s", strerror(errno));
			continue;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		forks++;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("test_host: %d forks, %d from the handler, %d of them inside the program's fork (%.1f s)\n",
	       forks, (int)nest_handler_forks, (int)nested_forks, child_now_s() - start);
	fflush(stdout);
	CHECK(nested_forks > 0, "no handler's fork ran inside the program's: the test does not test");
	CHECK(!nest_failures, "%d of the handler's forks failed", (int)nest_failures);
	open_all();
	check_answers(want, ask_all());
	CHECK(!nest_depth, "fork depth %d after the storm", (int)nest_depth);
}

/* The worker in a process of its own, with a watchdog: a lock left held
 * shows as a hang, reported here. */
static void mode_nested_fork(const char *want)
{
	pid_t pid = fork();
	int st, waited;

	if (pid == 0) {
		nest_worker(want);
		fflush(stdout);
		_exit(check_failures > 100 ? 100 : check_failures);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	for (waited = 0; pid > 0 && waited < 600; waited++) {
		pid_t got = waitpid(pid, &st, WNOHANG);

		if (got == pid)
			break;
		usleep(100000);
	}
	if (pid > 0 && waited == 600) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		CHECK(0, "hung for 60 s after forks nested in fork(): a lock a fork took is still held");
		return;
	}
	if (pid > 0)
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "the worker: %s %d",
		      WIFSIGNALED(st) ? "killed by signal" : "exit status",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* ---- a first call abandoned by a siglongjmp ---- */

static sigjmp_buf abandon_env;
static volatile sig_atomic_t abandon_in_call, abandon_jumped;

static void on_alarm_jump(int sig)
{
	(void)sig;
	if (!abandon_in_call)
		return;
	abandon_jumped = 1;
	siglongjmp(abandon_env, 1);
}

static volatile int other_got = -1;

static void *other_asker(void *arg)
{
	(void)arg;
	other_got = ask_all();
	return NULL;
}

/* The thread's answers after whatever happened to its first call. */
static void check_thread_answers(const char *want, const char *who)
{
	struct efadv_p2p_attr a;
	query_peer_fn q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	int i, ok = 0, old = -1, got = ask_all();

	if (!strcmp(want, "p2p"))
		CHECK(got == ndevs, "%s: %d of %d devices have P2P_DMA, want all", who, got, ndevs);
	for (i = 0; q && i < ndevs; i++)
		ok += q(ctxs[i], "0000:53:00.0", &a, sizeof(a)) == 0;
	if (!strcmp(want, "p2p"))
		CHECK(ok == ndevs, "%s: %d of %d pairwise queries answered", who, ok, ndevs);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	CHECK(old == PTHREAD_CANCEL_ENABLE, "%s: cancellation left disabled", who);
}

/* One fresh process: a SIGALRM delay_us into the first calls jumps out of
 * them (siglongjmp from its handler); then this thread asks again, and
 * another thread. Prints whether the jump abandoned a call. The first
 * calls are pairwise queries, which run the library's code only (no
 * rdma-core, no emulator): a jump out of another library's malloc would
 * leave the heap broken whoever made it. */
static void mode_abandon_one(const char *want, long delay_us)
{
	struct itimerval it = { { 0, 0 }, { delay_us / 1000000, delay_us % 1000000 } };
	query_peer_fn q;
	struct efadv_p2p_attr a;
	pthread_t t;
	int i;

	open_all();
	q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	CHECK(q != NULL, "libefap2p is not loaded");
	if (!q)
		return;
	signal(SIGALRM, on_alarm_jump);
	if (!sigsetjmp(abandon_env, 1)) {
		abandon_in_call = 1;
		setitimer(ITIMER_REAL, &it, NULL);
		for (i = 0; i < ndevs; i++)
			q(ctxs[i], "0000:53:00.0", &a, sizeof(a));
	}
	abandon_in_call = 0;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("abandoned %d\n", (int)abandon_jumped);
	check_thread_answers(want, "the thread whose call was abandoned");
	pthread_create(&t, NULL, other_asker, NULL);
	pthread_join(t, NULL);
	if (!strcmp(want, "p2p"))
		CHECK(other_got == ndevs, "another thread: %d of %d devices have P2P_DMA", other_got, ndevs);
}

/* Fresh processes whose first calls a timer abandons after 50 us to
 * 100 ms: every one answers again afterwards. */
static void mode_abandon(const char *want)
{
	static const long delays_us[] = { 50, 200, 500, 1000, 2000, 4000, 8000, 16000, 32000, 100000 };
	int r, jumped = 0;

	for (r = 0; r < 20; r++) {
		char delay[32], out[256] = "";
		char *args[] = { "test_host", "abandon-one", (char *)want, delay, NULL };
		int p[2], st, hung;
		ssize_t n;
		pid_t pid;

		snprintf(delay, sizeof(delay), "%ld", delays_us[r % 10]);
		if (pipe(p))
			break;
		pid = fork();
		if (pid == 0) {
			dup2(p[1], STDOUT_FILENO);
			close(p[0]);
			execv("/proc/self/exe", args);
			_exit(127);
		}
		close(p[1]);
		/* its output until it ends, 60 s at most (its own SIGALRM is
		 * the test's: a hang is ended here) */
		for (n = 0, hung = 0; n < (ssize_t)sizeof(out) - 1;) {
			struct pollfd pf = { p[0], POLLIN, 0 };
			ssize_t m;

			if (poll(&pf, 1, 60000) != 1) {
				hung = 1;
				kill(pid, SIGKILL);
				break;
			}
			m = read(p[0], out + n, sizeof(out) - 1 - (size_t)n);
			if (m <= 0)
				break;
			n += m;
		}
		out[n] = 0;
		close(p[0]);
		CHECK(!hung, "round %d (timer at %s us): hung for 60 s after the jump: %s", r, delay, out);
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
		      "round %d (timer at %s us): %s", r, delay, out);
		jumped += strstr(out, "abandoned 1") != NULL;
	}
	printf("test_host: %d of 20 first calls abandoned by a siglongjmp, every one answered again\n", jumped);
	CHECK(jumped > 0, "no timer abandoned a call: the test does not test");
}

static void *first_caller(void *arg)
{
	(void)arg;
	ask_all();
	return NULL;
}

/* A pairwise query first (the index's records read on demand), then every
 * device. */
static void mode_peer_first(const char *want)
{
	query_peer_fn q;
	struct efadv_p2p_attr a;

	open_all();
	q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	CHECK(q != NULL, "libefap2p is not loaded");
	if (q)
		CHECK_ERR(q(ctxs[0], "0000:53:00.0", &a, sizeof(a)), 0);
	check_answers(want, ask_all());
}

static void mode_cancel(const char *want)
{
	int p[2], i;
	pthread_t t;
	char junk[65536];

	open_all();
	CHECK_ERR(pipe(p) ? errno : 0, 0);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	memset(junk, 'x', sizeof(junk));
	CHECK(write(p[1], junk, (size_t)fcntl(p[1], F_GETPIPE_SZ)) > 0, "cannot fill the pipe");
	dup2(p[1], STDERR_FILENO);
	setenv("EFAP2P_LOG", "debug", 1);
	pthread_create(&t, NULL, first_caller, NULL);
	usleep(500000);		/* it is now blocked on the full pipe */
	pthread_cancel(t);
	pthread_join(t, NULL);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	for (i = 0; i < 100; i++)
		while (read(p[0], junk, sizeof(junk)) > 0)
			;
	close(p[0]);	/* later lines fail with EPIPE, harmlessly */
	signal(SIGPIPE, SIG_IGN);
	check_answers(want, ask_all());
}

static void mode_dlclose(const char *want, const char *lib)
{
	int round;

	open_all();
	for (round = 0; round < 2; round++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

		CHECK(h != NULL, "dlopen %s: %s", lib, dlerror());
		if (!h)
			return;
		query = (query_fn)dlsym(h, "efadv_query_device");
		CHECK(query != NULL, "no efadv_query_device in %s", lib);
		if (query)
			check_answers(want, ask_all());
		query = efadv_query_device;
		dlclose(h);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "", *want = argc > 2 ? argv[2] : "";
	int nocore = argc > 3 && !strcmp(argv[argc - 1], "nocore");

	if (argc == 2 && !strcmp(argv[1], "list")) {
		mode_list();
		return check_exit("test_host");
	}
	if (!strcmp(mode, "signalfd"))
		mode_signalfd(want);
	else if (!strcmp(mode, "as"))
		mode_as(want);
	else if (!strcmp(mode, "as-sweep"))
		mode_as_sweep(want, nocore);
	else if (!strcmp(mode, "as-one"))
		mode_as_one(want);
	else if (!strcmp(mode, "nproc"))
		mode_nproc(want);
	else if (!strcmp(mode, "nproc-userns")) {
		int rc = mode_nproc_userns(want, argc > 3 && strcmp(argv[3], "nocore") ? argv[3] : NULL);

		if (rc)
			return rc;
	} else if (!strcmp(mode, "guard-page"))
		mode_guard_page(want);
	else if (!strcmp(mode, "with-lib") && argc > 3)
		mode_with_lib(want, argv[3], 0);
	else if (!strcmp(mode, "with-lib-ns") && argc > 3)
		mode_with_lib(want, argv[3], 1);
	else if (!strncmp(mode, "replaced", 8) && argc > 4)
		mode_replaced(want, argv[3], argv[4], !strcmp(mode, "replaced-nocap"));
	else if (!strcmp(mode, "ctor") && argc > 3)
		mode_ctor(want, argv[3]);
	else if (!strcmp(mode, "ask")) {
		open_all();
		check_answers(want, ask_all());
	} else if (!strcmp(mode, "fork-storm"))
		mode_fork_storm(want);
	else if (!strcmp(mode, "first-signal"))
		mode_first_signal(want);
	else if (!strcmp(mode, "sigpipe"))
		mode_sigpipe(want);
	else if (!strcmp(mode, "storm"))
		mode_storm(want);
	else if (!strcmp(mode, "peer-first"))
		mode_peer_first(want);
	else if (!strcmp(mode, "cancel"))
		mode_cancel(want);
	else if (!strcmp(mode, "nested-fork"))
		mode_nested_fork(want);
	else if (!strcmp(mode, "abandon"))
		mode_abandon(want);
	else if (!strcmp(mode, "abandon-one") && argc > 3)
		mode_abandon_one(want, atol(argv[3]));
	else if (!strcmp(mode, "dlclose") && argc > 3)
		mode_dlclose(want, argv[3]);
	else {
		fprintf(stderr, "usage: %s MODE p2p|none|any [nocore]\n"
			"  MODE: ask signalfd as as-sweep nproc nproc-userns guard-page first-signal\n"
			"        peer-first sigpipe storm fork-storm nested-fork cancel abandon\n"
			"       %s dlclose|with-lib|with-lib-ns|ctor p2p|none|any LIBRARY [nocore]\n"
			"       %s replaced|replaced-nocap p2p|none|any GO_LIBRARY C_LIBRARY [nocore]\n",
			argv[0], argv[0], argv[0]);
		return 2;
	}
	if (nocore)
		CHECK(!core_mapped(), "the Go core is mapped");
	return check_exit("test_host");
}
