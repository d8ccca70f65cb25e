/* SPDX-License-Identifier: MIT */
/*
 * The topology file's index (FILE.idx, written by `efap2p export` beside
 * FILE): what the front answers from without loading the Go core. The
 * layout is answer/index.go's; the checks here and ReadIndex's
 * there are the same, and a Go fuzz test compares them (shim/front/indexfuzz).
 *
 * Parsing takes no I/O: the caller reads the file's head (header, section
 * table and records: everything before the strings) and, when a string is
 * first needed, the strings section, and hands each to these functions.
 */
#ifndef EFAP2P_INDEX_H
#define EFAP2P_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/efadv_p2p.h>

#define EFAP2P_INDEX_MAGIC "EFAP2PIX"
#define EFAP2P_INDEX_VERSION 3
#define EFAP2P_INDEX_VERSION2 2	/* the previous version, still read */
#define EFAP2P_INDEX_HEADER 192
/* Every index up to this is read; past it, what one for a machine of this
 * size can hold (efap2p_index_limit). Offsets are 32 bits. */
#define EFAP2P_INDEX_MIN_LIMIT (16u << 20)
#define EFAP2P_INDEX_BOOT_BOUND 1u
#define EFAP2P_INDEX_CHECKED 2u	/* checked on this machine in boot_id, on tree */
#define EFAP2P_INDEX_ANY_NIC UINT64_MAX
#define EFAP2P_INDEX_EXP_LEN 32

enum {
	EFAP2P_SEC_STRINGS = 1,
	EFAP2P_SEC_FUNCTIONS = 2,
	EFAP2P_SEC_NICS = 3,
	EFAP2P_SEC_DMABUFS = 4,
	EFAP2P_SEC_PEERS = 5,
	EFAP2P_SEC_KINDS = 5,
};

/* NIC record flags */
#define EFAP2P_INDEX_NIC_REACHES 1u
#define EFAP2P_INDEX_NIC_REFUSABLE 2u

struct efap2p_index {
	uint32_t flags;
	uint64_t file_size;
	uint64_t json_size, json_mtime_ns, json_ino, json_ctime_ns;
	char kernel[72];
	char boot_id[48];
	uint64_t tree;			/* checked: the sysfs tree's identity */
	/* records, once attached (into the head, or a buffer read later);
	 * count is 0 until then, so that lookups find nothing */
	const uint8_t *rec[EFAP2P_SEC_KINDS + 1];
	uint32_t count[EFAP2P_SEC_KINDS + 1];
	uint8_t present[EFAP2P_SEC_KINDS + 1];
	uint32_t sec_off[EFAP2P_SEC_KINDS + 1], sec_count[EFAP2P_SEC_KINDS + 1];
	uint32_t strs_off, strs_len;	/* where the strings lie in the file */
	const char *strs;		/* NULL until attached */
};

/* One function the index covers. */
struct efap2p_index_function {
	uint64_t key;
	uint16_t vendor, device;
};

/* One NIC. */
struct efap2p_index_nic {
	uint64_t key;
	uint32_t flags;		/* EFAP2P_INDEX_NIC_* */
	uint32_t summary;	/* string offset */
};

/* One (NIC, exporter) decision. */
struct efap2p_index_dmabuf {
	int decision, err, all_allowed;
	uint32_t summary;	/* string offset */
	const uint8_t *attr;	/* the attr record (efap2p_index_attr) */
};

/* The most a reader reads of an index on a machine of n PCI functions
 * (answer.IndexLimit's formula). */
uint64_t efap2p_index_limit(uint64_t n);

/*
 * The length of the head of an index of file_size bytes -- the header, the
 * section table and the records up to the first section read on demand
 * (dma-bufs, peers, strings) -- from its first len bytes (the header and
 * the table at least); 0 when they are malformed.
 */
size_t efap2p_index_head_len(const uint8_t *first, size_t len, uint64_t file_size);

/*
 * Parses head, the first len bytes of an index (at least its header and
 * section table): 0, or EINVAL when anything is out of place. The record
 * sections wholly within head are attached and checked; ix then points
 * into head, which must outlive it.
 */
int efap2p_index_parse(struct efap2p_index *ix, const uint8_t *head, size_t len);

/* Attaches and checks the record sections wholly within buf, the len
 * bytes of the index at offset off (buf must outlive ix): 0 or EINVAL. */
int efap2p_index_attach_records(struct efap2p_index *ix, const uint8_t *buf, uint64_t off,
				size_t len);

/* 1 when every record section is attached. */
int efap2p_index_complete(const struct efap2p_index *ix);

/* Attaches the strings section (strs_len bytes read at strs_off): 0 or
 * EINVAL. */
int efap2p_index_attach(struct efap2p_index *ix, const char *strs, size_t len);

/* A string of the attached strings ("" before they are attached). */
const char *efap2p_index_str(const struct efap2p_index *ix, uint32_t off);

/* The i-th covered function. */
void efap2p_index_function(const struct efap2p_index *ix, uint32_t i,
			   struct efap2p_index_function *out);

/* The key of the NIC recorded under the RDMA device name (a boot-bound
 * index: this boot's names); ENOENT if none. */
int efap2p_index_nic_named(const struct efap2p_index *ix, const char *name, uint64_t *key);

/* Lookups: 0 and *out, or ENOENT when the index does not cover it. */
int efap2p_index_nic(const struct efap2p_index *ix, uint64_t key, struct efap2p_index_nic *out);
int efap2p_index_dmabuf(const struct efap2p_index *ix, uint64_t nic, const char *exp,
			struct efap2p_index_dmabuf *out);
int efap2p_index_peer(const struct efap2p_index *ix, uint64_t nic, uint64_t peer,
		      const uint8_t **attr);

/* Fills out from an attr record, its reason from the attached strings. */
void efap2p_index_attr(const struct efap2p_index *ix, const uint8_t *rec,
		       struct efadv_p2p_attr *out);

/* The reason offset of an attr record. */
uint32_t efap2p_index_attr_reason(const uint8_t *rec);

#endif /* EFAP2P_INDEX_H */
