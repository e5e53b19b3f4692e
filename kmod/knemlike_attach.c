// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: attachments -- what the two kinds share: a held region mapped into a peer
 * (KNEMLIKE_IOC_ATTACH, knemlike_region_attach.c) and part of an export mapped into a
 * peer (KNEMLIKE_IOC_EXPORT_ATTACH, knemlike_export_attach.c).
 *
 * An attachment is a shared mapping of a file of the module's own pseudo filesystem (as
 * DRM does): the device's one address_space for regions, where each region has a window,
 * or an export's own file. It is VM_PFNMAP: its page-table entries point at the owner's
 * pages without a reference or a reverse map, as a device's memory would be mapped, so
 * unmapping a range of that address_space reaches every attachment of it, in every
 * process. Whatever may make the pages go unmaps them first; a touch afterwards faults,
 * and the fault maps the owner's pages as they are then, or raises SIGBUS.
 *
 * Authority. The mmap offset is guessable, so mmap() alone grants nothing: the ioctl
 * checks the cookie and the caller's rights, leaves a grant and maps it with vm_mmap()
 * (knemlike_attachment_map()); the mmap handler accepts only what a grant of the same
 * thread names, whole, and consumes it. (Another thread that mmaps the same offset
 * meanwhile gets EACCES, and takes nothing from the ATTACH under way.)
 *
 * The fault (knemlike_attachment_fault()). Under the fault's own lock a kind may map
 * what it can without another mm's lock (a held region's pinned pages); else the fault
 * gives its lock up and the kind takes the owner's pages (with the owner's mmap lock
 * only), and returns VM_FAULT_RETRY: the retried access finds its page mapped. Never one
 * mm's mmap lock under another's, so two processes that attach each other's memory, or
 * one that attaches its own, cannot wait on each other, whatever their other threads
 * map or unmap meanwhile.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

#define KNEMLIKE_FS_MAGIC	0x6b6e656dU	/* "knem" */

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

/* Every open file of the device maps through one address_space, so that one call finds
 * all attachments of a region (knemlike_attach_zap()).
 */
void knemlike_attach_open(struct file *file)
{
	file->f_mapping = knemlike_inode->i_mapping;
}

struct address_space *knemlike_attach_mapping(void)
{
	return knemlike_inode->i_mapping;
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

static void knemlike_attachment_free(struct kref *ref)
{
	struct knemlike_attachment *at = container_of(ref, struct knemlike_attachment, ref);

	knemlike_count_add(attachments, -1);
	at->ops->free(at);
}

void knemlike_attachment_put(struct knemlike_attachment *at)
{
	kref_put(&at->ref, knemlike_attachment_free);
}

/*
 * A new attachment of the object's pages [first, first + nr), which the file maps from
 * its page base on, for the calling thread to map (knemlike_attachment_map()). The
 * caller holds its one reference.
 */
void knemlike_attachment_init(struct knemlike_attachment *at,
			      const struct knemlike_attachment_ops *ops, unsigned long base,
			      unsigned long first, unsigned long nr, bool writable)
{
	kref_init(&at->ref);
	spin_lock_init(&at->lock);
	INIT_LIST_HEAD(&at->grant_link);
	at->ops = ops;
	at->grantee = current;	/* compared, never dereferenced */
	at->base = base;
	at->first = first;
	at->nr = nr;
	at->writable = writable;
	knemlike_count(attachments);
}

/*
 * What a touch at vmf concerns: the object's page, and its fault window, the page's
 * chunk of KNEMLIKE_FAULT_PAGES within the attachment and this mapping (a split or a
 * partial munmap may have left less of it). False when the page is not the attachment's.
 */
static bool knemlike_touch_init(struct vm_fault *vmf, struct knemlike_attachment *at,
				struct knemlike_touch *t)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long vfirst = vma->vm_pgoff - at->base;	/* the page at vm_start */
	unsigned long chunk;

	t->page = vmf->pgoff - at->base;
	if (t->page - at->first >= at->nr)
		return false;
	chunk = round_down(t->page, KNEMLIKE_FAULT_PAGES);
	t->lo = max3(chunk, at->first, vfirst);
	t->hi = min3(chunk + KNEMLIKE_FAULT_PAGES, at->first + at->nr, vfirst + vma_pages(vma));
	t->start = vma->vm_start + ((t->lo - vfirst) << PAGE_SHIFT);
	t->addr = vmf->address & PAGE_MASK;
	t->write = vmf->flags & FAULT_FLAG_WRITE;
	t->seq = 0;
	return true;
}

/*
 * Put pages[0, nr) (NULL: a hole, left unmapped) into vma from addr, writable if they
 * were taken for writing. Returns VM_FAULT_NOPAGE, or the error of the first insertion
 * that failed; *done says how many pages were gone through (the failed one included).
 */
vm_fault_t knemlike_attachment_insert(struct vm_area_struct *vma, unsigned long addr,
				      struct page **pages, unsigned long nr, bool writable,
				      unsigned long *done)
{
	vm_fault_t ret = VM_FAULT_NOPAGE;
	unsigned long i;
	pgprot_t prot;

	/* A writable attachment's vm_page_prot is read-only (it has pfn_mkwrite): its
	 * flags' protection maps a page writable.
	 */
	prot = writable ? vm_get_page_prot(vma->vm_flags) : vma->vm_page_prot;
	for (i = 0; i < nr && ret == VM_FAULT_NOPAGE; i++) {
		if (pages[i])
			ret = vmf_insert_pfn_prot(vma, addr + i * PAGE_SIZE,
						  page_to_pfn(pages[i]), prot);
	}
	*done = i;
	return ret;
}

/*
 * For a retried fault: whether the take for this page failed and, as far as the kind
 * can tell (ops->failed_since), would fail again. Then the fault gives SIGBUS instead of
 * trying for ever. (A later touch is a new fault, which tries again: memory mapped into
 * a hole calls no notifier.)
 */
static bool knemlike_attachment_failed(struct knemlike_attachment *at, unsigned long page)
{
	unsigned long seq = 0;
	bool failed;

	spin_lock(&at->lock);
	failed = at->failed && at->failed_page == page;
	if (failed) {
		seq = at->failed_seq;
		at->failed = false;
	}
	spin_unlock(&at->lock);
	if (failed && at->ops->failed_since)
		failed = at->ops->failed_since(at, seq);
	return failed;
}

/*
 * A touch of an attachment. The fault runs under the attaching process's mmap lock (or
 * its VMA's); under it the kind's map takes no mmap lock. The kind's take, which needs
 * the owner's, runs only once ours is given up, and the fault is then retried. A fault
 * that cannot be retried (a kernel access without ALLOW_RETRY) gets SIGBUS.
 */
static vm_fault_t knemlike_attachment_fault(struct vm_fault *vmf)
{
	struct knemlike_attachment *at = vmf->vma->vm_private_data;
	struct knemlike_touch touch;
	vm_fault_t ret;
	int err;

	if (!knemlike_touch_init(vmf, at, &touch))
		return VM_FAULT_SIGBUS;
	if (!at->ops->map(vmf, at, &touch, &ret))
		return ret;
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY))
		return VM_FAULT_SIGBUS;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;	/* the lock stays held: that is the contract */
	if ((vmf->flags & FAULT_FLAG_TRIED) && knemlike_attachment_failed(at, touch.page))
		return VM_FAULT_SIGBUS;
	kref_get(&at->ref);		/* the VMA may go once our lock is given up */
	knemlike_release_fault_lock(vmf);
	err = at->ops->take(at, &touch);
	/* -EAGAIN: the owner's mapping changed meanwhile, try again. */
	if (err && err != -EINTR && err != -EAGAIN) {
		spin_lock(&at->lock);
		at->failed = true;
		at->failed_page = touch.page;
		at->failed_seq = touch.seq;
		spin_unlock(&at->lock);
	}
	knemlike_attachment_put(at);
	return VM_FAULT_RETRY;
}

/* A store to a page an attachment maps read-only: the kind says what then. */
static vm_fault_t knemlike_attachment_pfn_mkwrite(struct vm_fault *vmf)
{
	struct knemlike_attachment *at = vmf->vma->vm_private_data;
	struct knemlike_touch touch;

	if (!knemlike_touch_init(vmf, at, &touch))
		return VM_FAULT_SIGBUS;
	return at->ops->pfn_mkwrite(vmf, at, &touch);
}

static void knemlike_attachment_vm_open(struct vm_area_struct *vma)
{
	struct knemlike_attachment *at = vma->vm_private_data;

	kref_get(&at->ref);
}

static void knemlike_attachment_vm_close(struct vm_area_struct *vma)
{
	knemlike_attachment_put(vma->vm_private_data);
}

static const struct vm_operations_struct knemlike_attachment_vm_ops = {
	.open = knemlike_attachment_vm_open,
	.close = knemlike_attachment_vm_close,
	.fault = knemlike_attachment_fault,
	.pfn_mkwrite = knemlike_attachment_pfn_mkwrite,
};

/* The mapping of at that holds addr, as the touch that is mapping page there left it;
 * NULL if it is gone or moved. Under the mmap lock of current->mm.
 */
struct vm_area_struct *knemlike_attachment_vma(struct knemlike_attachment *at,
					       unsigned long addr, unsigned long page)
{
	struct vm_area_struct *vma = vma_lookup(current->mm, addr);

	if (!vma || vma->vm_ops != &knemlike_attachment_vm_ops || vma->vm_private_data != at ||
	    vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT) != at->base + page)
		return NULL;
	return vma;
}

/*
 * mmap of a file attachments map: only what a grant of this thread on grants names,
 * whole, with no more access than the grant's. Returns -EACCES otherwise (a guessed
 * offset included). Called with the caller's mmap lock held for writing.
 */
int knemlike_attachment_mmap(struct vm_area_struct *vma, struct list_head *grants,
			     struct mutex *lock)
{
	struct knemlike_attachment *at, *found = NULL;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EACCES;
	mutex_lock(lock);
	list_for_each_entry(at, grants, grant_link) {
		if (at->grantee == current && at->base + at->first == vma->vm_pgoff &&
		    at->nr == vma_pages(vma) && (at->writable || !(vma->vm_flags & VM_WRITE))) {
			list_del_init(&at->grant_link);
			found = at;
			break;
		}
	}
	mutex_unlock(lock);
	if (!found)
		return -EACCES;
	/* Never inherited, never grown, never executable, writable only as granted, out of
	 * reach of get_user_pages. VM_IO too: madvise(MADV_DOFORK) clears VM_DONTCOPY
	 * except on VM_IO mappings, so without it an attachment could be carried into a
	 * child by fork.
	 */
	knemlike_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
			      VM_DONTCOPY);
	/* Never executable (READ_IMPLIES_EXEC asks for it), writable only as granted. */
	knemlike_vm_flags_clear(vma, VM_EXEC | VM_MAYEXEC |
				(found->writable ? 0 : VM_MAYWRITE));
	vma->vm_private_data = found;	/* the grant's reference passes to the VMA */
	vma->vm_ops = &knemlike_attachment_vm_ops;
	return 0;
}

/*
 * Map at into the caller: a grant on grants (under lock) that only this thread's mmap
 * takes, then vm_mmap() of file. The caller's reference becomes the grant's. Returns
 * the address, or an errno as vm_mmap() does.
 */
unsigned long knemlike_attachment_map(struct knemlike_attachment *at, struct file *file,
				      struct list_head *grants, struct mutex *lock)
{
	unsigned long addr;

	/* This one keeps at while the mapping is made (once mapped, another thread may
	 * unmap it at once).
	 */
	kref_get(&at->ref);
	mutex_lock(lock);
	list_add(&at->grant_link, grants);
	mutex_unlock(lock);
	addr = vm_mmap(file, 0, at->nr << PAGE_SHIFT,
		       PROT_READ | (at->writable ? PROT_WRITE : 0), MAP_SHARED,
		       (at->base + at->first) << PAGE_SHIFT);
	/* Not mapped (vm_mmap failed before it came to our handler): take the grant back.
	 * Only this thread's mmap takes it, so a mapping made means ours was.
	 */
	mutex_lock(lock);
	if (!list_empty(&at->grant_link)) {
		list_del_init(&at->grant_link);
		knemlike_attachment_put(at);	/* the grant's, not the last */
		WARN_ON_ONCE(!IS_ERR_VALUE(addr));
	}
	mutex_unlock(lock);
	knemlike_attachment_put(at);
	return addr;
}

/* The device file is closing: grants never mapped go. (Mappings hold the file open.) */
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
