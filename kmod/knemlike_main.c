// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: the character device /dev/knemlike, its module parameters, the ioctl
 * dispatcher, and an open file's lists of the regions and exports made through it
 * (linked, destroyed and released alike for both). Each ioctl copies its argument in,
 * calls one operation, and copies the result out; when that last copy fails, the
 * operation is undone where it can be.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "knemlike_internal.h"

/*
 * Limits, settable at load time and by root at run time through
 * /sys/module/knemlike/parameters/. Each must lie in 1 .. its hard limit: 0 would turn
 * the module off in a way no caller could diagnose, and the hard limits bound the
 * memory one request can make the kernel allocate.
 */
unsigned int knemlike_max_segments = 4096;
unsigned int knemlike_max_regions_per_file = 65536;
unsigned int knemlike_max_region_mb = 65536;
unsigned int knemlike_max_user_kb;	/* 0 until init: 1/32 of RAM unless given */

static int knemlike_set_max_segments(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KNEMLIKE_HARD_MAX_SEGMENTS);
}

static int knemlike_set_max_regions(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KNEMLIKE_HARD_MAX_REGIONS);
}

static int knemlike_set_max_region_mb(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KNEMLIKE_HARD_MAX_REGION_MB);
}

static int knemlike_set_max_user_kb(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KNEMLIKE_HARD_MAX_USER_KB);
}

static const struct kernel_param_ops knemlike_max_user_kb_ops = {
	.set = knemlike_set_max_user_kb,
	.get = param_get_uint,
};

static const struct kernel_param_ops knemlike_max_segments_ops = {
	.set = knemlike_set_max_segments,
	.get = param_get_uint,
};

static const struct kernel_param_ops knemlike_max_regions_ops = {
	.set = knemlike_set_max_regions,
	.get = param_get_uint,
};

static const struct kernel_param_ops knemlike_max_region_mb_ops = {
	.set = knemlike_set_max_region_mb,
	.get = param_get_uint,
};

module_param_cb(max_segments, &knemlike_max_segments_ops, &knemlike_max_segments, 0644);
MODULE_PARM_DESC(max_segments,
		 "Most segments in a region or a local copy vector (default 4096, at most 1048576)");
module_param_cb(max_regions_per_file, &knemlike_max_regions_ops,
		&knemlike_max_regions_per_file, 0644);
MODULE_PARM_DESC(max_regions_per_file,
		 "Most live regions per open file of the device (default 65536, at most 16777215)");
module_param_cb(max_region_mb, &knemlike_max_region_mb_ops, &knemlike_max_region_mb, 0644);
MODULE_PARM_DESC(max_region_mb, "Largest region, in MiB (default 65536, at most 134217728)");
module_param_cb(max_user_kb, &knemlike_max_user_kb_ops, &knemlike_max_user_kb, 0644);
MODULE_PARM_DESC(max_user_kb,
		 "Most kernel memory, in KiB, the regions of one user may take (default 1/32 of RAM)");

bool knemlike_debug_slab;
module_param_named(debug_slab, knemlike_debug_slab, bool, 0444);
MODULE_PARM_DESC(debug_slab,
		 "Poison, red-zone and check the module's objects, to catch use after free (tests; slower)");

static struct kmem_cache *knemlike_file_cache;

/* A cache of the module's objects: charged to the allocating task's memory cgroup, and
 * with debug_slab, poisoned when freed so that a use after free shows in the kernel log.
 */
struct kmem_cache *knemlike_cache_create(const char *name, unsigned int size)
{
	slab_flags_t flags = SLAB_ACCOUNT;

	if (knemlike_debug_slab)
		flags |= KNEMLIKE_SLAB_DEBUG_FLAGS;
	return kmem_cache_create(name, size, 0, flags, NULL);
}

static int knemlike_open(struct inode *inode, struct file *file)
{
	struct knemlike_file *kf = kmem_cache_zalloc(knemlike_file_cache, GFP_KERNEL);

	if (!kf)
		return -ENOMEM;
	kref_init(&kf->ref);
	mutex_init(&kf->lock);
	INIT_LIST_HEAD(&kf->regions);
	INIT_LIST_HEAD(&kf->grants);
	INIT_LIST_HEAD(&kf->exports);
	file->private_data = kf;
	knemlike_attach_open(file);
	return 0;
}

static void knemlike_file_free(struct kref *ref)
{
	struct knemlike_file *kf = container_of(ref, struct knemlike_file, ref);

	mutex_destroy(&kf->lock);
	kmem_cache_free(knemlike_file_cache, kf);
}

void knemlike_file_put(struct knemlike_file *kf)
{
	kref_put(&kf->ref, knemlike_file_free);
}

/*
 * Before a new region or export (of kf) is published in its index: take kf->lock, check
 * max_regions_per_file (-EMFILE, the lock not held) and point *file at kf, with a
 * reference, so that whoever finds it from then on sees its file. Then
 * knemlike_file_link_end(), after what must be done under the lock (counting it, before
 * anyone can unlink it).
 */
int knemlike_file_link_begin(struct knemlike_file *kf, struct knemlike_file **file)
{
	mutex_lock(&kf->lock);
	if (kf->nr_regions >= READ_ONCE(knemlike_max_regions_per_file)) {
		mutex_unlock(&kf->lock);
		return -EMFILE;
	}
	kref_get(&kf->ref);
	*file = kf;
	return 0;
}

/* Published: link it on list (kf->regions or kf->exports). Not: no file. */
void knemlike_file_link_end(struct knemlike_file *kf, struct knemlike_file **file,
			    struct list_head *link, struct list_head *list, bool published)
{
	if (published) {
		list_add(link, list);
		kf->nr_regions++;
	} else {
		*file = NULL;
		knemlike_file_put(kf);	/* not the last: the caller's file holds one */
	}
	mutex_unlock(&kf->lock);
}

/* Take a region or an export (its link) off kf's lists; false when someone else did
 * first (a racing destroy, close or copy).
 */
bool knemlike_file_unlink(struct knemlike_file *kf, struct list_head *link)
{
	bool linked;

	mutex_lock(&kf->lock);
	linked = !list_empty(link);
	if (linked) {
		list_del_init(link);
		kf->nr_regions--;
	}
	mutex_unlock(&kf->lock);
	return linked;
}

/*
 * DESTROY of a region or an export that owner_file holds (at link), made by the effective
 * uid owner: only through that open file (to others it does not exist: -ENOENT), and
 * only in a process of the creator's effective uid, so that a descriptor inherited by,
 * or passed to, another user's process does not give it the owner's rights (-EPERM).
 * Off the file's list, then retire(link); -ENOENT if someone else unlinked it first.
 */
int knemlike_file_destroy(struct knemlike_file *kf, struct knemlike_file *owner_file,
			  kuid_t owner, struct list_head *link,
			  void (*retire)(struct list_head *link))
{
	if (owner_file != kf)
		return -ENOENT;
	if (!uid_eq(current_euid(), owner))
		return -EPERM;
	if (!knemlike_file_unlink(kf, link))
		return -ENOENT;
	retire(link);
	return 0;
}

/* The file is being closed: take each entry off list (kf->regions or kf->exports) and
 * retire it, under kf->lock. Cannot free kf under our feet: the closing file still holds
 * its reference.
 */
void knemlike_file_release_list(struct knemlike_file *kf, struct list_head *list,
				void (*retire)(struct list_head *link))
{
	struct list_head *link;

	mutex_lock(&kf->lock);
	while (!list_empty(list)) {
		link = list->next;
		list_del_init(link);
		kf->nr_regions--;
		retire(link);
	}
	mutex_unlock(&kf->lock);
}

static int knemlike_release(struct inode *inode, struct file *file)
{
	struct knemlike_file *kf = file->private_data;

	knemlike_attach_release(kf);
	knemlike_file_release_regions(kf);
	knemlike_file_release_exports(kf);
	knemlike_file_put(kf);
	return 0;
}

#ifdef CONFIG_UML
/* User-mode Linux brings a process's page-table changes to the host only when that process
 * next enters the kernel: a peer that runs on through a mapping of another process's
 * memory (an attachment, a mapping of an export) goes on reading the pages the owner has
 * since freed or replaced. Mappings are refused there unless asked for, by benchmarks
 * that never free or replace what they send; copies by ioctl stay right.
 */
static bool knemlike_uml_mappings;
module_param_named(uml_mappings, knemlike_uml_mappings, bool, 0444);
MODULE_PARM_DESC(uml_mappings,
		 "User-mode Linux: allow attachments and exports, whose mappings do not follow their owner's memory here (benchmarks only)");

static bool knemlike_mappings_allowed(void)
{
	if (knemlike_uml_mappings)
		return true;
	pr_notice_once("knemlike: mappings refused: under User-mode Linux they do not follow their owner's memory (uml_mappings=1 allows them, for benchmarks)\n");
	return false;
}
#else
static bool knemlike_mappings_allowed(void)
{
	return true;
}
#endif

static long knemlike_ioctl_get_info(void __user *uarg)
{
	const u32 mappings = KNEMLIKE_FEATURE_ATTACH | KNEMLIKE_FEATURE_EXPORT;
	struct knemlike_info info = {
		.abi_version = KNEMLIKE_ABI_VERSION,
		.features = KNEMLIKE_FEATURE_VECTOR_COPY | KNEMLIKE_FEATURE_FOLLOWS_MAPPING |
			    (IS_ENABLED(CONFIG_MMU_NOTIFIER) ?
			     KNEMLIKE_FEATURE_HOLD_PAGES |
			     (knemlike_mappings_allowed() ? mappings : 0) : 0),
		.max_segments = READ_ONCE(knemlike_max_segments),
		.max_regions_per_file = READ_ONCE(knemlike_max_regions_per_file),
		.max_region_bytes = (u64)READ_ONCE(knemlike_max_region_mb) << 20,
	};

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long knemlike_ioctl_create(struct knemlike_file *kf, void __user *uarg)
{
	struct knemlike_create req;
	int err;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	err = knemlike_region_create(kf, &req);
	if (err)
		return err;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller never learns the cookie: take the region back. */
		knemlike_region_destroy(kf, req.cookie);
		return -EFAULT;
	}
	return 0;
}

static long knemlike_ioctl_destroy(struct knemlike_file *kf, void __user *uarg)
{
	struct knemlike_destroy req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	return knemlike_region_destroy(kf, req.cookie);
}

static long knemlike_ioctl_copy(void __user *uarg)
{
	struct knemlike_copy req;
	int err;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	err = knemlike_copy(&req);
	if (err && err != -EINTR)
		return err;
	/* The data has moved (EINTR: some of it); only the report of it can fail now. */
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : err;
}

static long knemlike_ioctl_attach(struct file *file, void __user *uarg)
{
	struct knemlike_attach req;
	int err;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	err = knemlike_attach(file, &req);
	if (err)
		return err;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller never learns where: take the mapping back. */
		vm_munmap(req.map_addr, req.map_len);
		return -EFAULT;
	}
	return 0;
}

static long knemlike_ioctl_export(struct file *file, void __user *uarg)
{
	struct knemlike_file *kf = file->private_data;
	struct knemlike_export_create req;
	int err;

	/* Only by the effective uid that opened the file: a descriptor passed to another
	 * user gives it no exports to make with the owner's slots, that the owner could not
	 * DESTROY (only the creator's uid can).
	 */
	if (!uid_eq(file->f_cred->euid, current_euid()))
		return -EPERM;
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	err = knemlike_export_create(kf, &req);
	if (err)
		return err;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller never learns the cookie: take the export back. */
		knemlike_export_destroy(kf, &req.cookie);
		return -EFAULT;
	}
	return 0;
}

static long knemlike_ioctl_export_destroy(struct knemlike_file *kf, void __user *uarg)
{
	struct knemlike_export_destroy req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	return knemlike_export_destroy(kf, &req.cookie);
}

static long knemlike_ioctl_export_attach(void __user *uarg)
{
	struct knemlike_export_attach req;
	int err;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	err = knemlike_export_attach(&req);
	if (err)
		return err;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller never learns where: take the mapping back. */
		vm_munmap(req.addr, req.len);
		return -EFAULT;
	}
	return 0;
}

static long knemlike_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct knemlike_file *kf = file->private_data;
	void __user *uarg = (void __user *)arg;
	long err;

	switch (cmd) {
	case KNEMLIKE_IOC_GET_INFO:
		err = knemlike_ioctl_get_info(uarg);
		break;
	case KNEMLIKE_IOC_CREATE:
		err = knemlike_ioctl_create(kf, uarg);
		break;
	case KNEMLIKE_IOC_DESTROY:
		err = knemlike_ioctl_destroy(kf, uarg);
		break;
	case KNEMLIKE_IOC_COPY:
		err = knemlike_ioctl_copy(uarg);
		break;
	case KNEMLIKE_IOC_ATTACH:
		err = knemlike_mappings_allowed() ? knemlike_ioctl_attach(file, uarg) : -EOPNOTSUPP;
		break;
	case KNEMLIKE_IOC_EXPORT:
		err = knemlike_mappings_allowed() ? knemlike_ioctl_export(file, uarg) : -EOPNOTSUPP;
		break;
	case KNEMLIKE_IOC_EXPORT_DESTROY:
		err = knemlike_ioctl_export_destroy(kf, uarg);
		break;
	case KNEMLIKE_IOC_EXPORT_ATTACH:
		err = knemlike_mappings_allowed() ? knemlike_ioctl_export_attach(uarg) : -EOPNOTSUPP;
		break;
	default:
		err = -ENOTTY;
		break;
	}
	return err ? knemlike_refuse(err) : 0;
}

static const struct file_operations knemlike_fops = {
	.owner = THIS_MODULE,	/* holds the module while the device is open */
	.open = knemlike_open,
	.release = knemlike_release,
	.unlocked_ioctl = knemlike_ioctl,
	.mmap = knemlike_attach_mmap,	/* only what KNEMLIKE_IOC_ATTACH grants */
	.compat_ioctl = compat_ptr_ioctl,	/* every field is fixed-width */
	.llseek = noop_llseek,
};

/* Mode 0666: every access is checked per region (owner uid, protection); sites that want
 * fewer users of the device restrict it with a udev rule (contrib/udev).
 */
static struct miscdevice knemlike_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KNEMLIKE_DEVICE_NAME,
	.fops = &knemlike_fops,
	.mode = 0666,
	.groups = knemlike_attr_groups,
};

static int __init knemlike_init(void)
{
	int err;

	/* The sizes are part of the ABI: the ioctl numbers encode them. */
	BUILD_BUG_ON(sizeof(struct knemlike_segment) != 16);
	BUILD_BUG_ON(sizeof(struct knemlike_info) != 56);
	BUILD_BUG_ON(sizeof(struct knemlike_create) != 32);
	BUILD_BUG_ON(sizeof(struct knemlike_destroy) != 8);
	BUILD_BUG_ON(sizeof(struct knemlike_copy) != 48);
	BUILD_BUG_ON(sizeof(struct knemlike_attach) != 40);
	BUILD_BUG_ON(sizeof(struct knemlike_export_cookie) != 24);
	BUILD_BUG_ON(sizeof(struct knemlike_export_create) != 48);
	BUILD_BUG_ON(sizeof(struct knemlike_export_destroy) != 24);
	BUILD_BUG_ON(sizeof(struct knemlike_export_attach) != 56);

	if (!knemlike_max_user_kb)	/* not given at load: 1/32 of RAM, at least 1 MiB */
		knemlike_max_user_kb = clamp_t(unsigned long,
					       totalram_pages() >> (5 + 10 - PAGE_SHIFT),
					       1024, KNEMLIKE_HARD_MAX_USER_KB);
	knemlike_file_cache = knemlike_cache_create("knemlike_file", sizeof(struct knemlike_file));
	if (!knemlike_file_cache)
		return -ENOMEM;
	err = knemlike_regions_init();
	if (err)
		goto out_file_cache;
	err = knemlike_owners_init();
	if (err)
		goto out_regions;
	err = knemlike_attach_init();
	if (err)
		goto out_owners;
	err = knemlike_exports_init();
	if (err)
		goto out_attach;
	err = misc_register(&knemlike_misc);
	if (err)
		goto out_exports;
	pr_info("knemlike: ABI %u, /dev/%s ready%s\n", KNEMLIKE_ABI_VERSION,
		KNEMLIKE_DEVICE_NAME, knemlike_debug_slab ? " (debug_slab)" : "");
	return 0;

out_exports:
	knemlike_exports_exit();
out_attach:
	knemlike_attach_exit();
out_owners:
	knemlike_owners_exit();
out_regions:
	knemlike_regions_exit();
out_file_cache:
	kmem_cache_destroy(knemlike_file_cache);
	return err;
}

static void __exit knemlike_exit(void)
{
	misc_deregister(&knemlike_misc);
	knemlike_owners_exit();
	knemlike_held_exit();
	knemlike_exports_exit();
	knemlike_attach_exit();
	knemlike_regions_exit();
	kmem_cache_destroy(knemlike_file_cache);
}

module_init(knemlike_init);
module_exit(knemlike_exit);

MODULE_DESCRIPTION("Single copy between processes through cookies to memory regions");
MODULE_AUTHOR("ompi-smx authors");
MODULE_LICENSE("Dual BSD/GPL");
