// SPDX-License-Identifier: MIT
/*
 * Which exporter a dma-buf descriptor comes from, found through libc (so
 * that an interposer, such as the EFA host emulator, sees every step):
 * fstatfs() reports DMA_BUF_MAGIC, and /proc/self/fdinfo/<fd> names the
 * exporter (exp_name). Once a buffer is known, one fstat() finds it again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "front.h"

#define DMA_BUF_MAGIC 0x444d4142u

/* Reads fd's fdinfo text into buf (NUL-terminated); 0 or an errno. */
static int read_fdinfo(int fd, char *buf, size_t len)
{
	char path[64];
	size_t got = 0;
	ssize_t n;
	int info;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	info = open(path, O_RDONLY | O_CLOEXEC);
	if (info < 0)
		return errno;
	while (got < len - 1 && (n = read(info, buf + got, len - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = errno;
			close(info);
			return (int)n;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	close(info);
	return 0;
}

/* The value of the "exp_name:" line of fdinfo text, into name. */
static int parse_exp_name(const char *text, char *name, size_t len)
{
	const char *p = text, *end;
	size_t n;

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "exp_name:", 9))
			continue;
		p += 9;
		p += strspn(p, " \t");
		end = p + strcspn(p, "\n");
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		n = (size_t)(end - p);
		if (!n || n >= len)
			return EIO;
		memcpy(name, p, n);
		name[n] = 0;
		return 0;
	}
	return EIO;
}

/*
 * Identifies the dma-buf fd: 0 and *id, or an errno: fstat's (EBADF for a
 * closed descriptor), EINVAL when fd is not a dma-buf, EIO when its
 * exporter cannot be read (or is one too many to remember).
 */
int efap2p_dmabuf_identify(int fd, struct efap2p_dmabuf_id *id)
{
	char text[2048], name[IBV_SYSFS_NAME_MAX];
	struct efap2p_guard g;
	struct statfs sf;
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		return errno;
	id->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	id->exp = efap2p_fd_find(st.st_dev, st.st_ino);
	if (id->exp >= 0)
		return 0;
	if (fstatfs(fd, &sf))
		return errno;
	if ((uint32_t)sf.f_type != DMA_BUF_MAGIC)
		return EINVAL;
	rc = read_fdinfo(fd, text, sizeof(text));
	if (!rc)
		rc = parse_exp_name(text, name, sizeof(name));
	if (rc)
		return EIO;
	efap2p_guard_enter(&g);
	id->exp = efap2p_exp_index(name);
	if (id->exp >= 0)
		efap2p_fd_add(st.st_dev, st.st_ino, id->exp);
	efap2p_guard_leave(&g);
	return id->exp < 0 ? EIO : 0;
}

/* The decision from the topology file's index; 0, or ENOENT when it has
 * none for the pair. */
static int from_index(struct ibv_device *device, int dev, int exp, struct efap2p_pair *p)
{
	const struct efap2p_index *ix = efap2p_precomp();
	struct efap2p_index_dmabuf d;
	uint64_t key;

	if (!ix || efap2p_dev_key(dev, device, &key) || efap2p_precomp_records() ||
	    efap2p_index_dmabuf(ix, key, efap2p_exp_name(exp), &d))
		return ENOENT;
	p->core.decision = d.decision;
	p->core.err = d.err;
	p->core.all_allowed = d.all_allowed;
	efap2p_index_attr(ix, d.attr, &p->core.best);
	p->index_attr = d.attr;
	p->index_summary = d.summary;
	return 0;
}

/*
 * The registration decision for (dev, exp): cached, or worked out -- from
 * the topology file's index, else by the core -- and cached (in tmp when
 * the table is full). NULL with *err when neither can answer: ECHILD in a
 * forked child, ELIBACC without a core. Called inside the guard g.
 */
struct efap2p_pair *efap2p_pair_get(const struct efap2p_guard *g, struct ibv_device *device,
				    int dev, int exp, struct efap2p_pair *tmp, int *err)
{
	struct efap2p_pair *p = efap2p_pair_find(dev, exp);
	int rc;

	if (p)
		return p;
	memset(tmp, 0, sizeof(*tmp));
	tmp->dev = dev;
	tmp->exp = exp;
	if (from_index(device, dev, exp, tmp)) {
		rc = efap2p_core_dmabuf(g, efap2p_dev_name(dev), efap2p_exp_name(exp), &tmp->core);
		if (rc) {
			*err = rc;
			return NULL;
		}
	}
	p = efap2p_pair_add(tmp);
	return p ? p : tmp;
}

const char *efap2p_pair_summary(const struct efap2p_pair *p)
{
	const struct efap2p_index *ix = efap2p_precomp();

	if (!p->index_attr)
		return p->core.summary ? p->core.summary : "";
	if (efap2p_precomp_strings())
		return "the reason cannot be read from the topology file's index; 'efap2p explain' tells it";
	return efap2p_index_str(ix, p->index_summary);
}

void efap2p_pair_best(const struct efap2p_pair *p, struct efadv_p2p_attr *out)
{
	if (!p->index_attr) {
		*out = p->core.best;
		return;
	}
	efap2p_precomp_strings();
	efap2p_index_attr(efap2p_precomp(), p->index_attr, out);
}
