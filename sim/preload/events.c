// SPDX-License-Identifier: MIT
/*
 * The uverbs event files: a completion channel (CREATE_COMP_CHANNEL) and a
 * context's async descriptor (GET_CONTEXT), as ib_uverbs' event queues
 * behave: read() returns one event at a time (8 bytes, the CQ's user
 * handle, on a channel; 16, element and event type, on the async file),
 * blocks until there is one unless O_NONBLOCK (EAGAIN), and is EINVAL for
 * a buffer smaller than an event; poll, select and epoll see the file
 * readable while an event waits. An event is counted for its CQ when it is
 * read (DESTROY_CQ reports the counts, which libibverbs waits for), and the
 * events of a CQ that is destroyed are dropped.
 *
 * The descriptor the program holds is one end of a socket pair: the other
 * end, kept by the emulator, holds one byte while the queue is not empty,
 * so that readiness is the kernel's own and the file can be waited on like
 * any other. The queue itself is here, under the global lock.
 */
#include "objects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

struct evq_event {
	uint64_t data[2];
	const void *owner; /* the CQ it is about (dropped with it), or NULL */
	uint32_t *counter; /* counted here when read */
	struct evq_event *next;
};

struct efasim_evq {
	struct efasim_file file;
	int wfd;     /* our end of the pair */
	size_t size; /* of one event: 8 on a channel, 16 on the async file */
	struct evq_event *head, *tail;
};

static struct efasim_evq *evq_of(struct efasim_file *f)
{
	return (struct efasim_evq *)((char *)f - offsetof(struct efasim_evq, file));
}

/* The byte on our end tells the program's end whether events wait. */
static void level(struct efasim_evq *q, int fd, bool was_empty)
{
	char b = 0;

	if (was_empty && q->head)
		syscall(SYS_sendto, q->wfd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
	else if (!was_empty && !q->head && fd >= 0)
		syscall(SYS_recvfrom, fd, &b, 1, MSG_DONTWAIT, NULL, 0);
}

/* The descriptor of the program's end that the byte is read from: the one
 * being read, or any that still refers to the file. */
static int program_end(struct efasim_evq *q)
{
	return efasim_fd_of_locked(&q->file);
}

static ssize_t evq_read(struct efasim_file *f, int fd, void *buf, size_t count)
{
	struct efasim_evq *q = evq_of(f);
	struct evq_event *e = q->head;
	int rc;

	if (!e)
		return -EAGAIN;
	if (count < q->size)
		return -EINVAL;
	q->head = e->next;
	if (!q->head)
		q->tail = NULL;
	if (e->counter)
		(*e->counter)++;
	level(q, fd, false);
	rc = efasim_copy_out((uintptr_t)buf, e->data, q->size);
	free(e);
	return rc ? rc : (ssize_t)q->size;
}

static void evq_release(struct efasim_file *f)
{
	struct efasim_evq *q = evq_of(f);

	while (q->head) {
		struct evq_event *e = q->head;

		q->head = e->next;
		free(e);
	}
	efasim_sys_close(q->wfd);
	free(q);
}

static const struct efasim_file_ops channel_ops = {
	.kind = EFASIM_CHANNEL,
	.name = "completion channel",
	.read = evq_read,
	.release = evq_release,
};

static const struct efasim_file_ops async_ops = {
	.kind = EFASIM_ASYNC,
	.name = "async events",
	.read = evq_read,
	.release = evq_release,
};

int efasim_evq_create_locked(bool async, struct efasim_file **out)
{
	struct efasim_evq *q = calloc(1, sizeof(*q));
	int sv[2], rc;

	if (!q)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		rc = -errno;
		free(q);
		return rc;
	}
	q->wfd = sv[1];
	q->size = async ? 16 : 8;
	rc = efasim_file_init(&q->file, async ? &async_ops : &channel_ops, sv[0]);
	if (!rc)
		rc = efasim_fd_insert_locked(sv[0], &q->file);
	if (rc) {
		efasim_sys_close(sv[0]);
		efasim_sys_close(sv[1]);
		free(q);
		return rc;
	}
	*out = &q->file;
	return sv[0];
}

int efasim_evq_push_locked(struct efasim_file *f, uint64_t d0, uint64_t d1, const void *owner,
			   uint32_t *counter)
{
	struct efasim_evq *q = evq_of(f);
	struct evq_event *e = calloc(1, sizeof(*e));
	bool empty = !q->head;

	if (!e)
		return -ENOMEM;
	e->data[0] = d0;
	e->data[1] = d1;
	e->owner = owner;
	e->counter = counter;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	level(q, -1, empty);
	return 0;
}

void efasim_evq_drop_locked(struct efasim_file *f, const void *owner)
{
	struct efasim_evq *q = evq_of(f);
	struct evq_event **p = &q->head, *last = NULL;
	bool had = q->head != NULL;

	while (*p) {
		struct evq_event *e = *p;

		if (e->owner == owner) {
			*p = e->next;
			free(e);
			continue;
		}
		last = e;
		p = &e->next;
	}
	q->tail = last;
	if (had && !q->head)
		level(q, program_end(q), false);
}

bool efasim_evq_pending_locked(struct efasim_file *f)
{
	return evq_of(f)->head != NULL;
}
