// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: attachments of held regions -- a peer's region mapped into the caller
 * (KNEMLIKE_IOC_ATTACH). What both kinds of attachment share (the grant, mmap, the
 * fault): knemlike_attach.c.
 *
 * Every open file of the device shares one address_space (knemlike_attach_mapping()),
 * and each region has a window of 512 GiB in it: its index times KNEMLIKE_WINDOW_SHIFT.
 * An attachment maps that window, and its page-table entries point at the pages the
 * region holds (KNEMLIKE_FLAG_HOLD_PAGES). Whatever may make those pages go -- a change
 * of the owner's mapping (the region's MMU notifier), DESTROY, close, the owner's exit --
 * first unmaps the window from every process that maps it, with unmap_mapping_range(),
 * and only then lets the pages go. A touch afterwards faults, and maps the pages held
 * then (under the fault's own lock: they are pinned already), or takes them again with
 * no mmap lock but the owner's, or raises SIGBUS.
 *
 * Why not a page reference per mapped page (vm_insert_page): the owner's anonymous
 * pages would gain a second, file-like reverse map in another process, which the kernel
 * does not support; and it would keep the old pages alive after the owner's mapping
 * changed, which is what coherence must prevent.
 *
 * Locks: under the fault's lock only the region's revoke semaphore and held->sem are
 * taken, for reading, and neither is held by anyone who waits for an mmap lock. The
 * owner's mmap lock is taken only by knemlike_region_attach_take(), after the fault has
 * given up its own.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "knemlike_internal.h"

/* A region's window in the shared address_space: 512 GiB per index. */
#define KNEMLIKE_WINDOW_SHIFT	39

/* A held region mapped into a process. */
struct knemlike_region_attachment {
	struct knemlike_attachment at;
	struct knemlike_region *region;	/* referenced */
};

static struct knemlike_region *knemlike_attached_region(struct knemlike_attachment *at)
{
	return container_of(at, struct knemlike_region_attachment, at)->region;
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
	unmap_mapping_range(knemlike_attach_mapping(),
			    (loff_t)knemlike_window(region) << PAGE_SHIFT,
			    1ULL << KNEMLIKE_WINDOW_SHIFT, 1);
	knemlike_count(attach_revokes);
}

static void knemlike_region_attach_free(struct knemlike_attachment *at)
{
	struct knemlike_region_attachment *rat;

	rat = container_of(at, struct knemlike_region_attachment, at);
	knemlike_region_put(rat->region);
	kfree(rat);
}

/*
 * Under the fault's lock: map the pages of the touch's window, if the region is live
 * and holds its pages (0, *ret set). -EAGAIN when nothing is held now, -ENOENT when what
 * is held has a hole at the touched page: pages to take first.
 */
static int knemlike_region_attach_map(struct vm_fault *vmf, struct knemlike_attachment *at,
				      struct knemlike_touch *t, vm_fault_t *ret)
{
	struct knemlike_region *region = knemlike_attached_region(at);
	int err;

	down_read(&region->revoke);
	if (READ_ONCE(region->retired)) {
		*ret = VM_FAULT_SIGBUS;
		err = 0;
	} else {
		err = knemlike_held_map(region, vmf->vma, t, ret);
	}
	up_read(&region->revoke);
	if (!err && *ret == VM_FAULT_NOPAGE)
		knemlike_count(attach_faults);
	return err;
}

/*
 * Hold the region's pages again for a touch of its page, or fill the hole there: with no
 * mmap lock held. 0, or the errno that a copy would report; t->seq says where the
 * region's notifier stood before the last try (0 once it is retired).
 */
static int knemlike_region_attach_take(struct knemlike_attachment *at,
				       struct knemlike_touch *t)
{
	struct knemlike_region *region = knemlike_attached_region(at);
	unsigned long lo = round_down(t->page, KNEMLIKE_FAULT_PAGES);
	unsigned long hi = min(lo + KNEMLIKE_FAULT_PAGES, at->nr);
	int err, tries;

	for (tries = 0; tries < 3; tries++) {
		down_read(&region->revoke);
		if (READ_ONCE(region->retired)) {
			t->seq = 0;
			err = -ENOENT;
		} else {
			t->seq = knemlike_held_seq(region);
			err = knemlike_held_refresh_at(region, t->page, lo, hi);
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

/* A take failed at seq: whether it would again, nothing of the owner's mapping over the
 * region having changed since.
 */
static bool knemlike_region_attach_failed_since(struct knemlike_attachment *at,
						unsigned long seq)
{
	struct knemlike_region *region = knemlike_attached_region(at);
	bool failed;

	down_read(&region->revoke);
	failed = READ_ONCE(region->retired) || !knemlike_held_changed(region, seq);
	up_read(&region->revoke);
	return failed;
}

/* A store to a page mapped read-only (held for reading only: the owner made it so). */
static vm_fault_t knemlike_region_attach_pfn_mkwrite(struct vm_fault *vmf,
						     struct knemlike_attachment *at,
						     struct knemlike_touch *t)
{
	return knemlike_held_may_write(knemlike_attached_region(at), t->page);
}

static const struct knemlike_attachment_ops knemlike_region_attach_ops = {
	.map = knemlike_region_attach_map,
	.take = knemlike_region_attach_take,
	.failed_since = knemlike_region_attach_failed_since,
	.pfn_mkwrite = knemlike_region_attach_pfn_mkwrite,
	.free = knemlike_region_attach_free,
};

/* mmap of the device: only the window of a grant this open file holds. */
int knemlike_attach_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct knemlike_file *kf = file->private_data;

	return knemlike_attachment_mmap(vma, &kf->grants, &kf->lock);
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
	struct knemlike_region_attachment *rat;
	struct knemlike_region *region;
	const struct knemlike_segment *seg;
	unsigned long addr, len, offset;
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
	rat = kzalloc(sizeof(*rat), GFP_KERNEL_ACCOUNT);
	if (!rat) {
		err = -ENOMEM;
		goto out_put;
	}
	seg = &region->segments[0];
	len = PAGE_ALIGN(seg->addr + seg->len) - (seg->addr & PAGE_MASK);
	offset = seg->addr & ~PAGE_MASK;
	rat->region = region;	/* our reference passes to the attachment */
	knemlike_attachment_init(&rat->at, &knemlike_region_attach_ops, knemlike_window(region),
				 0, len >> PAGE_SHIFT, req->prot & KNEMLIKE_PROT_WRITE);
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
		knemlike_attachment_put(&rat->at);
		return err;
	}
	/* Once mapped, another thread may unmap it, and the region go, at once. */
	addr = knemlike_attachment_map(&rat->at, file, &kf->grants, &kf->lock);
	if (IS_ERR_VALUE(addr))
		return (int)addr;
	req->map_addr = addr;
	req->map_len = len;
	req->addr = addr + offset;
	return 0;

out_put:
	knemlike_region_put(region);
	return err;
}
