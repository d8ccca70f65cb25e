// SPDX-License-Identifier: MIT
/*
 * One write() call's buffers, as the ib_uverbs core and the efa driver
 * read and write them: the core request (shorter is zero-extended, longer
 * must end in zeros), the core response (what fits, the rest the user gave
 * zeroed), and the driver's udata.
 */
#include "commands.h"

#include <errno.h>
#include <string.h>

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* uverbs_request: the user's struct may be shorter (zero-extended) or
 * longer (the excess must be zero). */
int efasim_w_request(struct efasim_wcall *c, void *req, size_t len)
{
	int rc = efasim_copy_in(req, c->in, min_sz(c->inlen, len));

	if (rc)
		return rc;
	if (c->inlen < len) {
		memset((char *)req + c->inlen, 0, len - c->inlen);
	} else if (c->inlen > len) {
		rc = efasim_user_is_zero(c->in + len, c->inlen - len);
		if (rc != 1)
			return rc < 0 ? rc : -EOPNOTSUPP;
	}
	return 0;
}

/* uverbs_response: copy what fits, zero the rest the user provided. */
int efasim_w_response(struct efasim_wcall *c, const void *resp, size_t len)
{
	int rc = efasim_copy_out(c->out, resp, min_sz(c->outlen, len));

	if (rc)
		return rc;
	if (len < c->outlen)
		return efasim_clear_out(c->out + len, c->outlen - len);
	return 0;
}

int efasim_udata_out(struct efasim_wcall *c, const void *resp, size_t len)
{
	return efasim_copy_out(c->uout, resp, min_sz(len, c->uoutlen));
}

/* The efa driver refuses udata input it does not know (non-zero bytes). */
int efasim_udata_in_cleared(struct efasim_wcall *c)
{
	int rc;

	if (!c->uinlen)
		return 0;
	rc = efasim_user_is_zero(c->uin, c->uinlen);
	return rc == 1 ? 0 : rc < 0 ? rc : -EINVAL;
}
