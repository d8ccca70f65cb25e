// SPDX-License-Identifier: MIT
/*
 * The emulator's calls must not wait for the dynamic loader's lock: a
 * process whose library constructor uses an emulated device (loader_ctor.c)
 * while dlopen holds the lock, from another thread or from a signal handler
 * on another thread, must get its answers, not hang for ever.
 *
 *     test_loader thread|front|signal LIBRARY [SECONDS]
 *
 * run inside `efap2p sim` (front: with libefap2p.so preloaded). The test
 * runs in a child process that dlopens LIBRARY; the parent kills it after
 * SECONDS (30) and fails, saying it deadlocked. Every interposed call of
 * the child is its first: nothing before dlopen calls one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "loader_test.h"

static sem_t handled;
static char handler_why[512];
static int handler_rc;

static void on_usr1(int sig)
{
	(void)sig;
	handler_rc = loader_test_calls(handler_why, sizeof(handler_why));
	sem_post(&handled);
}

static void *waiter(void *arg)
{
	sigset_t usr1;

	(void)arg;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	for (;;)
		pause();
	return NULL;
}

int loader_test_signal(char *why, size_t len)
{
	if (kill(getpid(), SIGUSR1))
		return errno;
	while (sem_wait(&handled))
		if (errno != EINTR)
			return errno;
	if (handler_rc)
		snprintf(why, len, "in the signal handler: %s", handler_why);
	return 0;
}

/* Only the waiter thread takes SIGUSR1: its handler runs while this
 * thread, in dlopen, holds the loader's lock. */
static int start_waiter(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t usr1;
	pthread_t t;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sem_init(&handled, 0, 0) || pthread_sigmask(SIG_BLOCK, &usr1, NULL))
		return errno;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return errno;
	return pthread_create(&t, NULL, waiter, NULL);
}

static int child(const char *mode, const char *lib)
{
	const char *(*result)(void);
	const char *why;
	void *h;
	int rc;

	if (!strcmp(mode, "signal") && (rc = start_waiter())) {
		printf("FAIL %s: cannot start the waiter thread: %s\n", mode, strerror(rc));
		return 1;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL %s: dlopen: %s\n", mode, dlerror());
		return 1;
	}
	result = (const char *(*)(void))dlsym(h, "loader_ctor_result");
	why = result ? result() : "loader_ctor_result not found";
	if (why[0]) {
		printf("FAIL %s: %s\n", mode, why);
		return 1;
	}
	printf("ok %s: the constructor's calls returned under the loader's lock\n", mode);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int seconds = argc > 3 ? atoi(argv[3]) : 30, status, waited;
	pid_t pid, r;

	if (argc < 3) {
		fprintf(stderr, "usage: test_loader thread|front|signal LIBRARY [SECONDS]\n");
		return 2;
	}
	if (setenv("LOADER_TEST_MODE", argv[1], 1))
		return 2;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		status = child(argv[1], argv[2]);
		fflush(stdout);
		_exit(status);
	}
	for (waited = 0; waited < seconds * 100; waited++) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		nanosleep(&tick, NULL);
	}
	if (waited == seconds * 100) {
		/* a process waiting for the loader's lock ignores SIGTERM's
		 * intent: it never returns to run a handler */
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		printf("FAIL %s: deadlocked: the constructor's calls did not return in %d s\n",
		       argv[1], seconds);
		return 1;
	}
	if (!WIFEXITED(status)) {
		printf("FAIL %s: the child died of signal %d\n", argv[1], WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}
