// SPDX-License-Identifier: MIT
/*
 * Waiting for a test's child process with a deadline while keeping what
 * it writes to a pipe: tests that run a case in a process of their own
 * (one that may hang, crash or run out of memory) must fail, not hang the
 * suite, and must show what the child said.
 */
#ifndef EFAP2P_CTESTS_CHILD_H
#define EFAP2P_CTESTS_CHILD_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CHILD_HUNG: child_wait's answer for a child killed at its deadline. */
#define CHILD_HUNG (-1000)

static inline double child_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * child_wait reads fd, the read end of a pipe whose write end only the
 * child pid holds, into out (len bytes with the NUL at most) until the
 * child exits, or kills it after seconds. Closes fd. Returns the child's
 * exit status, -signal, or CHILD_HUNG.
 */
static inline int child_wait(pid_t pid, int fd, double seconds, char *out, size_t len)
{
	double deadline = child_now_s() + seconds;
	int st = 0, open_end = 1;
	size_t got = 0;
	pid_t done = 0;

	while (!done && child_now_s() < deadline) {
		struct pollfd pf = { fd, POLLIN, 0 };

		if (open_end && poll(&pf, 1, 10) > 0) {
			ssize_t n = read(fd, out + got, len - 1 - got);

			if (n > 0)
				got += (size_t)n;
			else
				open_end = 0; /* EOF, or no room left */
		} else if (!open_end) {
			usleep(1000);
		}
		done = waitpid(pid, &st, WNOHANG);
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	/* what it wrote since the last read: it has exited, the pipe ends */
	while (got + 1 < len) {
		ssize_t n = read(fd, out + got, len - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = 0;
	close(fd);
	if (!done)
		return CHILD_HUNG;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

#endif
