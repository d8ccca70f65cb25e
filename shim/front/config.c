// SPDX-License-Identifier: MIT
/*
 * The environment, read once on first use with secure_getenv (so a setuid
 * or setgid program sees the defaults), and the log.
 *
 *   EFAP2P_MODE      enforce (default) | advise | off
 *   EFAP2P_LOG       off | error (default) | info | debug
 *   EFAP2P_TOPOLOGY  a topology file written by `efap2p export`
 *   EFAP2P_KERNEL    the kernel release whose p2pdma rules decide (default uname -r)
 *   EFAP2P_CORE      the Go core to load instead of the one found next to
 *                    the library
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

static struct efap2p_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

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
	config.core = nonempty(secure_getenv("EFAP2P_CORE"));
	config.kernel = nonempty(secure_getenv("EFAP2P_KERNEL"));
	/* efap2p_log would wait on config_once: write these directly */
	if (bad_log)
		log_line(EFAP2P_LOG_ERROR, "EFAP2P_LOG=%s is not off, error, info or debug: using error", log);
	if (bad_mode && config.log_level >= EFAP2P_LOG_ERROR)
		log_line(EFAP2P_LOG_ERROR, "EFAP2P_MODE=%s is not enforce, advise or off: using enforce", mode);
}

const struct efap2p_config *efap2p_config(void)
{
	pthread_once(&config_once, config_read);
	return &config;
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
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
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
