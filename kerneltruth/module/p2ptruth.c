// SPDX-License-Identifier: GPL-2.0
/*
 * p2ptruth: asks the running kernel for its peer-to-peer DMA verdict on
 * every ordered pair of PCI functions that are not bridges, so that
 * efap2p's oracle can be compared with it.
 *
 * Reading /proc/p2ptruth calls pci_p2pdma_distance_many() with one client
 * for each pair. The map type and the distance the kernel worked out come
 * from a kretprobe on calc_map_type_and_dist(), which the public function
 * folds into -1 for a refusal. On a kernel built without CONFIG_PCI_P2PDMA
 * the call is the header's stub and the probe has nothing to attach to:
 * the report says so ("probe absent").
 *
 * One line per fact, fields separated by spaces:
 *   kt 1 <release>                    format version, utsname release
 *   probe ok | probe absent <errno>
 *   fn <bdf> <vendor> <device> <class> <hdr> bridge=<0|1> up=<bdf|-> acs=<pos>:<cap>:<ctrl> | acs=-
 *   pair <provider> <client> <ret> <map> <dist>   map and dist "-" when the probe saw no call
 *   end <pairs>
 */
#include <linux/dma-map-ops.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/utsname.h>
#include <linux/mutex.h>

/* What the kretprobe saw of the one call the reader is making. */
struct kt_seen {
	struct task_struct *task; /* the reader; other callers are ignored */
	int calls;
	int map;
	int dist;
};

static DEFINE_MUTEX(kt_lock);
static struct kt_seen kt_seen;
static int kt_probe_err;

struct kt_frame {
	int *dist;
};

static int kt_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kt_frame *f = (struct kt_frame *)ri->data;

	/* calc_map_type_and_dist(provider, client, int *dist, verbose) */
	f->dist = (int *)regs_get_kernel_argument(regs, 2);
	return 0;
}

static int kt_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kt_frame *f = (struct kt_frame *)ri->data;

	if (READ_ONCE(kt_seen.task) != current)
		return 0;
	kt_seen.calls++;
	kt_seen.map = (int)regs_return_value(regs);
	kt_seen.dist = f->dist ? *f->dist : -1;
	return 0;
}

static struct kretprobe kt_probe = {
	.kp.symbol_name = "calc_map_type_and_dist",
	.entry_handler = kt_entry,
	.handler = kt_return,
	.data_size = sizeof(struct kt_frame),
	.maxactive = 4,
};

static const char *kt_map_name(int map)
{
	switch (map) {
	case PCI_P2PDMA_MAP_UNKNOWN:
		return "UNKNOWN";
	case PCI_P2PDMA_MAP_NOT_SUPPORTED:
		return "NOT_SUPPORTED";
	case PCI_P2PDMA_MAP_BUS_ADDR:
		return "BUS_ADDR";
	case PCI_P2PDMA_MAP_THRU_HOST_BRIDGE:
		return "THRU_HOST_BRIDGE";
	}
	return "INVALID";
}

static void kt_show_fn(struct seq_file *m, struct pci_dev *dev)
{
	struct pci_dev *up = pci_upstream_bridge(dev);
	u16 cap = 0, ctrl = 0;
	int pos;

	seq_printf(m, "fn %s %04x %04x %06x %02x bridge=%d up=%s", pci_name(dev),
		   dev->vendor, dev->device, dev->class, dev->hdr_type,
		   pci_is_bridge(dev), up ? pci_name(up) : "-");
	pos = pci_find_ext_capability(dev, PCI_EXT_CAP_ID_ACS);
	if (pos) {
		pci_read_config_word(dev, pos + PCI_ACS_CAP, &cap);
		pci_read_config_word(dev, pos + PCI_ACS_CTRL, &ctrl);
		seq_printf(m, " acs=%03x:%04x:%04x\n", pos, cap, ctrl);
	} else {
		seq_puts(m, " acs=-\n");
	}
}

static void kt_show_pair(struct seq_file *m, struct pci_dev *p, struct pci_dev *c)
{
	struct device *client = &c->dev;
	int ret;

	kt_seen.calls = 0;
	WRITE_ONCE(kt_seen.task, current);
	ret = pci_p2pdma_distance_many(p, &client, 1, false);
	WRITE_ONCE(kt_seen.task, NULL);
	seq_printf(m, "pair %s %s %d", pci_name(p), pci_name(c), ret);
	if (kt_seen.calls == 1)
		seq_printf(m, " %s %d\n", kt_map_name(kt_seen.map), kt_seen.dist);
	else
		seq_printf(m, " - - calls=%d\n", kt_seen.calls);
}

static int kt_show(struct seq_file *m, void *v)
{
	struct pci_dev *p = NULL, *c;
	int pairs = 0;

	mutex_lock(&kt_lock);
	seq_printf(m, "kt 1 %s\n", init_utsname()->release);
	if (kt_probe_err)
		seq_printf(m, "probe absent %d\n", kt_probe_err);
	else
		seq_puts(m, "probe ok\n");
	for_each_pci_dev(p)
		kt_show_fn(m, p);
	p = NULL;
	for_each_pci_dev(p) {
		if (pci_is_bridge(p))
			continue;
		c = NULL;
		for_each_pci_dev(c) {
			if (pci_is_bridge(c))
				continue;
			kt_show_pair(m, p, c);
			pairs++;
		}
	}
	seq_printf(m, "end %d\n", pairs);
	mutex_unlock(&kt_lock);
	return 0;
}

static int kt_open(struct inode *inode, struct file *file)
{
	/* the whole report in one buffer: a few hundred bytes per pair */
	return single_open_size(file, kt_show, NULL, 1 << 20);
}

static const struct proc_ops kt_ops = {
	.proc_open = kt_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static int __init kt_init(void)
{
	kt_probe_err = register_kretprobe(&kt_probe);
	if (!proc_create("p2ptruth", 0400, NULL, &kt_ops)) {
		if (!kt_probe_err)
			unregister_kretprobe(&kt_probe);
		return -ENOMEM;
	}
	return 0;
}

static void __exit kt_exit(void)
{
	remove_proc_entry("p2ptruth", NULL);
	if (!kt_probe_err)
		unregister_kretprobe(&kt_probe);
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Report the kernel's p2pdma verdict for every pair of PCI functions");
