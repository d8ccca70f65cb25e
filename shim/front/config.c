// SPDX-License-Identifier: MIT
/*
 * The environment, read once on first use with secure_getenv (so that a
 * secure-execution program -- setuid, setgid, file capabilities -- sees the
 * defaults), and the log.
 *
 *   EFAP2P_MODE           enforce (default) | advise | off
 *   EFAP2P_LOG            off | error (default) | info | debug
 *   EFAP2P_TOPOLOGY       the topology file to read instead of the default
 *                         places (/run/efap2p, then /etc/efap2p)
 *   EFAP2P_TOPOLOGY_ROOT  a folder the default places are looked for in
 *                         (tests and emulated hosts)
 *   EFAP2P_KERNEL         the kernel release whose p2pdma rules decide
 *                         (default uname -r)
 *   EFAP2P_KERNEL_CONFIG  the kernel's build configuration (whether it has
 *                         PCI_P2PDMA), for the Go core
 *   EFAP2P_CORE           the Go core to load instead of the one found next
 *                         to the library
 *   SYSFS_PATH            the sysfs root, as libibverbs reads it
 *
 * The first call reads them inside a guard (guard.c), under a lock that
 * another thread waits for only the length of these few getenv calls (at
 * most a second, for one whose call a siglongjmp abandoned); a signal
 * handler calling into the library meanwhile gets the defaults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "front.h"

static struct efap2p_config config;
static _Atomic int config_ready;
/* names its holder (guard.c): a thread whose call was abandoned by a
 * siglongjmp in config_read takes it over and reads it again */
static struct efap2p_lock config_lock;
#define CONFIG_WAIT_S 1
static char sysfs_root[4096];

static void log_line(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Index of value in names (NULL-terminated), or def when unset or unknown. */
static int pick(const char *value, const char *const *names, int def, int *unknown)
{
	int i;

	if (!value || !*value)
		return def;
	for (i = 0; names[i]; i++)
		if (!strcasecmp(value, names[i]))
			return i;
	*unknown = 1;
	return def;
}

static const char *nonempty(const char *s)
{
	return (s && *s) ? s : NULL;
}

/* $SYSFS_PATH without its trailing slashes, else /sys, as libibverbs
 * picks it. */
static const char *sysfs_path(void)
{
	const char *env = nonempty(secure_getenv("SYSFS_PATH"));
	size_t n;

	if (!env || strlen(env) >= sizeof(sysfs_root))
		return "/sys";
	n = strlen(env);
	while (n > 1 && env[n - 1] == '/')
		n--;
	memcpy(sysfs_root, env, n);
	sysfs_root[n] = 0;
	return sysfs_root;
}

static void config_read(void)
{
	static const char *const modes[] = { "enforce", "advise", "off", NULL };
	static const char *const levels[] = { "off", "error", "info", "debug", NULL };
	const char *mode = secure_getenv("EFAP2P_MODE");
	const char *log = secure_getenv("EFAP2P_LOG");
	int bad_mode = 0, bad_log = 0;

	config.log_level = pick(log, levels, EFAP2P_LOG_ERROR, &bad_log);
	config.mode = pick(mode, modes, EFAP2P_MODE_ENFORCE, &bad_mode);
	config.topology = nonempty(secure_getenv("EFAP2P_TOPOLOGY"));
	config.topology_root = nonempty(secure_getenv("EFAP2P_TOPOLOGY_ROOT"));
	if (!config.topology_root)
		config.topology_root = "";
	config.core = nonempty(secure_getenv("EFAP2P_CORE"));
	config.sysfs = sysfs_path();
	config.kernel = nonempty(secure_getenv("EFAP2P_KERNEL"));
	config.kernel_config = nonempty(secure_getenv("EFAP2P_KERNEL_CONFIG"));
	/* file capabilities too: glibc's own test for secure_getenv */
	config.secure = getauxval(AT_SECURE) != 0 || getuid() != geteuid() || getgid() != getegid();
	/* efap2p_log would wait for the config: write these directly */
	if (bad_log)
		log_line(EFAP2P_LOG_ERROR, "EFAP2P_LOG=%s is not off, error, info or debug: using error", log);
	if (bad_mode && config.log_level >= EFAP2P_LOG_ERROR)
		log_line(EFAP2P_LOG_ERROR, "EFAP2P_MODE=%s is not enforce, advise or off: using enforce", mode);
}

/* What a signal handler gets that calls in while its thread reads the
 * environment. */
static const struct efap2p_config defaults = {
	.mode = EFAP2P_MODE_ENFORCE,
	.log_level = EFAP2P_LOG_ERROR,
	.topology_root = "",
	.sysfs = "/sys",
};

const struct efap2p_config *efap2p_config(void)
{
	struct efap2p_guard g;

	if (atomic_load_explicit(&config_ready, memory_order_acquire))
		return &config;
	/* every entry point reads the configuration before its first guard:
	 * a guard here is a signal handler's call interrupting config_read
	 * (or an abandoned call's, which efap2p_reentered drops) */
	if (efap2p_reentered())
		return &defaults;
	efap2p_guard_enter(&g);
	/* held by a thread whose first call was abandoned in config_read:
	 * the defaults */
	if (efap2p_lock_take_within(&config_lock, CONFIG_WAIT_S)) {
		efap2p_guard_leave(&g);
		return &defaults;
	}
	if (!atomic_load_explicit(&config_ready, memory_order_relaxed)) {
		config_read();
		atomic_store_explicit(&config_ready, 1, memory_order_release);
	}
	efap2p_lock_drop(&config_lock);
	efap2p_guard_leave(&g);
	return &config;
}

/* In the child of fork(): only this thread exists. */
void efap2p_config_atfork_child(void)
{
	efap2p_lock_atfork_child(&config_lock, efap2p_lock_mine(&config_lock));
}

/*
 * One line on stderr, "efap2p: LEVEL: ...", written with one write() so
 * that lines of concurrent threads do not mix. errno is left as it was.
 */
static void vlog_line(int level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "", "error", "info", "debug" };
	char line[2048];
	int saved = errno, n;

	n = snprintf(line, sizeof(line), "efap2p: %s: ", names[level]);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (!efap2p_guard_defer(line, (size_t)n) && write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

static void log_line(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_line(level, fmt, ap);
	va_end(ap);
}

void efap2p_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > efap2p_config()->log_level)
		return;
	va_start(ap, fmt);
	vlog_line(level, fmt, ap);
	va_end(ap);
}
