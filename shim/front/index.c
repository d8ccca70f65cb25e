// SPDX-License-Identifier: MIT
/*
 * The topology file's index, parsed and searched without I/O (index.h).
 * Every offset, length and count is checked against what was read before
 * it is used, so that no content of the file can make a read go astray.
 */
#include <errno.h>
#include <string.h>

#include "index.h"

#define SECTION_SIZE 16
#define FUNCTION_SIZE 16
#define NIC_NAME 32
#define NIC_SIZE (16 + NIC_NAME)
#define ATTR_SIZE 64
#define DMABUF_SIZE (56 + ATTR_SIZE)
#define PEER_SIZE (16 + ATTR_SIZE)

static const uint32_t record_size[EFAP2P_SEC_KINDS + 1] = {
	[EFAP2P_SEC_FUNCTIONS] = FUNCTION_SIZE,
	[EFAP2P_SEC_NICS] = NIC_SIZE,
	[EFAP2P_SEC_DMABUFS] = DMABUF_SIZE,
	[EFAP2P_SEC_PEERS] = PEER_SIZE,
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Copies a NUL-terminated fixed field; -1 if it has no NUL. */
static int inline_str(char *dst, const uint8_t *src, size_t len)
{
	const uint8_t *nul = memchr(src, 0, len);

	if (!nul)
		return -1;
	memcpy(dst, src, (size_t)(nul - src) + 1);
	return 0;
}

static int str_ok(const struct efap2p_index *ix, uint32_t off)
{
	return off < ix->strs_len;
}

/* An attr record's strings: its reason and kernel release. */
static int attr_ok(const struct efap2p_index *ix, const uint8_t *rec)
{
	return str_ok(ix, le32(rec + 44)) && str_ok(ix, le32(rec + 56));
}

static int parse_sections(struct efap2p_index *ix, const uint8_t *head, size_t len, uint32_t n)
{
	uint64_t end = EFAP2P_INDEX_HEADER + (uint64_t)n * SECTION_SIZE;
	uint32_t i;

	if (end > len)
		return EINVAL;
	for (i = 0; i < n; i++) {
		const uint8_t *t = head + EFAP2P_INDEX_HEADER + i * SECTION_SIZE;
		uint32_t kind = le32(t), count = le32(t + 4);
		uint64_t off = le32(t + 8), size = le32(t + 12);

		if (kind == 0 || kind > EFAP2P_SEC_KINDS || ix->present[kind] ||
		    (kind == EFAP2P_SEC_STRINGS) != (i == n - 1))
			return EINVAL;
		if (off % 8 || off < end || off + size > ix->file_size)
			return EINVAL;
		end = off + size;
		ix->present[kind] = 1;
		if (kind == EFAP2P_SEC_STRINGS) {
			if (count || !size)
				return EINVAL;
			ix->strs_off = (uint32_t)off;
			ix->strs_len = (uint32_t)size;
			continue;
		}
		if ((uint64_t)count * record_size[kind] != size)
			return EINVAL;
		ix->sec_off[kind] = (uint32_t)off;
		ix->sec_count[kind] = count;
		/* a section past what was read is attached later
		 * (efap2p_index_attach_records) */
		if (off + size <= len)
			ix->rec[kind] = head + off;
	}
	return 0;
}

static int check_dmabufs(const struct efap2p_index *ix, const uint8_t *r, uint32_t n);
static int check_peers(const struct efap2p_index *ix, const uint8_t *r, uint32_t n);

/* Checks the records of section kind, attached. */
static int check_kind(const struct efap2p_index *ix, int kind)
{
	const uint8_t *r = ix->rec[kind];
	uint32_t i, n = ix->sec_count[kind];

	switch (kind) {
	case EFAP2P_SEC_FUNCTIONS:
		for (i = 0; i < n; i++, r += FUNCTION_SIZE)
			if (i && le64(r) <= le64(r - FUNCTION_SIZE))
				return EINVAL;
		break;
	case EFAP2P_SEC_NICS:
		for (i = 0; i < n; i++, r += NIC_SIZE)
			if (!str_ok(ix, le32(r + 12)) || !memchr(r + 16, 0, NIC_NAME) ||
			    le32(r + 8) & ~(EFAP2P_INDEX_NIC_REACHES | EFAP2P_INDEX_NIC_REFUSABLE) ||
			    (i && le64(r) <= le64(r - NIC_SIZE)))
				return EINVAL;
		break;
	case EFAP2P_SEC_DMABUFS:
		return check_dmabufs(ix, r, n);
	case EFAP2P_SEC_PEERS:
		return check_peers(ix, r, n);
	}
	return 0;
}

/* Attaches the record sections whose records are in place but not yet
 * counted: all of them, or, when one fails its check, none (the caller
 * then frees what they point into). */
static int attach_kinds(struct efap2p_index *ix)
{
	int kind, bad = 0;

	for (kind = EFAP2P_SEC_FUNCTIONS; kind <= EFAP2P_SEC_PEERS; kind++)
		if (ix->rec[kind] && !ix->count[kind] && check_kind(ix, kind))
			bad = 1;
	for (kind = EFAP2P_SEC_FUNCTIONS; kind <= EFAP2P_SEC_PEERS; kind++) {
		if (!ix->rec[kind] || ix->count[kind])
			continue;
		if (bad)
			ix->rec[kind] = NULL;
		else
			ix->count[kind] = ix->sec_count[kind];
	}
	return bad ? EINVAL : 0;
}

static int check_dmabufs(const struct efap2p_index *ix, const uint8_t *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++, r += DMABUF_SIZE) {
		int32_t decision = (int32_t)le32(r + 40);

		if (!memchr(r + 8, 0, EFAP2P_INDEX_EXP_LEN) || !r[8] || decision < 0 || decision > 2 ||
		    !str_ok(ix, le32(r + 52)) || !attr_ok(ix, r + 56))
			return EINVAL;
		if (i && (le64(r) < le64(r - DMABUF_SIZE) ||
			  (le64(r) == le64(r - DMABUF_SIZE) &&
			   strcmp((const char *)r + 8, (const char *)r + 8 - DMABUF_SIZE) <= 0)))
			return EINVAL;
	}
	return 0;
}

static int check_peers(const struct efap2p_index *ix, const uint8_t *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++, r += PEER_SIZE) {
		if (!attr_ok(ix, r + 16))
			return EINVAL;
		if (i && (le64(r) < le64(r - PEER_SIZE) ||
			  (le64(r) == le64(r - PEER_SIZE) && le64(r + 8) <= le64(r + 8 - PEER_SIZE))))
			return EINVAL;
	}
	return 0;
}

size_t efap2p_index_head_len(const uint8_t *first, size_t len, uint64_t file_size)
{
	uint64_t head = file_size, table;
	uint32_t n, i;

	if (len < EFAP2P_INDEX_HEADER)
		return 0;
	n = le32(first + 28);
	table = EFAP2P_INDEX_HEADER + (uint64_t)n * SECTION_SIZE;
	if (!n || n > EFAP2P_SEC_KINDS || table > len)
		return 0;
	for (i = 0; i < n; i++) {
		const uint8_t *t = first + EFAP2P_INDEX_HEADER + i * SECTION_SIZE;
		uint32_t kind = le32(t), off = le32(t + 8);

		if ((kind == EFAP2P_SEC_DMABUFS || kind == EFAP2P_SEC_PEERS ||
		     kind == EFAP2P_SEC_STRINGS) && off < head)
			head = off;
	}
	return head < table ? 0 : (size_t)head;
}

uint64_t efap2p_index_limit(uint64_t n)
{
	uint64_t limit = (1u << 20) + n * 64 * (DMABUF_SIZE + 64) + n * n * 256;

	return limit > EFAP2P_INDEX_MIN_LIMIT ? limit : EFAP2P_INDEX_MIN_LIMIT;
}

int efap2p_index_parse(struct efap2p_index *ix, const uint8_t *head, size_t len)
{
	uint32_t n, version, known;

	memset(ix, 0, sizeof(*ix));
	if (len < EFAP2P_INDEX_HEADER || memcmp(head, EFAP2P_INDEX_MAGIC, 8) ||
	    le32(head + 12) != EFAP2P_INDEX_HEADER)
		return EINVAL;
	version = le32(head + 8);
	if (version != EFAP2P_INDEX_VERSION && version != EFAP2P_INDEX_VERSION2)
		return EINVAL;
	known = version == EFAP2P_INDEX_VERSION2 ? EFAP2P_INDEX_BOOT_BOUND
						 : EFAP2P_INDEX_BOOT_BOUND | EFAP2P_INDEX_CHECKED;
	ix->file_size = le64(head + 16);
	ix->flags = le32(head + 24);
	n = le32(head + 28);
	if (ix->file_size > UINT32_MAX || len > ix->file_size || ix->flags & ~known ||
	    ix->flags == (EFAP2P_INDEX_BOOT_BOUND | EFAP2P_INDEX_CHECKED) || !n ||
	    n > EFAP2P_SEC_KINDS)
		return EINVAL;
	ix->json_size = le64(head + 32);
	ix->json_mtime_ns = le64(head + 40);
	ix->json_ino = le64(head + 48);
	ix->json_ctime_ns = le64(head + 56);
	if (inline_str(ix->kernel, head + 64, sizeof(ix->kernel)) ||
	    inline_str(ix->boot_id, head + 136, sizeof(ix->boot_id)) ||
	    !(ix->flags & (EFAP2P_INDEX_BOOT_BOUND | EFAP2P_INDEX_CHECKED)) != !ix->boot_id[0])
		return EINVAL;
	if (version != EFAP2P_INDEX_VERSION2)
		ix->tree = le64(head + 184);
	if (parse_sections(ix, head, len, n) || attach_kinds(ix))
		return EINVAL;
	return 0;
}

int efap2p_index_attach_records(struct efap2p_index *ix, const uint8_t *buf, uint64_t off,
				size_t len)
{
	int kind;

	for (kind = EFAP2P_SEC_FUNCTIONS; kind <= EFAP2P_SEC_PEERS; kind++) {
		uint64_t s = ix->sec_off[kind], size = (uint64_t)ix->sec_count[kind] * record_size[kind];

		if (ix->rec[kind] || !ix->present[kind] || s < off || s + size > off + len)
			continue;
		ix->rec[kind] = buf + (s - off);
	}
	return attach_kinds(ix);
}

int efap2p_index_complete(const struct efap2p_index *ix)
{
	int kind;

	for (kind = EFAP2P_SEC_FUNCTIONS; kind <= EFAP2P_SEC_PEERS; kind++)
		if (ix->present[kind] && !ix->rec[kind])
			return 0;
	return 1;
}

int efap2p_index_attach(struct efap2p_index *ix, const char *strs, size_t len)
{
	if (len != ix->strs_len || !len || strs[0] || strs[len - 1])
		return EINVAL;
	ix->strs = strs;
	return 0;
}

const char *efap2p_index_str(const struct efap2p_index *ix, uint32_t off)
{
	if (!ix->strs || off >= ix->strs_len)
		return "";
	return ix->strs + off;
}

void efap2p_index_function(const struct efap2p_index *ix, uint32_t i,
			   struct efap2p_index_function *out)
{
	const uint8_t *r = ix->rec[EFAP2P_SEC_FUNCTIONS] + (size_t)i * FUNCTION_SIZE;

	out->key = le64(r);
	out->vendor = le16(r + 8);
	out->device = le16(r + 10);
}

/* Binary search over n records of size sz for the first not less than
 * the key; cmp orders a record against the key. */
static const uint8_t *search(const uint8_t *base, uint32_t n, size_t sz,
			     int (*cmp)(const uint8_t *rec, const void *key), const void *key)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cmp(base + (size_t)mid * sz, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !cmp(base + (size_t)lo * sz, key) ? base + (size_t)lo * sz : NULL;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_nic(const uint8_t *rec, const void *key)
{
	return cmp_u64(le64(rec), *(const uint64_t *)key);
}

int efap2p_index_nic_named(const struct efap2p_index *ix, const char *name, uint64_t *key)
{
	const uint8_t *r = ix->rec[EFAP2P_SEC_NICS];
	uint32_t i;

	for (i = 0; name[0] && i < ix->count[EFAP2P_SEC_NICS]; i++, r += NIC_SIZE)
		if (!strcmp((const char *)r + 16, name)) {
			*key = le64(r);
			return 0;
		}
	return ENOENT;
}

int efap2p_index_nic(const struct efap2p_index *ix, uint64_t key, struct efap2p_index_nic *out)
{
	const uint8_t *r = search(ix->rec[EFAP2P_SEC_NICS], ix->count[EFAP2P_SEC_NICS], NIC_SIZE,
				  cmp_nic, &key);

	if (!r)
		return ENOENT;
	out->key = key;
	out->flags = le32(r + 8);
	out->summary = le32(r + 12);
	return 0;
}

struct dmabuf_key {
	uint64_t nic;
	const char *exp;
};

static int cmp_dmabuf(const uint8_t *rec, const void *key)
{
	const struct dmabuf_key *k = key;
	int c = cmp_u64(le64(rec), k->nic);

	return c ? c : strcmp((const char *)rec + 8, k->exp);
}

int efap2p_index_dmabuf(const struct efap2p_index *ix, uint64_t nic, const char *exp,
			struct efap2p_index_dmabuf *out)
{
	struct dmabuf_key k = { nic, exp };
	const uint8_t *r = search(ix->rec[EFAP2P_SEC_DMABUFS], ix->count[EFAP2P_SEC_DMABUFS],
				  DMABUF_SIZE, cmp_dmabuf, &k);
	uint32_t err;

	if (!r) {
		k.nic = EFAP2P_INDEX_ANY_NIC;
		r = search(ix->rec[EFAP2P_SEC_DMABUFS], ix->count[EFAP2P_SEC_DMABUFS], DMABUF_SIZE,
			   cmp_dmabuf, &k);
	}
	if (!r)
		return ENOENT;
	err = le32(r + 44);
	out->decision = (int)(int32_t)le32(r + 40);
	out->err = err > 4095 ? EIO : (int)err;
	out->all_allowed = le32(r + 48) != 0;
	out->summary = le32(r + 52);
	out->attr = r + 56;
	return 0;
}

struct peer_key {
	uint64_t nic, peer;
};

static int cmp_peer(const uint8_t *rec, const void *key)
{
	const struct peer_key *k = key;
	int c = cmp_u64(le64(rec), k->nic);

	return c ? c : cmp_u64(le64(rec + 8), k->peer);
}

int efap2p_index_peer(const struct efap2p_index *ix, uint64_t nic, uint64_t peer,
		      const uint8_t **attr)
{
	struct peer_key k = { nic, peer };
	const uint8_t *r = search(ix->rec[EFAP2P_SEC_PEERS], ix->count[EFAP2P_SEC_PEERS], PEER_SIZE,
				  cmp_peer, &k);

	if (!r)
		return ENOENT;
	*attr = r + 16;
	return 0;
}

uint32_t efap2p_index_attr_reason(const uint8_t *rec)
{
	return le32(rec + 44);
}

void efap2p_index_attr(const struct efap2p_index *ix, const uint8_t *rec,
		       struct efadv_p2p_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->map_type = le32(rec);
	out->distance = (int32_t)le32(rec + 4);
	out->path = le32(rec + 8);
	out->outcome = le32(rec + 12);
	out->policy = le32(rec + 16);
	out->source = le32(rec + 20);
	out->bandwidth_mbs = le32(rec + 24);
	out->latency_ns = le32(rec + 28);
	out->flags = le32(rec + 32);
	out->peer_domain = le32(rec + 36);
	out->peer_bus = rec[40];
	out->peer_devfn = rec[41];
	out->reason = efap2p_index_str(ix, efap2p_index_attr_reason(rec));
	out->peer_mem_outcome = le32(rec + 48);
	out->peer_mem_provider = le32(rec + 52);
	out->kernel_release = efap2p_index_str(ix, le32(rec + 56));
}
