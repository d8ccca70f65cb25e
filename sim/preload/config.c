// SPDX-License-Identifier: MIT
/*
 * The emulated machine: efasim.conf, written by `efap2p sim write` next to
 * the fake sysfs tree (format in sim/tree.go, EmulatorConfig).
 *
 *	efasim 1
 *	function <pci> <vendor> <device> <class> <driver|->
 *	device <uverbsN> <ibdev> <pci> key=value ...
 *	verdict <nic-pci> <owner-pci> p2p|bounced|refused
 *	fabric <directory>
 *	kernel <release>
 *	efa_driver <release> in-tree|out-of-tree <version>
 *	sysfs <subtree of /sys the tree answers for, e.g. class/infiniband>
 *
 * Lines of unknown kinds and unknown keys are ignored (newer writers may add
 * them). The file is read once, on first use, with raw system calls so that
 * loading never re-enters the interposed libc functions.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* efap2p sim writes a verdict line for every pair of the model's functions
 * that could meet in a registration: about 47 MB for a synthetic machine of
 * 4,096 functions (efap2p sim --machine synthetic-4096). */
#define CONFIG_MAX_BYTES (256u << 20)

static struct efasim_config *the_config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/*
 * "DDDD:BB:dd.f" or "BB:dd.f". The domain may be wider than 16 bits (a VMD
 * domain is 10000 and up, as sysfs names it): up to 8 hex digits.
 */
int efasim_pci_normalize(const char *in, char out[EFASIM_PCI_LEN])
{
	unsigned int dom = 0, bus, dev, fn;
	const char *colon;
	char tail;

	if (!in)
		return -EINVAL;
	colon = strchr(in, ':');
	if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
		dom = 0;
		if (sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
			return -EINVAL;
	} else if (!colon || colon - in > 8) {
		return -EINVAL;
	}
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(out, EFASIM_PCI_LEN, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

static char *next_token(char **s)
{
	char *p = *s, *tok;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	tok = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	if (*p)
		*p++ = '\0';
	*s = p;
	return tok;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 0);
	return (errno || end == v || *end) ? -EINVAL : 0;
}

/* "0000:0000:4f00:0001" (the sysfs node_guid form) */
static int parse_guid(const char *v, uint64_t *out)
{
	uint64_t g = 0;
	int digits = 0;

	for (; *v; v++) {
		if (*v == ':')
			continue;
		if (!isxdigit((unsigned char)*v) || ++digits > 16)
			return -EINVAL;
		g = g << 4 | (uint64_t)(isdigit((unsigned char)*v) ? *v - '0' : (tolower((unsigned char)*v) - 'a' + 10));
	}
	*out = g;
	return digits == 16 ? 0 : -EINVAL;
}

/* "a.b.c.d": the efa driver's firmware version, one byte each, major first
 * in the lowest byte (libefa prints the bytes in memory order). */
static int parse_fw(const char *v, uint64_t *out)
{
	unsigned int b[4];
	char tail;

	if (sscanf(v, "%u.%u.%u.%u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4)
		return -EINVAL;
	if (b[0] > 255 || b[1] > 255 || b[2] > 255 || b[3] > 255)
		return -EINVAL;
	*out = b[0] | b[1] << 8 | b[2] << 16 | (uint64_t)b[3] << 24;
	return 0;
}

#define U32(f) { #f, offsetof(struct efasim_dev, f), 4 }
#define U64(f) { #f, offsetof(struct efasim_dev, f), 8 }

static const struct dev_key {
	const char *name;
	size_t off;
	int size;
} dev_keys[] = {
	U32(vendor_id), U32(vendor_part_id), U32(hw_ver), U64(max_mr_size),
	U64(page_size_cap), U32(max_qp), U32(max_cq), U32(max_cqe), U32(max_mr),
	U32(max_pd), U32(max_ah), U32(max_sq_wr), U32(max_rq_wr),
	U32(max_sq_sge), U32(max_rq_sge), U32(max_wr_rdma_sge),
	U32(max_rdma_size), U32(inline_buf_size), U32(max_llq_size),
	U32(sub_cqs_per_cq), U32(max_tx_batch), U32(min_sq_wr), U32(device_caps),
	U32(port_mtu), U32(max_msg_sz), U32(num_comp_vectors),
};

/* "fe80:0000:0000:0000:0000:0000:0300:0001": eight groups of four hex
 * digits, as sysfs writes a GID; stored in network order. */
static int parse_gid(const char *v, uint8_t out[16])
{
	unsigned int i, g;

	if (strlen(v) != 39)
		return -EINVAL;
	for (i = 0; i < 39; i++)
		if (i % 5 == 4 ? v[i] != ':' : !isxdigit((unsigned char)v[i]))
			return -EINVAL;
	for (i = 0; i < 8; i++) {
		if (sscanf(v + 5 * i, "%4x", &g) != 1)
			return -EINVAL;
		out[2 * i] = (uint8_t)(g >> 8);
		out[2 * i + 1] = (uint8_t)g;
	}
	return 0;
}

static int set_dev_key(struct efasim_dev *d, const char *k, const char *v)
{
	uint64_t n;
	size_t i;

	if (!strcmp(k, "gid"))
		return parse_gid(v, d->gid);
	if (!strcmp(k, "fw_ver"))
		return parse_fw(v, &d->fw_ver);
	if (!strcmp(k, "node_guid"))
		return parse_guid(v, &d->node_guid);
	if (!strcmp(k, "peer_blocked") || !strcmp(k, "numa_node")) {
		long x;
		char *end;

		x = strtol(v, &end, 10);
		if (end == v || *end)
			return -EINVAL;
		if (k[0] == 'p')
			d->peer_blocked = x != 0;
		else
			d->numa_node = (int)x;
		return 0;
	}
	for (i = 0; i < sizeof(dev_keys) / sizeof(dev_keys[0]); i++) {
		if (strcmp(k, dev_keys[i].name))
			continue;
		if (parse_u64(v, &n))
			return -EINVAL;
		if (dev_keys[i].size == 4) {
			if (n > UINT32_MAX)
				return -EINVAL;
			*(uint32_t *)((char *)d + dev_keys[i].off) = (uint32_t)n;
		} else {
			*(uint64_t *)((char *)d + dev_keys[i].off) = n;
		}
		return 0;
	}
	return 0; /* unknown keys: a newer writer */
}

static void *grow(void *arr, size_t n, size_t elem)
{
	/* n is the count before the append; capacity doubles at powers of 2 */
	if (n & (n - 1))
		return arr;
	return realloc(arr, (n ? n * 2 : 1) * elem);
}

static int add_function(struct efasim_config *c, char *rest)
{
	char *pci = next_token(&rest), *drv;
	struct efasim_fn *fn;
	void *arr;
	int i;

	for (i = 0; i < 3; i++)
		if (!next_token(&rest))
			return -EINVAL;
	drv = next_token(&rest);
	if (!pci || !drv)
		return -EINVAL;
	arr = grow(c->fns, c->nfns, sizeof(*fn));
	if (!arr)
		return -ENOMEM;
	c->fns = arr;
	fn = &c->fns[c->nfns];
	memset(fn, 0, sizeof(*fn));
	if (efasim_pci_normalize(pci, fn->pci))
		return -EINVAL;
	if (strcmp(drv, "-"))
		snprintf(fn->driver, sizeof(fn->driver), "%s", drv);
	c->nfns++;
	return 0;
}

/* Without a gid key: fe80::<domain>:<bus><devfn>:1, the model's default. */
static void default_gid(struct efasim_dev *d)
{
	unsigned int dom = 0, bus = 0, dev = 0, fn = 0;

	sscanf(d->pci, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
	memset(d->gid, 0, sizeof(d->gid));
	d->gid[0] = 0xfe;
	d->gid[1] = 0x80;
	d->gid[10] = (uint8_t)(dom >> 8);
	d->gid[11] = (uint8_t)dom;
	d->gid[12] = (uint8_t)bus;
	d->gid[13] = (uint8_t)(dev << 3 | fn);
	d->gid[15] = 1;
}

static int add_device(struct efasim_config *c, char *rest)
{
	char *uv = next_token(&rest), *ibdev = next_token(&rest), *pci = next_token(&rest);
	struct efasim_dev *d;
	char *kv, *eq;
	void *arr;
	int idx;
	char tail;

	if (!uv || !ibdev || !pci || sscanf(uv, "uverbs%d%c", &idx, &tail) != 1 || idx < 0)
		return -EINVAL;
	if (efasim_dev_by_index(c, idx))
		return -EEXIST;
	arr = grow(c->devs, c->ndevs, sizeof(*d));
	if (!arr)
		return -ENOMEM;
	c->devs = arr;
	d = &c->devs[c->ndevs];
	memset(d, 0, sizeof(*d));
	d->index = idx;
	d->num_comp_vectors = 1;
	d->port_mtu = 4096;
	d->next_key = 1;
	snprintf(d->ibdev, sizeof(d->ibdev), "%s", ibdev);
	if (efasim_pci_normalize(pci, d->pci))
		return -EINVAL;
	default_gid(d);
	while ((kv = next_token(&rest))) {
		eq = strchr(kv, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (set_dev_key(d, kv, eq + 1))
			return -EINVAL;
	}
	c->ndevs++;
	return 0;
}

static int add_verdict(struct efasim_config *c, char *rest)
{
	char *nic = next_token(&rest), *owner = next_token(&rest), *out = next_token(&rest);
	struct efasim_verdict *v;
	void *arr;

	if (!nic || !owner || !out)
		return -EINVAL;
	arr = grow(c->verdicts, c->nverdicts, sizeof(*v));
	if (!arr)
		return -ENOMEM;
	c->verdicts = arr;
	v = &c->verdicts[c->nverdicts];
	if (efasim_pci_normalize(nic, v->nic) || efasim_pci_normalize(owner, v->owner))
		return -EINVAL;
	if (!strcmp(out, "p2p"))
		v->outcome = EFASIM_P2P;
	else if (!strcmp(out, "bounced"))
		v->outcome = EFASIM_BOUNCED;
	else if (!strcmp(out, "refused"))
		v->outcome = EFASIM_REFUSED;
	else
		return -EINVAL;
	c->nverdicts++;
	return 0;
}

/* "fabric <directory>": the rest of the line, an absolute path. */
static int set_fabric(struct efasim_config *c, char *rest)
{
	size_t n;

	while (*rest == ' ' || *rest == '\t')
		rest++;
	n = strlen(rest);
	while (n && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
		rest[--n] = '\0';
	if (rest[0] != '/' || n >= sizeof(c->fabric))
		return -EINVAL;
	memcpy(c->fabric, rest, n + 1);
	return 0;
}

/* "sysfs class/infiniband": a relative path of plain components */
static int add_sysfs(struct efasim_config *c, char *rest)
{
	char *rel = next_token(&rest), *p;
	void *arr;

	if (!rel || rel[0] == '/' || strlen(rel) >= EFASIM_SYSFS_LEN || strstr(rel, ".."))
		return -EINVAL;
	for (p = rel; *p; p++)
		if (*p == '/' && (p[1] == '/' || p[1] == '\0'))
			return -EINVAL;
	arr = grow(c->sysfs, c->nsysfs, sizeof(*c->sysfs));
	if (!arr)
		return -ENOMEM;
	c->sysfs = arr;
	memcpy(c->sysfs[c->nsysfs++], rel, strlen(rel) + 1);
	return 0;
}

/*
 * "kernel <release>": the model's kernel release, as uname -r names it
 * ("6.8.0-1021-aws"): major.minor count. A name without numbers ("latest",
 * "p2p-hmat") is the newest release the emulator knows.
 */
static int parse_release(const char *name, uint32_t *out)
{
	unsigned long major, minor = 0;
	char *end;

	if (!isdigit((unsigned char)name[0])) {
		*out = UINT32_MAX;
		return 0;
	}
	major = strtoul(name, &end, 10);
	if (*end == '.')
		minor = strtoul(end + 1, &end, 10);
	if (major > 255 || minor > 255)
		return -EINVAL;
	*out = (uint32_t)(major << 16 | minor << 8);
	return 0;
}

static int set_kernel(struct efasim_config *c, char *rest)
{
	char *name = next_token(&rest);

	if (!name || strlen(name) >= sizeof(c->kernel_name))
		return -EINVAL;
	snprintf(c->kernel_name, sizeof(c->kernel_name), "%s", name);
	return parse_release(name, &c->kernel);
}

/* "efa_driver <release> <what>": the upstream release whose efa driver
 * answers as the model's does, then what it is ("in-tree", "out-of-tree
 * 2.17.3g"), kept for the trace. */
static int set_efa_driver(struct efasim_config *c, char *rest)
{
	char *rel = next_token(&rest);
	size_t n;

	if (!rel)
		return -EINVAL;
	while (*rest == ' ' || *rest == '\t')
		rest++;
	n = strlen(rest);
	snprintf(c->efa_driver_name, sizeof(c->efa_driver_name), "%.*s", (int)n, rest);
	return parse_release(rel, &c->efa_driver);
}

bool efasim_kernel_at_least(const struct efasim_config *c, unsigned int major, unsigned int minor)
{
	return c->kernel >= (uint32_t)(major << 16 | minor << 8);
}

bool efasim_efa_at_least(const struct efasim_config *c, unsigned int major, unsigned int minor)
{
	uint32_t rel = c->efa_driver ? c->efa_driver : c->kernel;

	return rel >= (uint32_t)(major << 16 | minor << 8);
}

static int parse_line(struct efasim_config *c, char *line, bool *seen_header)
{
	char *kw = next_token(&line);

	if (!kw || kw[0] == '#')
		return 0;
	if (!*seen_header) {
		char *ver = next_token(&line);

		if (strcmp(kw, "efasim") || !ver || strcmp(ver, "1"))
			return -EPROTO;
		*seen_header = true;
		return 0;
	}
	if (!strcmp(kw, "function"))
		return add_function(c, line);
	if (!strcmp(kw, "device"))
		return add_device(c, line);
	if (!strcmp(kw, "verdict"))
		return add_verdict(c, line);
	if (!strcmp(kw, "fabric"))
		return set_fabric(c, line);
	if (!strcmp(kw, "sysfs"))
		return add_sysfs(c, line);
	if (!strcmp(kw, "kernel"))
		return set_kernel(c, line);
	if (!strcmp(kw, "efa_driver"))
		return set_efa_driver(c, line);
	return 0;
}

int efasim_config_parse(struct efasim_config *c, char *text, char *err, size_t errlen)
{
	bool seen_header = false;
	int lineno = 0, rc;
	char *line, *save = NULL;

	c->kernel = UINT32_MAX; /* until a kernel line says otherwise */

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);

		lineno++;
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		rc = parse_line(c, line, &seen_header);
		if (rc) {
			snprintf(err, errlen, "line %d: %s", lineno,
				 rc == -EPROTO ? "not an efasim 1 file" : "malformed");
			return rc;
		}
	}
	if (!seen_header) {
		snprintf(err, errlen, "empty file");
		return -EPROTO;
	}
	return 0;
}

static int config_path(char *out, size_t len)
{
	const char *p = secure_getenv("EFASIM_CONFIG");
	int n;

	if (p && *p)
		n = snprintf(out, len, "%s", p);
	else if ((p = secure_getenv("SYSFS_PATH")) && *p)
		n = snprintf(out, len, "%s/efasim.conf", p);
	else
		return -ENOENT;
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

/* Reads a whole file with raw system calls; NUL-terminated. */
static char *read_file_raw(const char *path, int *err)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	size_t cap = 8192, len = 0;
	char *buf = NULL, *nb;
	ssize_t n;

	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	for (;;) {
		if (len + 1 >= cap || !buf) {
			cap = buf ? cap * 2 : cap;
			nb = cap <= CONFIG_MAX_BYTES ? realloc(buf, cap) : NULL;
			if (!nb) {
				*err = EFBIG;
				break;
			}
			buf = nb;
		}
		n = syscall(SYS_read, (int)fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? errno : 0;
			break;
		}
		len += (size_t)n;
	}
	efasim_sys_close((int)fd);
	if (*err) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

static void free_config(struct efasim_config *c)
{
	free(c->devs);
	free(c->fns);
	free(c->verdicts);
	free(c->sysfs);
	free(c);
}

/* The tree is SYSFS_PATH (libibverbs reads the same), else the folder of
 * the configuration file; a root that is not absolute answers for none. */
static void set_sysfs_root(struct efasim_config *c)
{
	const char *p = secure_getenv("SYSFS_PATH");
	char *slash;
	size_t n;

	if (p && *p)
		snprintf(c->sysfs_root, sizeof(c->sysfs_root), "%s", p);
	else if ((slash = strrchr(c->path, '/')))
		snprintf(c->sysfs_root, sizeof(c->sysfs_root), "%.*s", (int)(slash - c->path), c->path);
	n = strlen(c->sysfs_root);
	while (n > 1 && c->sysfs_root[n - 1] == '/')
		c->sysfs_root[--n] = '\0';
	if (c->sysfs_root[0] != '/')
		c->nsysfs = 0;
}

static void load_config(void)
{
	int saved = errno, err = 0;
	struct efasim_config *c = calloc(1, sizeof(*c));
	char msg[128], *text;

	if (!c || config_path(c->path, sizeof(c->path)))
		goto none;
	text = read_file_raw(c->path, &err);
	if (!text) {
		if (err != ENOENT)
			efasim_warn("cannot read %s: %s; emulation off", c->path, efasim_errname(err));
		goto none;
	}
	err = efasim_config_parse(c, text, msg, sizeof(msg));
	free(text);
	if (err) {
		efasim_warn("%s: %s; emulation off", c->path, msg);
		goto none;
	}
	set_sysfs_root(c);
	clock_gettime(CLOCK_REALTIME, &c->loaded);
	the_config = c;
	efasim_trace("loaded %s: %zu EFA devices, %zu functions, %zu verdicts; kernel %s, efa driver %s",
		     c->path, c->ndevs, c->nfns, c->nverdicts,
		     c->kernel_name[0] ? c->kernel_name : "latest",
		     c->efa_driver_name[0] ? c->efa_driver_name : "in-tree");
	errno = saved;
	return;
none:
	if (c)
		free_config(c);
	errno = saved;
}

struct efasim_config *efasim_config(void)
{
	pthread_once(&config_once, load_config);
	return the_config;
}

struct efasim_dev *efasim_dev_by_index(struct efasim_config *c, int index)
{
	size_t i;

	for (i = 0; c && i < c->ndevs; i++)
		if (c->devs[i].index == index)
			return &c->devs[i];
	return NULL;
}

const struct efasim_fn *efasim_fn_by_pci(const struct efasim_config *c, const char *pci)
{
	size_t i;

	for (i = 0; c && i < c->nfns; i++)
		if (!strcmp(c->fns[i].pci, pci))
			return &c->fns[i];
	return NULL;
}

const struct efasim_verdict *efasim_verdict_for(const struct efasim_config *c,
						const char *nic, const char *owner)
{
	size_t i;

	for (i = 0; c && i < c->nverdicts; i++)
		if (!strcmp(c->verdicts[i].nic, nic) && !strcmp(c->verdicts[i].owner, owner))
			return &c->verdicts[i];
	return NULL;
}

/* rel (after "/sys/") is prefix or below it */
static bool under(const char *rel, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(rel, prefix, n) && (rel[n] == '\0' || rel[n] == '/');
}

const char *efasim_sysfs_path(const char *path, char *buf, size_t len)
{
	struct efasim_config *c;
	const char *rel;
	size_t i;
	int n;

	if (!path || strncmp(path, "/sys/", 5))
		return path;
	c = efasim_config();
	if (!c || !c->nsysfs)
		return path;
	for (rel = path + 5; *rel == '/'; rel++)
		;
	for (i = 0; i < c->nsysfs; i++) {
		if (!under(rel, c->sysfs[i]))
			continue;
		n = snprintf(buf, len, "%s/%s", c->sysfs_root, rel);
		if (n < 0 || (size_t)n >= len) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		efasim_trace("%s: the emulated host's %s", path, buf);
		return buf;
	}
	return path;
}

void efasim_sysfs_unmap(char *path)
{
	struct efasim_config *c = the_config;
	size_t n, i;
	char *rel;

	if (!path || !c || !c->nsysfs)
		return;
	n = strlen(c->sysfs_root);
	/* "/sys/" must fit where the root and its slash were */
	if (n < 4 || strncmp(path, c->sysfs_root, n) || path[n] != '/')
		return;
	rel = path + n + 1;
	for (i = 0; i < c->nsysfs; i++) {
		if (under(rel, c->sysfs[i])) {
			memmove(path + 5, rel, strlen(rel) + 1);
			memcpy(path, "/sys/", 5);
			return;
		}
	}
}

EFASIM_API int efasim_active(void)
{
	return efasim_config() != NULL;
}
