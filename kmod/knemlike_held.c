// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: regions that hold their pages between copies (KNEMLIKE_FLAG_HOLD_PAGES).
 *
 * Such a region pins all its owner's pages once, at creation, so that a copy from or to
 * it walks no page table and pins nothing of the owner's: a registration that saves
 * work. It stays coherent through an MMU interval notifier over the span of its
 * segments: before the owner's mapping there changes in any way (munmap, mremap,
 * MADV_DONTNEED, mprotect, fork's write protection, a THP split, NUMA hinting,
 * migration, exit), the notifier drops the held pages, and the next copy takes them
 * again from the mapping as it is then (mmu_interval_read_begin/read_retry), or, when
 * that fails, goes the way of a region that holds nothing (knemlike_copy.c), which finds
 * the current mapping or ESTALE.
 *
 * Locks. held->sem is taken for reading by a copy step that uses the pages (a memcpy
 * between pinned pages: it cannot fault) and for writing by the notifier and by whoever
 * installs or drops the pages. Nothing holding it takes an mmap lock or allocates, so
 * the notifier, which runs under the owner's mmap lock and in reclaim, never waits for
 * more than one step's memcpy. When it cannot sleep (the OOM reaper) and a step is
 * running, it says so and the reaper comes back.
 *
 * Charging. Held pages count in the owner's pinned_vm (VmPin in /proc/PID/status)
 * against the RLIMIT_MEMLOCK it had at creation (none with CAP_IPC_LOCK), as RDMA
 * registrations do: over it, CREATE fails with EDQUOT and a later retake is skipped.
 * Dropped pages are unpinned by a work item (the notifier may not sleep on page locks),
 * which uncharges them.
 */
#include <linux/capability.h>
#include <linux/highmem.h>
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

#ifdef CONFIG_MMU_NOTIFIER

/* A run of pinned pages, one region's worth, charged to mm. */
struct knemlike_pageset {
	struct llist_node dropped;
	struct mm_struct *mm;		/* mmgrab'd: charged to its pinned_vm */
	unsigned long nr;
	unsigned long holes;		/* pages the owner had no memory at: NULL, not pinned */
	bool writable;			/* pinned for writing: copies may go to the region */
	bool dirty;			/* peers may have written: unpin dirty */
	struct page *pages[];
};

struct knemlike_held {
	struct mmu_interval_notifier mni;
	struct rw_semaphore sem;
	struct knemlike_pageset *set;	/* NULL: nothing held now */
	struct knemlike_region *region;	/* whose pages these are (it outlives this) */
	bool writable;			/* pinned for writing (the region allows PROT_WRITE) */
	bool attached;			/* ever attached: its pages may be in peers' page tables */
	unsigned long limit;		/* the owner's RLIMIT_MEMLOCK at creation, in pages */
	struct knemlike_span *spans;	/* the segments' pages, sorted and merged */
	u32 nr_spans;
	u64 seg_first[];		/* per segment: index of its first page in set->pages */
};

/* Pages [start, end) of the owner's, as addresses: a segment's, or several merged. */
struct knemlike_span {
	unsigned long start, end;
};

static LLIST_HEAD(knemlike_dropped);

/* Unpin the runs of pinned pages of set->pages[0, nr), holes skipped. */
static void knemlike_unpin_runs(struct page **pages, unsigned long nr, bool dirty)
{
	unsigned long i = 0, run;

	while (i < nr) {
		for (run = 0; i + run < nr && pages[i + run]; run++)
			;
		if (run)
			unpin_user_pages_dirty_lock(pages + i, run, dirty);
		i += run + 1;	/* past the run and the hole after it */
	}
}

static void knemlike_pageset_release(struct knemlike_pageset *set)
{
	unsigned long pinned = set->nr - set->holes;

	knemlike_unpin_runs(set->pages, set->nr, set->dirty);
	atomic64_sub(pinned, &set->mm->pinned_vm);
	knemlike_count_add(held_pages, -(s64)pinned);
	mmdrop(set->mm);
	kvfree(set);
}

static void knemlike_release_dropped(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&knemlike_dropped);
	struct knemlike_pageset *set, *next;

	llist_for_each_entry_safe(set, next, list, dropped)
		knemlike_pageset_release(set);
}

static DECLARE_WORK(knemlike_dropped_work, knemlike_release_dropped);

/*
 * Whether [start, end) meets a page of the region's. The notifier covers the span from
 * its first segment's start to its last's end, and changes in the gaps between segments
 * (another allocation's, or an attachment mapped there) concern it not: those leave its
 * pages held.
 */
static bool knemlike_held_meets(const struct knemlike_held *held, unsigned long start,
				unsigned long end)
{
	u32 lo = 0, hi = held->nr_spans;

	/* The last span that starts before end, if any, is the only one that may meet it:
	 * spans are sorted and disjoint, so every earlier one ends before that one starts.
	 */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (held->spans[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && held->spans[lo - 1].end > start;
}

/*
 * Whether a set of a one-segment region (the only kind that has holes) has no page held
 * in [start, end): then a change there concerns none of its pages. Scans the range's
 * entries, so only when the set has holes.
 */
static bool knemlike_set_all_holes(const struct knemlike_held *held,
				   const struct knemlike_pageset *set, unsigned long start,
				   unsigned long end)
{
	unsigned long base = held->spans[0].start, i, last;

	if (!set->holes || held->region->nr_segments != 1)
		return false;
	i = (max(start, base) - base) >> PAGE_SHIFT;
	last = min((end - base + PAGE_SIZE - 1) >> PAGE_SHIFT, set->nr);
	for (; i < last; i++) {
		if (set->pages[i])
			return false;
	}
	return true;
}

static bool knemlike_held_invalidate(struct mmu_interval_notifier *mni,
				     const struct mmu_notifier_range *range,
				     unsigned long cur_seq)
{
	struct knemlike_held *held = container_of(mni, struct knemlike_held, mni);
	bool attached = READ_ONCE(held->attached);
	struct knemlike_pageset *set;

	/* Not a page of ours: nothing to drop, and a take meanwhile may stand. */
	if (!knemlike_held_meets(held, range->start, range->end))
		return true;
	if (mmu_notifier_range_blockable(range))
		down_write(&held->sem);
	else if (attached || !down_write_trylock(&held->sem))
		return false;	/* unmapping the attachments sleeps: the reaper comes back */
	mmu_interval_set_seq(mni, cur_seq);
	set = held->set;
	if (set && knemlike_set_all_holes(held, set, range->start, range->end)) {
		up_write(&held->sem);	/* no page of it is held there: it stays */
		return true;
	}
	held->set = NULL;
	attached = held->attached;
	up_write(&held->sem);
	/* No attachment maps these pages once this returns (nor, as set is NULL, maps them
	 * again): done before they are unpinned, and before the owner's mapping changes.
	 * With nothing held, no attachment maps anything (a fault maps only held pages, and
	 * whoever dropped them unmapped it before unpinning them): no call then.
	 *
	 * This never runs inside another unmapping of attachments (which holds the shared
	 * address_space's i_mmap_rwsem for reading; a second read under a waiting writer
	 * would deadlock): that unmaps a VM_PFNMAP mapping, in a gap between our segments
	 * (ignored above) or over one of them, and then the pages we held there were dropped
	 * when that mapping replaced the owner's memory, and cannot be taken again from it
	 * (knemlike_held_vma_ok refuses VM_PFNMAP): set is NULL, or has holes there only.
	 */
	if (attached && set)
		knemlike_attach_zap(held->region);
	if (set) {
		knemlike_count(held_drops);
		llist_add(&set->dropped, &knemlike_dropped);
		schedule_work(&knemlike_dropped_work);
	}
	return true;
}

static const struct mmu_interval_notifier_ops knemlike_held_ops = {
	.invalidate = knemlike_held_invalidate,
};

/* Whether a mapping of the owner's can be held: readable, and memory, not a device's. */
static bool knemlike_held_vma_ok(const struct vm_area_struct *vma, bool writable)
{
	unsigned long need = VM_READ | (writable ? VM_WRITE : 0);

	return (vma->vm_flags & need) == need && !(vma->vm_flags & (VM_IO | VM_PFNMAP));
}

/* Whether [start, end) is all inside mappings of mm (its mmap lock held) that allow
 * reading, and writing if asked: checked for the whole region before any page is pinned,
 * so that a take that cannot succeed (the memory gone, or made read-only or PROT_NONE)
 * costs a walk of the mappings and pins nothing.
 */
static bool knemlike_held_mapped(struct mm_struct *mm, unsigned long start,
				 unsigned long end, bool writable)
{
	while (start < end) {
		struct vm_area_struct *vma = find_vma(mm, start);

		if (!vma || vma->vm_start > start || !knemlike_held_vma_ok(vma, writable))
			return false;
		start = vma->vm_end;
	}
	return true;
}

/* Whether every segment of the region lies in mappings that allow reading (and writing). */
static bool knemlike_held_all_mapped(struct knemlike_region *region, bool writable)
{
	u32 i;

	for (i = 0; i < region->nr_segments; i++) {
		const struct knemlike_segment *seg = &region->segments[i];

		if (!knemlike_held_mapped(region->mm, seg->addr & PAGE_MASK,
					  PAGE_ALIGN(seg->addr + seg->len), writable))
			return false;
	}
	return true;
}

/* Whether every mapping of the owner's that meets the region allows writing (holes
 * aside): a set with holes is pinned for writing when the memory there is.
 */
static bool knemlike_held_present_writable(struct knemlike_region *region)
{
	u32 i;

	for (i = 0; i < region->nr_segments; i++) {
		const struct knemlike_segment *seg = &region->segments[i];
		unsigned long start = seg->addr & PAGE_MASK;
		unsigned long end = PAGE_ALIGN(seg->addr + seg->len);
		struct vm_area_struct *vma;

		for (; start < end; start = vma->vm_end) {
			vma = find_vma(region->mm, start);
			if (!vma || vma->vm_start >= end)
				break;
			if (knemlike_held_vma_ok(vma, false) && !(vma->vm_flags & VM_WRITE))
				return false;
		}
	}
	return true;
}

/*
 * Pin the pages of [first, end) that lie in mappings that can be held; the others are
 * holes (NULL). Counts the holes in set->holes. Returns the pages done, or an errno.
 */
static long knemlike_held_pin_holes(struct mm_struct *mm, unsigned long first,
				    unsigned long end, unsigned int gup_flags,
				    struct knemlike_pageset *set, unsigned long done)
{
	bool writable = gup_flags & FOLL_WRITE;

	while (first < end) {
		struct vm_area_struct *vma = find_vma(mm, first);
		unsigned long stop, n;
		long got;

		if (!vma || vma->vm_start >= end)
			stop = end;		/* nothing mapped from here to the end */
		else if (vma->vm_start > first)
			stop = vma->vm_start;	/* nothing mapped before this mapping */
		else if (!knemlike_held_vma_ok(vma, writable))
			stop = min(end, vma->vm_end);
		else
			stop = first;
		if (stop > first) {
			n = (stop - first) >> PAGE_SHIFT;
			memset(set->pages + done, 0, n * sizeof(*set->pages));
			set->holes += n;
			done += n;
			first = stop;
			continue;
		}
		n = (min(end, vma->vm_end) - first) >> PAGE_SHIFT;
		got = knemlike_pin_remote(mm, first, n, gup_flags, set->pages + done);
		if (got < 0 && got != -EFAULT)
			return got;
		if (got <= 0) {		/* a page GUP will not give: a hole */
			set->pages[done++] = NULL;
			set->holes++;
			got = 1;
		} else {
			done += got;
		}
		first += got << PAGE_SHIFT;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	return done;
}

/*
 * Pin every page of the region, in order, from the owner's mapping as it is now: for
 * writing if the region allows it, or, with read_only_ok, for reading only when the
 * owner's memory has become read-only (set->writable false: copies from the region and
 * read-only attachments go on, copies to it report ESTALE as before).
 *
 * With holes_ok (an attachment's fault), where the owner has no memory that can be held
 * the set has a hole instead of failing whole: pages of a registration that outlived
 * part of its memory (freed, or reallocated smaller) can still be mapped where they
 * exist. A hole is never mapped nor copied through (knemlike_held_map, _copy, _step);
 * -ESTALE if no page at all could be taken.
 */
static int knemlike_held_pin(struct knemlike_region *region, struct knemlike_pageset *set,
			     bool read_only_ok, bool holes_ok)
{
	struct knemlike_held *held = region->held;
	struct mm_struct *mm = region->mm;
	unsigned int gup_flags;
	unsigned long done = 0;
	u32 i;
	int err = 0;

	if (!mmget_not_zero(mm))
		return -ESRCH;	/* the owner exited: its notifier dropped everything */
	if (mmap_read_lock_killable(mm)) {
		mmput(mm);
		return -EINTR;
	}
	set->writable = held->writable;
	set->holes = 0;
	holes_ok = holes_ok && region->nr_segments == 1;	/* what attachments need */
	if (holes_ok) {
		if (set->writable && !knemlike_held_present_writable(region))
			set->writable = false;
	} else if (!knemlike_held_all_mapped(region, set->writable)) {
		set->writable = false;
		if (!held->writable || !read_only_ok || !knemlike_held_all_mapped(region, false))
			err = -ESTALE;
	}
	set->dirty = set->writable;
	gup_flags = FOLL_LONGTERM | (set->writable ? FOLL_WRITE : 0);
	for (i = 0; i < region->nr_segments && !err; i++) {
		const struct knemlike_segment *seg = &region->segments[i];
		unsigned long first = seg->addr & PAGE_MASK;
		unsigned long end = PAGE_ALIGN(seg->addr + seg->len);

		if (holes_ok) {
			long got = knemlike_held_pin_holes(mm, first, end, gup_flags, set, done);

			if (got < 0)
				err = got;
			else
				done = got;
			continue;
		}
		while (first < end) {
			long got = knemlike_pin_remote(mm, first, (end - first) >> PAGE_SHIFT,
						       gup_flags, set->pages + done);

			if (got <= 0) {
				err = got ? got : -ESTALE;
				break;
			}
			done += got;
			first += got << PAGE_SHIFT;
		}
	}
	mmap_read_unlock(mm);
	mmput(mm);
	if (!err && set->holes == set->nr)
		err = -ESTALE;
	if (err) {
		knemlike_unpin_runs(set->pages, done, false);
		return err == -EFAULT ? -ESTALE : err;
	}
	return 0;
}

/*
 * Take the region's pages now and hold them, unless the mapping changes meanwhile.
 * Returns 0 (held), -EDQUOT (over the owner's RLIMIT_MEMLOCK), -EAGAIN (the mapping
 * changed while they were being taken) or the errno of the pin. The whole region is
 * charged while it is taken; the holes of a set that has some are given back after.
 */
static int knemlike_held_take(struct knemlike_region *region, bool read_only_ok,
			      bool holes_ok)
{
	struct knemlike_held *held = region->held;
	unsigned long nr = held->seg_first[region->nr_segments];
	struct knemlike_pageset *set;
	unsigned long seq;
	int err;

	if (atomic64_add_return(nr, &region->mm->pinned_vm) > held->limit) {
		atomic64_sub(nr, &region->mm->pinned_vm);
		return -EDQUOT;
	}
	set = kvmalloc(struct_size(set, pages, nr), GFP_KERNEL_ACCOUNT);
	if (!set) {
		err = -ENOMEM;
		goto out_uncharge;
	}
	set->nr = nr;
	set->mm = region->mm;
	seq = mmu_interval_read_begin(&held->mni);
	err = knemlike_held_pin(region, set, read_only_ok, holes_ok);
	if (err)
		goto out_free;
	atomic64_sub(set->holes, &region->mm->pinned_vm);
	mmgrab(set->mm);
	knemlike_count_add(held_pages, nr - set->holes);
	down_write(&held->sem);
	if (!held->set && !mmu_interval_read_retry(&held->mni, seq)) {
		held->set = set;
		set = NULL;
	}
	up_write(&held->sem);
	if (set) {
		knemlike_pageset_release(set);	/* raced with a change, or another taker */
		return -EAGAIN;
	}
	knemlike_count(held_takes);
	return 0;

out_free:
	kvfree(set);
out_uncharge:
	atomic64_sub(nr, &region->mm->pinned_vm);
	return err;
}

static int knemlike_span_cmp(const void *a, const void *b)
{
	const struct knemlike_span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The segments' pages, sorted by address and merged where they touch or overlap. */
static int knemlike_held_spans(struct knemlike_held *held, struct knemlike_region *region)
{
	struct knemlike_span *spans;
	u32 i, n = 0;

	spans = kvmalloc_array(region->nr_segments, sizeof(*spans), GFP_KERNEL_ACCOUNT);
	if (!spans)
		return -ENOMEM;
	for (i = 0; i < region->nr_segments; i++) {
		const struct knemlike_segment *seg = &region->segments[i];

		spans[i].start = seg->addr & PAGE_MASK;
		spans[i].end = PAGE_ALIGN(seg->addr + seg->len);
	}
	sort(spans, region->nr_segments, sizeof(*spans), knemlike_span_cmp, NULL);
	for (i = 0; i < region->nr_segments; i++) {
		if (n && spans[i].start <= spans[n - 1].end)
			spans[n - 1].end = max(spans[n - 1].end, spans[i].end);
		else
			spans[n++] = spans[i];
	}
	held->spans = spans;
	held->nr_spans = n;
	return 0;
}

int knemlike_held_create(struct knemlike_region *region)
{
	struct knemlike_held *held;
	unsigned long nr = 0;
	int err;
	u32 i;

	held = kvzalloc(struct_size(held, seg_first, region->nr_segments + 1),
			GFP_KERNEL_ACCOUNT);
	if (!held)
		return -ENOMEM;
	for (i = 0; i < region->nr_segments; i++) {
		const struct knemlike_segment *seg = &region->segments[i];

		held->seg_first[i] = nr;
		nr += (PAGE_ALIGN(seg->addr + seg->len) - (seg->addr & PAGE_MASK)) >> PAGE_SHIFT;
	}
	held->seg_first[region->nr_segments] = nr;
	err = knemlike_held_spans(held, region);
	if (err) {
		kvfree(held);
		return err;
	}
	init_rwsem(&held->sem);
	held->region = region;
	held->writable = region->prot & KNEMLIKE_PROT_WRITE;
	held->limit = capable(CAP_IPC_LOCK) ? ULONG_MAX : rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	err = mmu_interval_notifier_insert(&held->mni, region->mm, held->spans[0].start,
					   held->spans[held->nr_spans - 1].end -
					   held->spans[0].start, &knemlike_held_ops);
	if (err) {
		kvfree(held->spans);
		kvfree(held);
		return err;
	}
	region->held = held;
	do {
		/* All of it, and PROT_WRITE needs writable memory: the creator's own buffer. */
		err = knemlike_held_take(region, false, false);
	} while (err == -EAGAIN && !fatal_signal_pending(current));
	if (err) {
		knemlike_held_destroy(region);
		/* The creator's own memory: not mapped (or not writable for PROT_WRITE). */
		if (err == -ESTALE)
			return -EFAULT;
		return err == -EAGAIN ? -EINTR : err;
	}
	return 0;
}

/* Drop the pages and the notifier: the region is retired, or was never published. */
void knemlike_held_destroy(struct knemlike_region *region)
{
	/* Retiring and the owner's exit may both come here: the first one destroys. */
	struct knemlike_held *held = xchg(&region->held, NULL);
	struct knemlike_pageset *set;

	if (!held)
		return;
	mmu_interval_notifier_remove(&held->mni);
	down_write(&held->sem);
	set = held->set;
	held->set = NULL;
	up_write(&held->sem);
	if (set)
		knemlike_pageset_release(set);
	kvfree(held->spans);
	kvfree(held);
}

/*
 * Before a copy: hold the pages again if a change of the mapping dropped them. When that
 * fails (over the limit; the memory unmapped, or without the access the region needs),
 * this copy resolves pages step by step and reports what is wrong, and the next copy
 * tries again: new memory mapped into a hole calls no notifier, so nothing else would
 * say when a take can succeed. A take that fails costs a walk of the owner's mappings
 * (knemlike_held_mapped), no pin.
 */
int knemlike_held_refresh(struct knemlike_region *region)
{
	struct knemlike_held *held = region->held;
	bool held_now;

	down_read(&held->sem);
	held_now = held->set;
	up_read(&held->sem);
	return held_now ? 0 : knemlike_held_take(region, true, false);
}

/*
 * Fill a hole of what is held, for an attachment's fault at the region's page: pin the
 * owner's memory there now (memory mapped into a hole calls no notifier), for the run of
 * holes around the page within its fault window [lo_win, hi_win), and put it in the set
 * unless the mapping changed meanwhile. The work is bounded by the window, whatever the
 * region's size: a peer that touches holes makes the owner pin at most that much, never
 * the whole region again. The caller holds the region's revoke semaphore (read), with
 * the region live, and no mmap lock. 0 when the page is held now, 1 when nothing is held
 * (a take is what is needed), -ESTALE when the owner still has no memory there that can
 * be held, -EAGAIN when the mapping changed meanwhile, or the errno of the pin.
 */
static int knemlike_held_fill(struct knemlike_region *region, unsigned long page,
			      unsigned long lo_win, unsigned long hi_win)
{
	struct knemlike_held *held = region->held;
	unsigned long base = region->segments[0].addr & PAGE_MASK;
	struct mm_struct *mm = region->mm;
	struct knemlike_pageset *set, *got;
	unsigned long lo, hi, n, i, seq, installed = 0;
	bool writable, held_now = false;
	long pinned;

	/* Before the set is read: whatever drops it from now on makes the read retry. */
	seq = mmu_interval_read_begin(&held->mni);
	down_read(&held->sem);
	set = held->set;
	if (!set || set->pages[page]) {
		up_read(&held->sem);
		return set ? 0 : 1;
	}
	for (lo = page; lo > lo_win && !set->pages[lo - 1]; lo--)
		;
	for (hi = page + 1; hi < hi_win && !set->pages[hi]; hi++)
		;
	writable = set->writable;
	up_read(&held->sem);

	n = hi - lo;
	if (atomic64_add_return(n, &mm->pinned_vm) > held->limit) {
		atomic64_sub(n, &mm->pinned_vm);
		return -EDQUOT;
	}
	/* Zeroed: after a pin that failed part way, what it pinned is what is not NULL. */
	got = kvzalloc(struct_size(got, pages, n), GFP_KERNEL_ACCOUNT);
	if (!got) {
		atomic64_sub(n, &mm->pinned_vm);
		return -ENOMEM;
	}
	got->nr = n;
	got->holes = 0;
	pinned = -ESRCH;
	if (mmget_not_zero(mm)) {
		pinned = -EINTR;
		if (!mmap_read_lock_killable(mm)) {
			pinned = knemlike_held_pin_holes(mm, base + lo * PAGE_SIZE,
							 base + hi * PAGE_SIZE,
							 FOLL_LONGTERM | (writable ? FOLL_WRITE : 0),
							 got, 0);
			mmap_read_unlock(mm);
		}
		mmput(mm);
	}
	if (pinned >= 0) {
		down_write(&held->sem);
		if (held->set == set && set->writable == writable &&
		    !mmu_interval_read_retry(&held->mni, seq)) {
			for (i = 0; i < n; i++) {
				if (got->pages[i] && !set->pages[lo + i]) {
					set->pages[lo + i] = got->pages[i];
					got->pages[i] = NULL;
					set->holes--;
					installed++;
				}
			}
			held_now = set->pages[page];
		} else {
			pinned = -EAGAIN;
		}
		up_write(&held->sem);
	}
	knemlike_unpin_runs(got->pages, n, false);	/* what was not installed */
	kvfree(got);
	atomic64_sub(n - installed, &mm->pinned_vm);
	knemlike_count_add(held_pages, installed);
	if (pinned < 0)
		return pinned == -EFAULT ? -ESTALE : (int)pinned;
	return held_now ? 0 : -ESTALE;
}

/*
 * For an attachment's fault at the region's page, outside any mmap lock: hold the pages
 * again, holes allowed, if nothing is held (a change of the owner's mapping dropped
 * them); or fill the hole at that page, if what is held has one there. Then the fault
 * maps what is there, or raises SIGBUS at a hole that is still one. 0, or the errno.
 */
int knemlike_held_refresh_at(struct knemlike_region *region, unsigned long page,
			     unsigned long lo_win, unsigned long hi_win)
{
	int err = knemlike_held_fill(region, page, lo_win, hi_win);

	return err == 1 ? knemlike_held_take(region, true, true) : err;
}

/* Where the region's notifier stands: a change of the owner's mapping over the region
 * since this was read makes knemlike_held_changed() true. Region live, revoke held.
 */
unsigned long knemlike_held_seq(struct knemlike_region *region)
{
	return READ_ONCE(region->held->mni.invalidate_seq);
}

bool knemlike_held_changed(struct knemlike_region *region, unsigned long seq)
{
	return mmu_interval_check_retry(&region->held->mni, seq);
}

/* Pages dropped by a change of the mapping count against the owner's limit until the
 * work item unpins them: a retake that found itself over the limit waits for that.
 */
void knemlike_held_flush(void)
{
	flush_work(&knemlike_dropped_work);
}

/* From now on a change of the owner's mapping also unmaps the region's attachments. */
void knemlike_held_attach(struct knemlike_region *region)
{
	struct knemlike_held *held = region->held;

	down_write(&held->sem);
	held->attached = true;
	up_write(&held->sem);
}

/*
 * Map the pages of the touch's window into an attachment (the caller holds its mmap
 * lock and the region's revoke semaphore, with the region live). Returns -EAGAIN when
 * nothing is held now, -ENOENT when the touched page is a hole of what is held, else 0
 * and the fault's result; holes around it are left unmapped. Under held->sem (read):
 * the notifier, which takes it for writing before it unmaps the attachments, either sees
 * what is mapped here or comes first and leaves nothing held.
 *
 * Pages held for writing are mapped writable in a writable attachment; pages the owner
 * made read-only (held for reading only) are mapped read-only in any attachment, so that
 * loads go on, and a store faults: SIGBUS here, or in knemlike_held_may_write() once the
 * page is mapped.
 */
int knemlike_held_map(struct knemlike_region *region, struct vm_area_struct *vma,
		      const struct knemlike_touch *t, vm_fault_t *ret)
{
	struct knemlike_held *held = region->held;
	struct knemlike_pageset *set;
	unsigned long done;

	down_read(&held->sem);
	set = held->set;
	if (!set || !set->pages[t->page]) {
		up_read(&held->sem);
		return set ? -ENOENT : -EAGAIN;
	}
	if (t->write && !set->writable)
		*ret = VM_FAULT_SIGBUS;
	else
		*ret = knemlike_attachment_insert(vma, t->start, set->pages + t->lo, t->hi - t->lo,
						  set->writable, &done);
	up_read(&held->sem);
	return 0;
}

/*
 * A store to a page an attachment maps read-only: allowed (0) only if the page is held
 * for writing now, which it cannot be while that entry is there (making the owner's
 * memory writable again unmapped it), so in effect SIGBUS: no store reaches memory the
 * owner made read-only.
 */
vm_fault_t knemlike_held_may_write(struct knemlike_region *region, unsigned long page)
{
	struct knemlike_held *held;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&region->revoke);
	if (!READ_ONCE(region->retired)) {
		held = region->held;
		down_read(&held->sem);
		if (held->set && held->set->writable && held->set->pages[page])
			ret = 0;
		up_read(&held->sem);
	}
	up_read(&region->revoke);
	return ret;
}

/* Whether pages[first, first + nr) of a set has a hole. */
static bool knemlike_set_has_hole(const struct knemlike_pageset *set, u64 first, u64 nr)
{
	u64 i;

	if (!set->holes)
		return false;
	for (i = 0; i < nr; i++) {
		if (!set->pages[first + i])
			return true;
	}
	return false;
}

/*
 * Copy between the caller's pinned pages and the held ones, for a run within segment
 * seg of the region, from raddr. Returns the bytes copied, or -EAGAIN when nothing is
 * held now (the caller then takes the pages for this step itself).
 */
long knemlike_held_copy(struct knemlike_region *region, u32 seg, u64 raddr,
			struct page **local, size_t loff, u64 len, u32 dir)
{
	struct knemlike_held *held = region->held;
	const struct knemlike_segment *s = &region->segments[seg];
	u64 first = held->seg_first[seg] + (raddr >> PAGE_SHIFT) - (s->addr >> PAGE_SHIFT);
	size_t roff = raddr & ~PAGE_MASK;

	down_read(&held->sem);
	if (!held->set || (dir == KNEMLIKE_COPY_TO_REGION && !held->set->writable) ||
	    knemlike_set_has_hole(held->set, first, DIV_ROUND_UP(roff + len, PAGE_SIZE))) {
		up_read(&held->sem);
		return -EAGAIN;
	}
	if (dir == KNEMLIKE_COPY_FROM_REGION)
		knemlike_copy_pages(local, loff, held->set->pages + first, roff, len);
	else
		knemlike_copy_pages(held->set->pages + first, roff, local, loff, len);
	up_read(&held->sem);
	return len;
}

/*
 * One step of a copy between the caller's memory and held pages, for a run within
 * segment seg of the region, from raddr, with the caller's memory at laddr. The caller's
 * memory is not pinned: it is an iov_iter, read or written with page faults disabled,
 * under the region's revoke semaphore and held->sem (both read). A page of it that is
 * not there ends the step short; when it is the first, both are dropped, that page is
 * faulted in with nothing of the owner's held (a userfaultfd or FUSE fault may take as
 * long as it likes: a DESTROY meanwhile is not kept waiting), and the step tries again.
 * Returns the bytes copied, -EAGAIN when nothing is held now (the caller pins both
 * sides itself, knemlike_copy.c), or an errno.
 */
long knemlike_held_step(struct knemlike_region *region, u32 seg, u64 raddr, u64 laddr,
			u64 len, u32 dir)
{
	const struct knemlike_segment *s = &region->segments[seg];
	const bool to_caller = dir == KNEMLIKE_COPY_FROM_REGION;
	char __user *uptr = u64_to_user_ptr(laddr);
	size_t roff = raddr & ~PAGE_MASK;
	struct knemlike_held *held;
	struct iov_iter iter;
	struct page *page;
	u64 done, first;
	size_t head;
	bool mapped;

	if (!access_ok(uptr, len))
		return -EFAULT;
	iov_iter_ubuf(&iter, to_caller ? ITER_DEST : ITER_SOURCE, uptr, len);
	for (;;) {
		if (down_read_killable(&region->revoke))
			return -EINTR;
		if (READ_ONCE(region->retired)) {
			up_read(&region->revoke);
			return region->orphaned ? -ESRCH : -ENOENT;
		}
		/* Only now: retiring frees region->held (and sets it NULL). */
		held = region->held;
		first = held->seg_first[seg] + (raddr >> PAGE_SHIFT) - (s->addr >> PAGE_SHIFT);
		down_read(&held->sem);
		if (!held->set || (!to_caller && !held->set->writable)) {
			up_read(&held->sem);
			up_read(&region->revoke);
			return -EAGAIN;
		}
		page = NULL;
		pagefault_disable();
		for (done = 0; done < len;) {
			size_t off = (roff + done) & ~PAGE_MASK;
			size_t n = min_t(u64, len - done, PAGE_SIZE - off);
			size_t copied;

			page = held->set->pages[first + ((roff + done) >> PAGE_SHIFT)];
			if (!page)	/* a hole: the other path says what is there now */
				break;
			if (to_caller) {
				copied = copy_page_to_iter(page, off, n, &iter);
			} else {
				copied = copy_page_from_iter(page, off, n, &iter);
				flush_dcache_page(page);
			}
			done += copied;
			if (copied < n)
				break;	/* a page of the caller's is not there */
		}
		pagefault_enable();
		up_read(&held->sem);
		up_read(&region->revoke);
		if (done)
			return done;
		if (!page)
			return -EAGAIN;
		/* The caller's first page is not mapped as needed: fault it in, holding nothing.
		 * Only inside a mapping, as the other path does (knemlike_mapped): a fault in
		 * the stack's guard gap would grow the stack where a plain region's copy says
		 * EFAULT.
		 */
		head = min_t(u64, iov_iter_count(&iter), PAGE_SIZE - (laddr & ~PAGE_MASK));
		if (mmap_read_lock_killable(current->mm))
			return -EINTR;
		mapped = knemlike_mapped(current->mm, laddr & PAGE_MASK, PAGE_ALIGN(laddr + head));
		mmap_read_unlock(current->mm);
		if (!mapped)
			return -EFAULT;
		if (to_caller ? fault_in_iov_iter_writeable(&iter, head) :
				fault_in_iov_iter_readable(&iter, head))
			return -EFAULT;
		if (signal_pending(current))
			return -EINTR;
		cond_resched();
	}
}

void knemlike_held_exit(void)
{
	/* Every region is gone, and with it every notifier: nothing can be dropped now. */
	flush_work(&knemlike_dropped_work);
}

#else /* !CONFIG_MMU_NOTIFIER: a kernel without notifiers cannot keep held pages coherent */

int knemlike_held_create(struct knemlike_region *region)
{
	return -EOPNOTSUPP;
}

void knemlike_held_destroy(struct knemlike_region *region)
{
}

int knemlike_held_refresh(struct knemlike_region *region)
{
	return -EOPNOTSUPP;
}

void knemlike_held_flush(void)
{
}

void knemlike_held_attach(struct knemlike_region *region)
{
}

int knemlike_held_refresh_at(struct knemlike_region *region, unsigned long page,
			     unsigned long lo_win, unsigned long hi_win)
{
	return -EOPNOTSUPP;
}

unsigned long knemlike_held_seq(struct knemlike_region *region)
{
	return 0;
}

bool knemlike_held_changed(struct knemlike_region *region, unsigned long seq)
{
	return false;
}

int knemlike_held_map(struct knemlike_region *region, struct vm_area_struct *vma,
		      const struct knemlike_touch *t, vm_fault_t *ret)
{
	return -EOPNOTSUPP;
}

vm_fault_t knemlike_held_may_write(struct knemlike_region *region, unsigned long page)
{
	return VM_FAULT_SIGBUS;
}

long knemlike_held_copy(struct knemlike_region *region, u32 seg, u64 raddr,
			struct page **local, size_t loff, u64 len, u32 dir)
{
	return -EAGAIN;
}

long knemlike_held_step(struct knemlike_region *region, u32 seg, u64 raddr, u64 laddr,
			u64 len, u32 dir)
{
	return -EAGAIN;
}

void knemlike_held_exit(void)
{
}

#endif
