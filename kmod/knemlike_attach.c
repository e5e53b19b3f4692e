// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: attachments -- a peer's region mapped into the caller (KNEMLIKE_IOC_ATTACH).
 *
 * Design. Every open file of the device shares one address_space, that of an inode of
 * the module's own (a pseudo filesystem, as DRM does), and each region has a window of
 * 512 GiB in it: its index times KNEMLIKE_WINDOW_SHIFT. An attachment is a shared
 * mapping of that window, VM_PFNMAP: its page-table entries point at the pages the
 * region holds (KNEMLIKE_FLAG_HOLD_PAGES) without taking a reference or a reverse map,
 * as a device's memory would be mapped. Whatever may make those pages go -- a change of
 * the owner's mapping (the region's MMU notifier), DESTROY, close, the owner's exit --
 * first unmaps the window from every process that maps it, with unmap_mapping_range()
 * on the shared address_space, and only then lets the pages go. A touch afterwards
 * faults, and the fault handler maps the pages held then, or raises SIGBUS.
 *
 * Why not a page reference per mapped page (vm_insert_page): the owner's anonymous
 * pages would gain a second, file-like reverse map in another process, which the kernel
 * does not support; and it would keep the old pages alive after the owner's mapping
 * changed, which is what coherence must prevent.
 *
 * Authority. The mmap offset is a region's window, which is guessable, so mmap() alone
 * grants nothing: KNEMLIKE_IOC_ATTACH checks the cookie and the caller's rights, leaves a
 * grant on the caller's open file and maps it with vm_mmap(); the mmap handler accepts
 * only a window for which the same open file holds a grant made by the same thread, and
 * consumes it. (Another thread that mmaps the window meanwhile gets EACCES, and takes
 * nothing from the ATTACH under way.)
 *
 * Locks: see knemlike_attach_fault(). No mmap lock of another process is ever taken
 * under the caller's own.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

/* A region's window in the shared address_space: 512 GiB per index. */
#define KNEMLIKE_WINDOW_SHIFT	39
#define KNEMLIKE_FS_MAGIC	0x6b6e656dU	/* "knem" */
/* A fault maps up to this many pages around the one touched (1 MiB with 4 KiB pages). */
#define KNEMLIKE_FAULT_PAGES	256

/*
 * A region mapped into a process. References: its grant, until mmap takes it over;
 * then each VMA that maps it (a split or mremap adds one, through vm_ops->open).
 */
struct knemlike_attachment {
	struct kref ref;
	struct knemlike_region *region;	/* referenced */
	struct list_head grant_link;	/* in its file's grants until mapped */
	unsigned long window;		/* pgoff of the region's first page */
	unsigned long nr_pages;		/* pages the mapping spans */
	bool writable;
	struct task_struct *grantee;	/* the thread in ATTACH: only its mmap takes the grant */
	spinlock_t lock;		/* protects failed* */
	bool failed;			/* a take for failed_page failed, the notifier at failed_seq */
	unsigned long failed_page;
	unsigned long failed_seq;
};

static struct vfsmount *knemlike_mnt;
static struct inode *knemlike_inode;

static int knemlike_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, KNEMLIKE_FS_MAGIC) ? 0 : -ENOMEM;
}

/* No .owner: the module's own mount would then hold the module forever. It is unmounted
 * at exit, when no file (each of which holds the module) is open.
 */
static struct file_system_type knemlike_fs_type = {
	.name = "knemlike",
	.init_fs_context = knemlike_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int knemlike_attach_init(void)
{
	knemlike_mnt = kern_mount(&knemlike_fs_type);
	if (IS_ERR(knemlike_mnt))
		return PTR_ERR(knemlike_mnt);
	knemlike_inode = alloc_anon_inode(knemlike_mnt->mnt_sb);
	if (IS_ERR(knemlike_inode)) {
		kern_unmount(knemlike_mnt);
		return PTR_ERR(knemlike_inode);
	}
	return 0;
}

void knemlike_attach_exit(void)
{
	iput(knemlike_inode);
	kern_unmount(knemlike_mnt);
}

/* Every open file maps through the one address_space, so that one call finds all. */
void knemlike_attach_open(struct file *file)
{
	file->f_mapping = knemlike_inode->i_mapping;
}

/*
 * A file of the module's pseudo filesystem with an address_space of its own, for an
 * export's attachments to map (knemlike_export.c): unmapping a range of it finds every
 * attachment, in every process. It holds the module while it lives (fops->owner). No
 * one can open it again (its inode has no file operations of its own).
 */
struct file *knemlike_pseudo_file(const struct file_operations *fops, void *private)
{
	struct inode *inode = alloc_anon_inode(knemlike_mnt->mnt_sb);
	struct file *file;

	if (IS_ERR(inode))
		return ERR_CAST(inode);
	__module_get(fops->owner);	/* put by the file's last fput */
	file = alloc_file_pseudo(inode, knemlike_mnt, "knemlike-export", O_RDWR, fops);
	if (IS_ERR(file)) {
		module_put(fops->owner);
		iput(inode);
		return file;
	}
	file->private_data = private;
	return file;
}

static unsigned long knemlike_window(const struct knemlike_region *region)
{
	return (unsigned long)region->index << (KNEMLIKE_WINDOW_SHIFT - PAGE_SHIFT);
}

/*
 * Unmap the region from every attachment, in every process. Called before its pages
 * may go (the notifier) and once it is retired (then nothing maps them again).
 */
void knemlike_attach_zap(struct knemlike_region *region)
{
	unmap_mapping_range(knemlike_inode->i_mapping,
			    (loff_t)knemlike_window(region) << PAGE_SHIFT,
			    1ULL << KNEMLIKE_WINDOW_SHIFT, 1);
	knemlike_count(attach_revokes);
}

static void knemlike_attachment_free(struct kref *ref)
{
	struct knemlike_attachment *at = container_of(ref, struct knemlike_attachment, ref);

	knemlike_region_put(at->region);
	knemlike_count_add(attachments, -1);
	kfree(at);
}

static void knemlike_attachment_put(struct knemlike_attachment *at)
{
	kref_put(&at->ref, knemlike_attachment_free);
}

/*
 * Map the pages around the touched one, if the region is live and holds its pages.
 * Returns -EAGAIN when nothing is held now, -ENOENT when what is held has a hole at the
 * touched page, 0 with *ret set otherwise.
 */
static int knemlike_attach_map(struct vm_fault *vmf, struct knemlike_attachment *at,
			       vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	struct knemlike_region *region = at->region;
	unsigned long page = vmf->pgoff - at->window;
	unsigned long first = round_down(page, KNEMLIKE_FAULT_PAGES);
	unsigned long addr = vmf->address - (page - first) * PAGE_SIZE;
	unsigned long nr;
	int err;

	/* Around the touched page, within the mapping and the region. */
	if (addr < vma->vm_start) {
		first += (vma->vm_start - addr) >> PAGE_SHIFT;
		addr = vma->vm_start;
	}
	nr = min3((unsigned long)KNEMLIKE_FAULT_PAGES - (first & (KNEMLIKE_FAULT_PAGES - 1)),
		  at->nr_pages - first, (vma->vm_end - addr) >> PAGE_SHIFT);
	down_read(&region->revoke);
	if (READ_ONCE(region->retired)) {
		*ret = VM_FAULT_SIGBUS;
		err = 0;
	} else {
		err = knemlike_held_map(region, vma, addr, first, nr, page,
					vmf->flags & FAULT_FLAG_WRITE, ret);
	}
	up_read(&region->revoke);
	if (!err && *ret == VM_FAULT_NOPAGE)
		knemlike_count(attach_faults);
	return err;
}

/*
 * Hold the region's pages again for a touch of its page, or fill the hole there: with no
 * mmap lock held (knemlike_attach_fault). 0, or the errno that a copy would report; *seq
 * says where the region's notifier stood before the last try (0 once it is retired).
 */
static int knemlike_attach_take(struct knemlike_region *region, unsigned long page,
				unsigned long nr_pages, unsigned long *seq)
{
	unsigned long lo = round_down(page, KNEMLIKE_FAULT_PAGES);
	unsigned long hi = min(lo + KNEMLIKE_FAULT_PAGES, nr_pages);
	int err, tries;

	for (tries = 0; tries < 3; tries++) {
		down_read(&region->revoke);
		if (READ_ONCE(region->retired)) {
			*seq = 0;
			err = -ENOENT;
		} else {
			*seq = knemlike_held_seq(region);
			err = knemlike_held_refresh_at(region, page, lo, hi);
		}
		up_read(&region->revoke);
		if (err == -EDQUOT)	/* the dropped pages may not be uncharged yet */
			knemlike_held_flush();
		else if (err != -EAGAIN)	/* -EAGAIN: the mapping changed meanwhile */
			break;
		if (fatal_signal_pending(current))
			break;
	}
	return err;
}

/*
 * For a retried fault: whether a take for this page failed and nothing of the owner's
 * mapping over the region changed since. Then the fault gives SIGBUS instead of trying
 * again, for ever. (A later touch is a new fault, which tries again: memory mapped into
 * a hole calls no notifier.)
 */
static bool knemlike_attach_failed(struct knemlike_attachment *at, unsigned long page)
{
	struct knemlike_region *region = at->region;
	unsigned long seq = 0;
	bool failed;

	spin_lock(&at->lock);
	failed = at->failed && at->failed_page == page;
	if (failed) {
		seq = at->failed_seq;
		at->failed = false;
	}
	spin_unlock(&at->lock);
	if (!failed)
		return false;
	down_read(&region->revoke);
	failed = READ_ONCE(region->retired) || !knemlike_held_changed(region, seq);
	up_read(&region->revoke);
	return failed;
}

/*
 * A touch of an attachment. Lock order: the fault runs under the attaching process's
 * mmap lock (or its VMA's); under it, only the region's revoke semaphore and held->sem
 * are taken, for reading, and neither is held by anyone who waits for an mmap lock. An
 * owner's mmap lock is taken only by knemlike_attach_take(), after the fault has given
 * up its own: never one mm's lock under another's, so two processes that attach each
 * other's regions, or one that attaches its own, cannot wait on each other, whatever
 * their other threads map or unmap meanwhile.
 */
static vm_fault_t knemlike_attach_fault(struct vm_fault *vmf)
{
	struct knemlike_attachment *at = vmf->vma->vm_private_data;
	struct knemlike_region *region = at->region;
	unsigned long page = vmf->pgoff - at->window;
	unsigned long seq;
	vm_fault_t ret;
	int err;

	if (page >= at->nr_pages)
		return VM_FAULT_SIGBUS;
	if (!knemlike_attach_map(vmf, at, &ret))
		return ret;
	/*
	 * Nothing held (the owner's mapping changed since), or a hole where the owner had
	 * no memory when the pages were taken. Taking pages needs the owner's mmap lock, so
	 * only once ours is given up: the fault is then retried and maps what was taken. A
	 * fault that cannot be retried (a kernel access without ALLOW_RETRY) gets SIGBUS.
	 */
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY))
		return VM_FAULT_SIGBUS;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;	/* the lock stays held: that is the contract */
	if ((vmf->flags & FAULT_FLAG_TRIED) && knemlike_attach_failed(at, page))
		return VM_FAULT_SIGBUS;
	kref_get(&at->ref);		/* the VMA may go once our lock is given up */
	knemlike_release_fault_lock(vmf);
	err = knemlike_attach_take(region, page, at->nr_pages, &seq);
	if (err && err != -EINTR) {
		spin_lock(&at->lock);
		at->failed = true;
		at->failed_page = page;
		at->failed_seq = seq;
		spin_unlock(&at->lock);
	}
	knemlike_attachment_put(at);
	return VM_FAULT_RETRY;
}

/* A store to a page mapped read-only (held for reading only: the owner made it so). */
static vm_fault_t knemlike_attach_pfn_mkwrite(struct vm_fault *vmf)
{
	struct knemlike_attachment *at = vmf->vma->vm_private_data;
	unsigned long page = vmf->pgoff - at->window;

	if (page >= at->nr_pages)
		return VM_FAULT_SIGBUS;
	return knemlike_held_may_write(at->region, page);
}

static void knemlike_attach_vm_open(struct vm_area_struct *vma)
{
	struct knemlike_attachment *at = vma->vm_private_data;

	kref_get(&at->ref);
}

static void knemlike_attach_vm_close(struct vm_area_struct *vma)
{
	knemlike_attachment_put(vma->vm_private_data);
}

static const struct vm_operations_struct knemlike_attach_vm_ops = {
	.open = knemlike_attach_vm_open,
	.close = knemlike_attach_vm_close,
	.fault = knemlike_attach_fault,
	.pfn_mkwrite = knemlike_attach_pfn_mkwrite,
};

/*
 * What every attachment is, of a region or of an export: never inherited, never grown,
 * never executable, writable only as granted, out of reach of get_user_pages.
 */
void knemlike_attach_seal(struct vm_area_struct *vma, bool writable)
{
	/* VM_IO too: madvise(MADV_DOFORK) clears VM_DONTCOPY except on VM_IO mappings, so
	 * without it an attachment could be carried into a child by fork.
	 */
	knemlike_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
			      VM_DONTCOPY);
	/* Never executable (READ_IMPLIES_EXEC asks for it), writable only as granted. */
	knemlike_vm_flags_clear(vma, VM_EXEC | VM_MAYEXEC | (writable ? 0 : VM_MAYWRITE));
}

/*
 * mmap of the device: only the window of a grant this open file holds, whole, with no
 * more access than the grant's. Returns -EACCES otherwise (a guessed window included).
 */
int knemlike_attach_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct knemlike_file *kf = file->private_data;
	struct knemlike_attachment *at, *found = NULL;
	unsigned long pages = vma_pages(vma);

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EACCES;
	mutex_lock(&kf->lock);
	list_for_each_entry(at, &kf->grants, grant_link) {
		if (at->grantee == current && at->window == vma->vm_pgoff &&
		    at->nr_pages == pages &&
		    (at->writable || !(vma->vm_flags & VM_WRITE))) {
			list_del_init(&at->grant_link);
			found = at;
			break;
		}
	}
	mutex_unlock(&kf->lock);
	if (!found)
		return -EACCES;
	knemlike_attach_seal(vma, found->writable);
	vma->vm_private_data = found;	/* the grant's reference passes to the VMA */
	vma->vm_ops = &knemlike_attach_vm_ops;
	return 0;
}

static int knemlike_attach_check(struct knemlike_region *region, u32 prot)
{
	if (!(region->flags & KNEMLIKE_FLAG_HOLD_PAGES) || region->nr_segments != 1)
		return -EINVAL;
	if (!(region->flags & KNEMLIKE_FLAG_ANY_USER) && !uid_eq(current_euid(), region->owner_uid))
		return -EPERM;
	if ((prot & region->prot) != prot)
		return -EACCES;
	if (region->len > (1ULL << KNEMLIKE_WINDOW_SHIFT) - PAGE_SIZE)
		return -E2BIG;
	return 0;
}

int knemlike_attach(struct file *file, struct knemlike_attach *req)
{
	const u32 prot_all = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE;
	struct knemlike_file *kf = file->private_data;
	struct knemlike_region *region;
	struct knemlike_attachment *at;
	const struct knemlike_segment *seg;
	unsigned long addr, len;
	int err;

	if (!IS_ENABLED(CONFIG_MMU_NOTIFIER))
		return -EOPNOTSUPP;
	if (req->flags || !(req->prot & KNEMLIKE_PROT_READ) || (req->prot & ~prot_all))
		return -EINVAL;
	region = knemlike_region_get(req->cookie);
	if (!region)
		return -ENOENT;
	err = knemlike_attach_check(region, req->prot);
	if (err)
		goto out_put;
	at = kzalloc(sizeof(*at), GFP_KERNEL_ACCOUNT);
	if (!at) {
		err = -ENOMEM;
		goto out_put;
	}
	seg = &region->segments[0];
	len = PAGE_ALIGN(seg->addr + seg->len) - (seg->addr & PAGE_MASK);
	kref_init(&at->ref);
	spin_lock_init(&at->lock);
	at->grantee = current;	/* compared, never dereferenced */
	at->region = region;	/* our reference passes to the attachment */
	at->window = knemlike_window(region);
	at->nr_pages = len >> PAGE_SHIFT;
	at->writable = req->prot & KNEMLIKE_PROT_WRITE;
	knemlike_count(attachments);
	/* Before any page of it can be mapped, the notifier learns to unmap attachments,
	 * and retiring it will (knemlike_region.c).
	 */
	down_read(&region->revoke);
	if (!READ_ONCE(region->retired)) {
		knemlike_held_attach(region);
		WRITE_ONCE(region->attached, true);
	} else {
		err = region->orphaned ? -ESRCH : -ENOENT;
	}
	up_read(&region->revoke);
	if (err) {
		knemlike_attachment_put(at);
		return err;
	}
	/* One reference is the grant's; this one keeps at while the mapping is made (once
	 * mapped, another thread may unmap it at once).
	 */
	kref_get(&at->ref);
	mutex_lock(&kf->lock);
	list_add(&at->grant_link, &kf->grants);
	mutex_unlock(&kf->lock);
	addr = vm_mmap(file, 0, len, PROT_READ | (at->writable ? PROT_WRITE : 0), MAP_SHARED,
		       (unsigned long)at->window << PAGE_SHIFT);
	/* Not mapped (vm_mmap failed before it came to our handler): take the grant back.
	 * Only this thread's mmap takes it, so a mapping made means ours was.
	 */
	mutex_lock(&kf->lock);
	if (!list_empty(&at->grant_link)) {
		list_del_init(&at->grant_link);
		knemlike_attachment_put(at);	/* the grant's, not the last */
		WARN_ON_ONCE(!IS_ERR_VALUE(addr));
	}
	mutex_unlock(&kf->lock);
	if (!IS_ERR_VALUE(addr)) {
		req->map_addr = addr;
		req->map_len = len;
		req->addr = addr + (seg->addr & ~PAGE_MASK);
	}
	knemlike_attachment_put(at);
	return IS_ERR_VALUE(addr) ? (int)addr : 0;

out_put:
	knemlike_region_put(region);
	return err;
}

/* The file is closing: grants never mapped go. (Mappings hold the file open.) */
void knemlike_attach_release(struct knemlike_file *kf)
{
	struct knemlike_attachment *at, *next;

	mutex_lock(&kf->lock);
	list_for_each_entry_safe(at, next, &kf->grants, grant_link) {
		list_del_init(&at->grant_link);
		knemlike_attachment_put(at);
	}
	mutex_unlock(&kf->lock);
}
