// SPDX-License-Identifier: MIT
/* Small helpers the front's files share. */
#include <string.h>

#include "front.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses n (1..8) hex digits; -1 if any is not one. */
static int64_t hex(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return n ? v : -1;
}

int64_t efap2p_parse_pci(const char *s, int allow_short)
{
	size_t len = strlen(s), dlen = len - 8;
	int64_t domain = 0, bus, dev, fn;

	if ((len != 7 || !allow_short) && (len < 12 || len > 16 || s[dlen] != ':'))
		return -1;
	if (len != 7) {
		domain = hex(s, dlen);
		s += dlen + 1;
	}
	if (domain < 0 || s[2] != ':' || s[5] != '.')
		return -1;
	bus = hex(s, 2);
	dev = hex(s + 3, 2);
	fn = hex(s + 6, 1);
	if (bus < 0 || dev < 0 || dev > 31 || fn < 0 || fn > 7)
		return -1;
	return domain << 16 | bus << 8 | dev << 3 | fn;
}
