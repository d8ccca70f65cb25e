// SPDX-License-Identifier: MIT
/*
 * A stand-in for the Go core (EFAP2P_CORE=libforkcore.so) whose
 * constructor forks, as code run inside the core's load can (a host's
 * handler of a fault, an interposed function): the fork comes from inside
 * the front's loader section, on the thread that holds it, and must not
 * wait for itself. The child exits at once; the parent goes on. Every NIC
 * reaches an accelerator, every other question answers ENOENT.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efap2p_core.h"

#define EXPORT __attribute__((visibility("default")))

static int forked_ok;

__attribute__((constructor)) static void fork_inside_load(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	forked_ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
}

EXPORT int efap2p_core_abi(void)
{
	return EFAP2P_CORE_ABI;
}

EXPORT int efap2p_core_init(const struct efap2p_core_config *cfg)
{
	(void)cfg;
	return 0;
}

EXPORT int efap2p_core_nic(const char *ibdev, struct efap2p_core_nic *out)
{
	(void)ibdev;
	out->reaches = forked_ok;
	out->summary = "";
	return 0;
}

EXPORT int efap2p_core_dmabuf(const char *ibdev, const char *exp_name, struct efap2p_core_dmabuf *out)
{
	(void)ibdev;
	(void)exp_name;
	memset(out, 0, sizeof(*out));
	out->decision = EFAP2P_DMABUF_PASS;
	out->err = ENOENT;
	out->summary = "";
	return 0;
}

EXPORT int efap2p_core_refusable(const char *ibdev, int *out)
{
	(void)ibdev;
	*out = 0;
	return 0;
}

EXPORT int efap2p_core_peer(const char *ibdev, uint32_t domain, uint32_t bus, uint32_t devfn,
			    struct efadv_p2p_attr *out)
{
	(void)ibdev;
	(void)domain;
	(void)bus;
	(void)devfn;
	(void)out;
	return ENOENT;
}
