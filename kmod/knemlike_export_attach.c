// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: attachments of exports (KNEMLIKE_IOC_EXPORT_ATTACH) and their fault.
 *
 * An attachment is a shared VM_PFNMAP mapping of the export's pseudo file
 * (knemlike_export.c): page p of the file is page p of the export, so unmapping a range
 * of that file's address_space reaches every attachment of it, in every process. As for
 * attachments of held regions (knemlike_attach.c), mmap() alone grants nothing: the
 * ioctl checks the cookie and the caller's rights and leaves a grant that only its own
 * thread's mmap, made inside the ioctl, can take.
 *
 * A touch maps the owner's pages as they are then; nothing stays pinned. The fault gives
 * up the attaching process's lock, and then (knemlike_export_fill):
 *   1. under the export's revoke semaphore (read): read the notifier's sequence, take the
 *      owner's mmap lock (the only mmap lock held), take the pages of the fault window
 *      that lie in the owner's mapping at the touched page (at most 256; pinned for
 *      writing for a store, as the owner's own fault would, referenced for a load:
 *      knemlike_export_gup()), drop the lock;
 *   2. take the attaching process's own mmap lock, find the same attachment at the same
 *      place, make its page tables there, and under the export's sem (read), if the
 *      sequence has not moved and the export is live, insert the pages' frames and record
 *      them as mapped; drop the locks;
 *   3. give the pages back (dirty when mapped writable).
 * and returns VM_FAULT_RETRY: the retried access finds its page mapped. The notifier
 * takes sem for writing to move the sequence, so any change of the owner's mapping either
 * comes after step 2 (and unmaps what it recorded) or makes it map nothing. The pages
 * cannot be reused while held in between.
 *
 * No allocation happens under sem (the page tables are made before it is taken): the
 * notifier runs in reclaim and would wait for sem.
 */
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

/* A touch maps up to this many pages around it: one chunk of what is recorded. */
#define KNEMLIKE_EXPORT_FAULT_PAGES	(1UL << KNEMLIKE_EXPORT_CHUNK_SHIFT)

/*
 * An export mapped into a process. References: its grant until mmap takes it over, then
 * each VMA that maps it (a split or mremap adds one, through vm_ops->open).
 *
 * Charged to its attacher's user (max_user_kb): its structure, from ATTACH; the chunks of
 * what is mapped that its touches make (knemlike_export_track()); and, once the export
 * is retired, what is left of the export (KNEMLIKE_EXPORT_COST), which it keeps alive.
 */
struct knemlike_xattach {
	struct kref ref;
	struct knemlike_export *export;	/* referenced */
	struct knemlike_user *user;	/* the attacher's effective uid */
	unsigned long cost;		/* charged to user, but the chunks (export->grant_lock) */
	struct list_head link;		/* in export->attachments until freed */
	struct list_head grant_link;	/* in export->grants until mapped */
	struct task_struct *grantee;	/* only this thread's mmap takes the grant */
	unsigned long first;		/* the export's pages [first, first + nr) */
	unsigned long nr;
	bool writable;
	spinlock_t lock;		/* protects failed, failed_page */
	bool failed;			/* a take for failed_page found nothing to map */
	unsigned long failed_page;
};

static void knemlike_xattach_free(struct kref *ref)
{
	struct knemlike_xattach *at = container_of(ref, struct knemlike_xattach, ref);
	struct knemlike_export *export = at->export;

	mutex_lock(&export->grant_lock);
	list_del(&at->link);
	mutex_unlock(&export->grant_lock);
	knemlike_user_sub(at->user, at->cost);
	knemlike_export_put(export);
	knemlike_count_add(attachments, -1);
	kfree(at);
}

/* The export is left to at to keep: at's user pays for it. Under export->grant_lock. */
static void knemlike_xattach_keep(struct knemlike_xattach *at)
{
	knemlike_user_add_over(at->user, KNEMLIKE_EXPORT_COST);
	at->cost += KNEMLIKE_EXPORT_COST;
}

/*
 * The export was retired (knemlike_export_retire()): from now on each of its attachments
 * pays for what is left of it, which the owner can no longer give back (only unmapping
 * them does). Counted even past max_user_kb: the attacher's own requests then get ENOSPC
 * until it unmaps. An attachment made later pays as it is linked.
 */
void knemlike_export_attachments_keep(struct knemlike_export *export)
{
	struct knemlike_xattach *at;

	mutex_lock(&export->grant_lock);
	export->kept = true;
	list_for_each_entry(at, &export->attachments, link)
		knemlike_xattach_keep(at);
	mutex_unlock(&export->grant_lock);
}

static void knemlike_xattach_put(struct knemlike_xattach *at)
{
	kref_put(&at->ref, knemlike_xattach_free);
}

/* Memory of the owner's that can be mapped: readable, and memory, not a device's. */
static bool knemlike_export_vma_ok(const struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_READ) && !(vma->vm_flags & (VM_IO | VM_PFNMAP));
}

/* The pages a touch took, to map: export pages [lo, lo + nr). */
struct knemlike_take {
	unsigned long lo, nr;
	unsigned long seq;		/* the notifier's, before they were taken */
	bool writable;			/* for a store: pinned for writing, mapped writable */
	struct page *pages[KNEMLIKE_EXPORT_FAULT_PAGES];
};

/*
 * nr pages of mm from start, for t: pinned for writing for a store (breaking
 * copy-on-write, as the owner's own store would), referenced for a load. Not pinned for
 * reading: GUP unshares an anonymous page that is not exclusive (copy-on-write after
 * fork, KSM) for a read-only pin, as a write would (gup_must_unshare()). A reference
 * keeps the page as a pin does until it is mapped; then the notifier keeps it coherent.
 */
static long knemlike_export_gup(struct mm_struct *mm, unsigned long start,
				unsigned long nr, struct knemlike_take *t)
{
	return knemlike_gup_remote(mm, start, nr, t->writable ? FOLL_WRITE : 0, t->pages,
				   t->writable);
}

/* Give back nr pages knemlike_export_gup() took (marked dirty if dirty: written). */
static void knemlike_export_ungup(struct knemlike_take *t, unsigned long nr, bool dirty)
{
	if (t->writable)
		unpin_user_pages_dirty_lock(t->pages, nr, dirty);
	else
		while (nr)
			put_page(t->pages[--nr]);
}

/*
 * Step 1: take the owner's pages of [lo, hi) around page, within the owner's mapping at
 * page, under the owner's mmap lock only; for writing (t->writable) for a store only: a
 * load must not break copy-on-write, unshare KSM pages, dirty pages or need what
 * userfaultfd write-protects. 0, -ESTALE (nothing there that can be mapped, or not
 * writable for a store), -EINTR, or what knemlike_export_hold() says (the export
 * retired, or its owner gone or changed: retired now).
 */
static int knemlike_export_take(struct knemlike_xattach *at, unsigned long page,
				unsigned long lo, unsigned long hi, struct knemlike_take *t)
{
	struct knemlike_export *export = at->export;
	struct vm_area_struct *vma;
	struct mm_struct *mm;
	unsigned long base;
	long got;
	int err = 0;

	err = knemlike_export_hold(export);
	if (err)
		return err;
	mm = export->mm;
	t->seq = mmu_interval_read_begin(&export->mni);
	if (!mmget_not_zero(mm)) {
		err = -ESRCH;
		goto out_revoke;
	}
	if (mmap_read_lock_killable(mm)) {
		err = -EINTR;
		goto out_mm;
	}
	base = export->start;
	vma = vma_lookup(mm, base + (page << PAGE_SHIFT));
	if (!vma || !knemlike_export_vma_ok(vma) ||
	    (t->writable && !(vma->vm_flags & VM_WRITE))) {
		err = -ESTALE;
		goto out_unlock;
	}
	/* Never asks GUP for a page outside this mapping (a stack's guard gap warns). The
	 * mapping may begin before the export, and end after it (hi is within it).
	 */
	if (vma->vm_start > base)
		lo = max(lo, (vma->vm_start - base) >> PAGE_SHIFT);
	hi = min(hi, (vma->vm_end - base) >> PAGE_SHIFT);
	got = knemlike_export_gup(mm, base + (lo << PAGE_SHIFT), hi - lo, t);
	if (got > 0 && page >= lo + got) {	/* stopped short of the touched page */
		knemlike_export_ungup(t, got, false);
		got = 0;
	}
	/* A page before the touched one that cannot be pinned (missing under userfaultfd,
	 * say) stops the window there, or fails it from its first page: the touched page
	 * still has what memory it has, so take from it.
	 */
	if (got <= 0 && got != -EINTR && lo < page) {
		lo = page;
		got = knemlike_export_gup(mm, base + (lo << PAGE_SHIFT), hi - lo, t);
	}
	if (got <= 0) {
		err = got == -EINTR || got == -ENOMEM ? (int)got : -ESTALE;
		goto out_unlock;
	}
	t->lo = lo;
	t->nr = got;
	knemlike_count_add(export_pages_pinned, got);
out_unlock:
	mmap_read_unlock(mm);
out_mm:
	mmput(mm);
out_revoke:
	knemlike_export_unhold(export);
	return err;
}

static int knemlike_no_pte_fn(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

/*
 * Step 2: map what was taken into the attachment at addr (the touched page's address),
 * in the caller's address space, under its mmap lock. 0 (mapped), -EAGAIN (the owner's
 * mapping changed meanwhile, or the attachment is not there any more: the access is
 * retried), -ENOENT (retired), -ENOMEM, -EINTR.
 */
static int knemlike_export_map(struct knemlike_xattach *at, unsigned long addr,
			       unsigned long page, struct knemlike_take *t,
			       const struct vm_operations_struct *ops)
{
	struct knemlike_export *export = at->export;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long lo, hi, i, start, *bits;
	vm_fault_t ret = VM_FAULT_NOPAGE;
	pgprot_t prot;
	int err = 0;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, addr);
	if (!vma || vma->vm_ops != ops || vma->vm_private_data != at ||
	    vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT) != page) {
		err = -EAGAIN;
		goto out_unlock;
	}
	lo = max(t->lo, vma->vm_pgoff);
	hi = min(t->lo + t->nr, vma->vm_pgoff + vma_pages(vma));
	start = vma->vm_start + ((lo - vma->vm_pgoff) << PAGE_SHIFT);
	if (apply_to_page_range(mm, start, (hi - lo) << PAGE_SHIFT, knemlike_no_pte_fn, NULL)) {
		err = -ENOMEM;
		goto out_unlock;
	}
	/* A writable attachment's vm_page_prot is read-only (it has pfn_mkwrite): its
	 * flags' protection maps a page writable.
	 */
	prot = t->writable ? vm_get_page_prot(vma->vm_flags) : vma->vm_page_prot;
	bits = knemlike_export_bits(export, page);
	down_read(&export->sem);
	if (export->retired) {
		err = -ENOENT;
	} else if (mmu_interval_read_retry(&export->mni, t->seq)) {
		err = -EAGAIN;
	} else {
		for (i = lo; i < hi && ret == VM_FAULT_NOPAGE; i++) {
			set_bit(i & (KNEMLIKE_EXPORT_FAULT_PAGES - 1), bits);
			ret = vmf_insert_pfn_prot(vma, start + ((i - lo) << PAGE_SHIFT),
						  page_to_pfn(t->pages[i - t->lo]), prot);
		}
		if (ret != VM_FAULT_NOPAGE)
			err = -ENOMEM;
		knemlike_count(export_faults);
		knemlike_count_add(export_pages_mapped, i - lo);
	}
	up_read(&export->sem);
out_unlock:
	mmap_read_unlock(mm);
	return err;
}

static const struct vm_operations_struct knemlike_xattach_vm_ops;

/* Steps 1 to 3 for a touch (a store if write) of the export's page (window [lo, hi)) at
 * addr.
 */
static int knemlike_export_fill(struct knemlike_xattach *at, unsigned long addr,
				unsigned long page, unsigned long lo, unsigned long hi,
				bool write)
{
	struct knemlike_take *t = kmalloc(sizeof(*t), GFP_KERNEL);
	int err;

	if (!t)
		return -ENOMEM;
	t->writable = write;
	err = knemlike_export_take(at, page, lo, hi, t);
	if (err)
		goto out_free;
	err = knemlike_export_track(at->export, page, at->user);
	if (!err)
		err = knemlike_export_map(at, addr, page, t, &knemlike_xattach_vm_ops);
	/* Marked dirty when they may have been written through the attachment: a store
	 * there does not reach the owner's page table, whose dirty bit reclaim reads.
	 */
	knemlike_export_ungup(t, t->nr, t->writable && !err);
	knemlike_count_add(export_pages_pinned, -(s64)t->nr);
out_free:
	kfree(t);
	return err;
}

/* For a retried fault: whether the take for this page found nothing to map. Then the
 * fault gives SIGBUS rather than trying again for ever; a later touch is a new fault.
 */
static bool knemlike_xattach_failed(struct knemlike_xattach *at, unsigned long page)
{
	bool failed;

	spin_lock(&at->lock);
	failed = at->failed && at->failed_page == page;
	if (failed)
		at->failed = false;
	spin_unlock(&at->lock);
	return failed;
}

/* A touch's window: the touched page's chunk, within the attachment and this mapping. */
static void knemlike_xattach_window(struct vm_area_struct *vma, unsigned long page,
				    unsigned long *lo, unsigned long *hi)
{
	struct knemlike_xattach *at = vma->vm_private_data;
	unsigned long chunk = round_down(page, KNEMLIKE_EXPORT_FAULT_PAGES);

	*lo = max3(chunk, at->first, vma->vm_pgoff);
	*hi = min3(chunk + KNEMLIKE_EXPORT_FAULT_PAGES, at->first + at->nr,
		   vma->vm_pgoff + vma_pages(vma));
}

/*
 * A touch of an attachment of an export. The same lock order as knemlike_attach_fault():
 * the fault's own lock (the attaching process's mmap lock, or its VMA's) is given up
 * before the owner's mmap lock is taken, and the owner's is given up before the
 * attaching process's is taken again to map the pages; never one mm's lock under
 * another's. Each touch maps at most KNEMLIKE_EXPORT_FAULT_PAGES pages.
 */
static vm_fault_t knemlike_xattach_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct knemlike_xattach *at = vma->vm_private_data;
	struct knemlike_export *export = at->export;
	unsigned long page = vmf->pgoff, lo, hi;
	bool write;
	int err;

	if (page - at->first >= at->nr)
		return VM_FAULT_SIGBUS;
	if (READ_ONCE(export->retired) || READ_ONCE(export->owner_gone))
		return VM_FAULT_SIGBUS;
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY))
		return VM_FAULT_SIGBUS;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;	/* the lock stays held: that is the contract */
	if ((vmf->flags & FAULT_FLAG_TRIED) && knemlike_xattach_failed(at, page))
		return VM_FAULT_SIGBUS;
	knemlike_xattach_window(vma, page, &lo, &hi);
	write = vmf->flags & FAULT_FLAG_WRITE;
	kref_get(&at->ref);		/* the VMA may go once our lock is given up */
	knemlike_release_fault_lock(vmf);
	err = knemlike_export_fill(at, vmf->address & PAGE_MASK, page, lo, hi, write);
	if (err && err != -EINTR && err != -EAGAIN) {
		spin_lock(&at->lock);
		at->failed = true;
		at->failed_page = page;
		spin_unlock(&at->lock);
	}
	knemlike_xattach_put(at);
	return VM_FAULT_RETRY;
}

/*
 * A store to a page mapped read-only in a writable attachment: a load mapped it (pages
 * taken for reading), or the attacher's mprotect() made it read-only since. Its frame
 * may be one the owner shares copy-on-write, so it is never made writable in place:
 * unmap the touched page's window from this mapping, and the store, retried, faults
 * again and takes the pages for writing (or gets SIGBUS where the owner's memory is
 * not writable). Runs under the mmap lock: a fault under a VMA's own lock is retried
 * with it before pfn_mkwrite is called (vmf_can_call_fault()).
 */
static vm_fault_t knemlike_xattach_pfn_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long lo, hi;

	knemlike_xattach_window(vma, vmf->pgoff, &lo, &hi);
	knemlike_zap_pfn_range(vma, vma->vm_start + ((lo - vma->vm_pgoff) << PAGE_SHIFT),
			       (hi - lo) << PAGE_SHIFT);
	return VM_FAULT_NOPAGE;
}

static void knemlike_xattach_vm_open(struct vm_area_struct *vma)
{
	struct knemlike_xattach *at = vma->vm_private_data;

	kref_get(&at->ref);
}

static void knemlike_xattach_vm_close(struct vm_area_struct *vma)
{
	knemlike_xattach_put(vma->vm_private_data);
}

static const struct vm_operations_struct knemlike_xattach_vm_ops = {
	.open = knemlike_xattach_vm_open,
	.close = knemlike_xattach_vm_close,
	.fault = knemlike_xattach_fault,
	.pfn_mkwrite = knemlike_xattach_pfn_mkwrite,
};

/*
 * mmap of an export's pseudo file: only what a grant of this thread names, whole, with
 * no more access than the grant's; EACCES otherwise. Called with the caller's mmap lock
 * held for writing.
 */
int knemlike_export_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct knemlike_export *export = file->private_data;
	struct knemlike_xattach *at, *found = NULL;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EACCES;
	mutex_lock(&export->grant_lock);
	list_for_each_entry(at, &export->grants, grant_link) {
		if (at->grantee == current && at->first == vma->vm_pgoff &&
		    at->nr == vma_pages(vma) && (at->writable || !(vma->vm_flags & VM_WRITE))) {
			list_del_init(&at->grant_link);
			found = at;
			break;
		}
	}
	mutex_unlock(&export->grant_lock);
	if (!found)
		return -EACCES;
	knemlike_attach_seal(vma, found->writable);
	vma->vm_private_data = found;	/* the grant's reference passes to the VMA */
	vma->vm_ops = &knemlike_xattach_vm_ops;
	return 0;
}

/* The checks of an attach, in an order that tells another user nothing of the export;
 * last, whether its owner is still as it was at EXPORT (retiring the export if not).
 */
static int knemlike_export_attach_check(struct knemlike_export *export,
					const struct knemlike_export_attach *req)
{
	u64 end;
	int err;

	if (!(export->flags & KNEMLIKE_EXPORT_ANY_USER) &&
	    !uid_eq(current_euid(), export->ids.euid))
		return -EPERM;
	if (check_add_overflow(req->offset, req->len, &end) ||
	    end > (u64)export->nr_pages << PAGE_SHIFT)
		return -ERANGE;
	if ((req->prot & KNEMLIKE_PROT_WRITE) && (export->flags & KNEMLIKE_EXPORT_READ_ONLY))
		return -EACCES;
	err = knemlike_export_hold(export);
	if (!err)
		knemlike_export_unhold(export);
	return err;
}

int knemlike_export_attach(struct knemlike_export_attach *req)
{
	const u32 prot_all = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE;
	struct knemlike_export *export;
	struct knemlike_xattach *at;
	unsigned long addr;
	int err;

	if (!IS_ENABLED(CONFIG_MMU_NOTIFIER))
		return -EOPNOTSUPP;
	if (req->flags || !(req->prot & KNEMLIKE_PROT_READ) || (req->prot & ~prot_all) ||
	    !req->len || !PAGE_ALIGNED(req->offset) || !PAGE_ALIGNED(req->len))
		return -EINVAL;
	export = knemlike_export_get(&req->cookie);
	if (!export)
		return -ENOENT;
	err = knemlike_export_attach_check(export, req);
	if (err)
		goto out_put;
	at = kzalloc(sizeof(*at), GFP_KERNEL_ACCOUNT);
	if (!at) {
		err = -ENOMEM;
		goto out_put;
	}
	at->user = knemlike_user_get(current_euid());
	err = at->user ? knemlike_user_add(at->user, sizeof(*at)) : -ENOMEM;
	if (err) {
		kfree(at);
		goto out_put;
	}
	at->cost = sizeof(*at);
	kref_init(&at->ref);
	spin_lock_init(&at->lock);
	at->export = export;	/* our reference passes to the attachment */
	at->grantee = current;	/* compared, never dereferenced */
	at->first = req->offset >> PAGE_SHIFT;
	at->nr = req->len >> PAGE_SHIFT;
	at->writable = req->prot & KNEMLIKE_PROT_WRITE;
	knemlike_count(attachments);
	/* One reference is the grant's; this one keeps at while the mapping is made. */
	kref_get(&at->ref);
	mutex_lock(&export->grant_lock);
	list_add(&at->grant_link, &export->grants);
	list_add(&at->link, &export->attachments);
	if (export->kept)	/* retired since the check */
		knemlike_xattach_keep(at);
	mutex_unlock(&export->grant_lock);
	addr = vm_mmap(export->map_file, 0, req->len,
		       PROT_READ | (at->writable ? PROT_WRITE : 0), MAP_SHARED, req->offset);
	/* Not mapped (vm_mmap failed before our handler): take the grant back. */
	mutex_lock(&export->grant_lock);
	if (!list_empty(&at->grant_link)) {
		list_del_init(&at->grant_link);
		knemlike_xattach_put(at);	/* the grant's, not the last */
		WARN_ON_ONCE(!IS_ERR_VALUE(addr));
	}
	mutex_unlock(&export->grant_lock);
	if (!IS_ERR_VALUE(addr))
		req->addr = addr;
	knemlike_xattach_put(at);
	return IS_ERR_VALUE(addr) ? (int)addr : 0;

out_put:
	knemlike_export_put(export);
	return err;
}
