// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: the copy between a local segment vector and a region.
 *
 * Coherence by construction: the owner's pages are resolved at copy time, in steps of at
 * most KNEMLIKE_CHUNK_PAGES, from the owner's address space as it is now. A region whose
 * memory was unmapped gives -ESTALE; one whose address was remapped gives the new
 * contents; never the old pages.
 *
 * Revocation: once DESTROY or close has returned, no copy touches the region's memory.
 * A step pins the caller's pages first (any fault of the caller's memory, however slow:
 * userfaultfd, FUSE, swap, happens here, with nothing of the owner's held), and only then,
 * under the region's revoke semaphore (read), checks that the region is still live, pins
 * the owner's pages and copies page to page, with no fault possible. Retiring a region
 * takes that semaphore for writing (knemlike_region.c), so it waits for a step already
 * copying, which is bounded, and never for a caller's fault. The owner's mm is held
 * (mmget) only within a step, so a stalled caller keeps no dead owner's memory alive.
 */
#include <linux/cred.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

#define KNEMLIKE_CHUNK_PAGES	128

/* A position in a segment vector. */
struct knemlike_cursor {
	const struct knemlike_segment *seg;
	u32 nr;
	u32 i;
	u64 off;	/* into seg[i] */
};

static void knemlike_cursor_skip_empty(struct knemlike_cursor *c)
{
	while (c->i < c->nr && c->off == c->seg[c->i].len) {
		c->i++;
		c->off = 0;
	}
}

static void knemlike_cursor_advance(struct knemlike_cursor *c, u64 n)
{
	while (n) {
		u64 step = min(n, c->seg[c->i].len - c->off);

		c->off += step;
		n -= step;
		knemlike_cursor_skip_empty(c);
	}
}

/* Copy len bytes between two runs of pinned pages, each starting at an offset into its
 * first page. Kernel addresses on both sides: nothing here can fault.
 */
void knemlike_copy_pages(struct page **dst, size_t doff, struct page **src,
				size_t soff, size_t len)
{
	while (len) {
		size_t din = doff & ~PAGE_MASK, sin = soff & ~PAGE_MASK;
		size_t n = min3(len, PAGE_SIZE - din, PAGE_SIZE - sin);
		struct page *dpage = dst[doff >> PAGE_SHIFT];
		void *d = kmap_local_page(dpage);
		void *s = kmap_local_page(src[soff >> PAGE_SHIFT]);

		memcpy(d + din, s + sin, n);
		kunmap_local(s);
		flush_dcache_page(dpage);
		kunmap_local(d);
		doff += n;
		soff += n;
		len -= n;
	}
}

/* Whether [start, end) is all inside mappings of mm (its mmap lock held). GUP is never
 * asked for a page outside one: since 6.5 it warns, with a stack dump, about an address
 * in a stack's guard gap, and a caller must not be able to write the kernel log.
 */
bool knemlike_mapped(struct mm_struct *mm, unsigned long start, unsigned long end)
{
	while (start < end) {
		struct vm_area_struct *vma = find_vma(mm, start);

		if (!vma || vma->vm_start > start)
			return false;
		start = vma->vm_end;
	}
	return true;
}

/* The pages one step works on: the caller's and the owner's. */
struct knemlike_step {
	struct page *local[KNEMLIKE_CHUNK_PAGES];
	struct page *remote[KNEMLIKE_CHUNK_PAGES];
};

/* At most this many bytes from addr stay within KNEMLIKE_CHUNK_PAGES pages. */
static u64 knemlike_step_room(u64 addr)
{
	return (u64)KNEMLIKE_CHUNK_PAGES * PAGE_SIZE - (addr & ~PAGE_MASK);
}

/* The owner's side of a step, with the caller's pages pinned: under the revoke
 * semaphore, so that a region retired meanwhile is never touched. Returns the bytes
 * copied (at most len) or a negative errno.
 */
static long knemlike_step_remote(struct knemlike_region *region, struct knemlike_step *st,
				 u32 seg, u64 raddr, size_t loff, u64 len, u32 dir)
{
	unsigned long first = raddr & PAGE_MASK, roff = raddr - first;
	unsigned long nr = DIV_ROUND_UP(roff + len, PAGE_SIZE);
	unsigned int gup_flags = dir == KNEMLIKE_COPY_TO_REGION ? FOLL_WRITE : 0;
	struct mm_struct *mm = region->mm;
	long got;

	if (down_read_killable(&region->revoke))
		return -EINTR;
	if (READ_ONCE(region->retired)) {
		got = region->orphaned ? -ESRCH : -ENOENT;
		goto out_up;
	}
	if (region->flags & KNEMLIKE_FLAG_HOLD_PAGES) {
		got = knemlike_held_copy(region, seg, raddr, st->local, loff, len, dir);
		if (got != -EAGAIN)
			goto out_up;
	}
	if (!mmget_not_zero(mm)) {
		got = -ESRCH;
		goto out_up;
	}
	if (mmap_read_lock_killable(mm)) {
		got = -EINTR;
		goto out_mmput;
	}
	if (knemlike_mapped(mm, first, first + nr * PAGE_SIZE))
		got = knemlike_pin_remote(mm, first, nr, gup_flags, st->remote);
	else
		got = -EFAULT;
	mmap_read_unlock(mm);
	if (got <= 0) {
		got = got == 0 || got == -EFAULT ? -ESTALE : got;
		goto out_mmput;
	}
	knemlike_count_add(pages_pinned, got);
	len = min_t(u64, len, (u64)got * PAGE_SIZE - roff);
	if (dir == KNEMLIKE_COPY_FROM_REGION)
		knemlike_copy_pages(st->local, loff, st->remote, roff, len);
	else
		knemlike_copy_pages(st->remote, roff, st->local, loff, len);
	unpin_user_pages_dirty_lock(st->remote, got, dir == KNEMLIKE_COPY_TO_REGION);
	got = len;
out_mmput:
	mmput(mm);
out_up:
	up_read(&region->revoke);
	return got;
}

/* One step: the longest run that stays within one segment on each side and within
 * KNEMLIKE_CHUNK_PAGES pages on each side. Returns the bytes copied or a negative errno.
 */
static long knemlike_step(struct knemlike_region *region, struct knemlike_step *st,
			  struct knemlike_cursor *remote, struct knemlike_cursor *local,
			  u64 remaining, u32 dir)
{
	const struct knemlike_segment *rs = &remote->seg[remote->i], *ls = &local->seg[local->i];
	u64 raddr = rs->addr + remote->off, laddr = ls->addr + local->off;
	u64 len = min3(remaining, rs->len - remote->off, ls->len - local->off);
	unsigned long lfirst = laddr & PAGE_MASK, loff = laddr - lfirst;
	unsigned long nr;
	long got, done;
	bool mapped;

	len = min3(len, knemlike_step_room(raddr), knemlike_step_room(laddr));
	if (region->flags & KNEMLIKE_FLAG_HOLD_PAGES) {
		/* The owner's pages held: the caller's memory needs no pin either. */
		done = knemlike_held_step(region, remote->i, raddr, laddr, len, dir);
		if (done != -EAGAIN)
			return done;
	}
	nr = DIV_ROUND_UP(loff + len, PAGE_SIZE);
	if (mmap_read_lock_killable(current->mm))
		return -EINTR;
	mapped = knemlike_mapped(current->mm, lfirst, lfirst + nr * PAGE_SIZE);
	mmap_read_unlock(current->mm);
	if (!mapped)
		return -EFAULT;
	/* The caller's pages, written when copying from the region: any fault is taken now. */
	got = pin_user_pages_fast(lfirst, nr, dir == KNEMLIKE_COPY_FROM_REGION ? FOLL_WRITE : 0,
				  st->local);
	if (got <= 0)
		return got ? got : -EFAULT;
	len = min_t(u64, len, (u64)got * PAGE_SIZE - loff);
	done = knemlike_step_remote(region, st, remote->i, raddr, loff, len, dir);
	unpin_user_pages_dirty_lock(st->local, got, dir == KNEMLIKE_COPY_FROM_REGION);
	return done;
}

/* Copy total bytes; *moved says how many did, in order (all of them, or fewer with
 * -EINTR: a signal is pending, the caller resumes from there).
 */
static int knemlike_copy_between(struct knemlike_region *region, u64 offset,
				 struct knemlike_cursor *local, u64 total, u32 dir, u64 *moved)
{
	struct knemlike_cursor remote = {
		.seg = region->segments, .nr = region->nr_segments,
	};
	struct knemlike_step *st;
	int err = 0;

	st = kmalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	*moved = 0;
	/* Pages a change of the owner's mapping dropped are taken again, once per copy. */
	if (region->flags & KNEMLIKE_FLAG_HOLD_PAGES) {
		if (down_read_killable(&region->revoke)) {
			err = -EINTR;
			goto out_free;
		}
		if (!READ_ONCE(region->retired))
			knemlike_held_refresh(region);
		up_read(&region->revoke);
	}
	knemlike_cursor_advance(&remote, offset);
	knemlike_cursor_skip_empty(local);
	while (total) {
		long done;

		if (signal_pending(current)) {
			err = -EINTR;
			break;
		}
		done = knemlike_step(region, st, &remote, local, total, dir);
		if (done < 0) {
			err = done;
			break;
		}
		knemlike_cursor_advance(&remote, done);
		knemlike_cursor_advance(local, done);
		total -= done;
		*moved += done;
		cond_resched();
	}
out_free:
	kfree(st);
	return err;
}

/* Sum of the local lengths, or a negative errno for an overflowing vector. */
static s64 knemlike_local_total(const struct knemlike_segment *segs, u32 nr)
{
	u64 total = 0, end;
	u32 i;

	for (i = 0; i < nr; i++) {
		if (check_add_overflow(segs[i].addr, segs[i].len, &end) ||
		    check_add_overflow(total, segs[i].len, &total) || total > S64_MAX)
			return -EINVAL;
	}
	return total;
}

static int knemlike_check_access(const struct knemlike_region *region, u32 dir)
{
	u32 needed = dir == KNEMLIKE_COPY_FROM_REGION ? KNEMLIKE_PROT_READ : KNEMLIKE_PROT_WRITE;

	if (!(region->flags & KNEMLIKE_FLAG_ANY_USER) && !uid_eq(current_euid(), region->owner_uid))
		return -EPERM;
	if (!(region->prot & needed))
		return -EACCES;
	return 0;
}

/* Copy total bytes (the caller's whole vector), at most KNEMLIKE_MAX_COPY_BYTES of them;
 * req->bytes says how many moved (also with -EINTR).
 */
static int knemlike_copy_region(struct knemlike_copy *req, struct knemlike_cursor *local,
				u64 total)
{
	u64 now = min_t(u64, total, KNEMLIKE_MAX_COPY_BYTES);
	struct knemlike_region *region;
	bool single_use;
	u64 end;
	int err;

	region = knemlike_region_get(req->cookie);
	if (!region)
		return -ENOENT;
	err = knemlike_check_access(region, req->direction);
	if (err)
		goto out_put;
	if (check_add_overflow(req->offset, total, &end) || end > region->len) {
		err = -ERANGE;
		goto out_put;
	}
	/* A single-use region serves one copy at a time and is gone after the first that
	 * succeeds in full; a failed or short one leaves it to the next.
	 */
	single_use = region->flags & KNEMLIKE_FLAG_SINGLE_USE;
	if (single_use && atomic_cmpxchg(&region->used, 0, 1)) {
		err = -ENOENT;	/* another copy has it */
		goto out_put;
	}
	req->bytes = 0;
	if (now)
		err = knemlike_copy_between(region, req->offset, local, now, req->direction,
					    &req->bytes);
	if (single_use) {
		if (err || req->bytes < total)
			atomic_set(&region->used, 0);
		else
			knemlike_region_unlink(region);
	}
out_put:
	knemlike_region_put(region);
	return err;
}

int knemlike_copy(struct knemlike_copy *req)
{
	struct knemlike_cursor local = { };
	struct knemlike_segment *segs = NULL;
	s64 total;
	int err;

	if (req->flags || req->reserved || req->direction > KNEMLIKE_COPY_TO_REGION)
		return -EINVAL;
	if (req->nr_local_segments > READ_ONCE(knemlike_max_segments))
		return -E2BIG;
	if (req->nr_local_segments) {
		segs = kvmalloc_array(req->nr_local_segments, sizeof(*segs), GFP_KERNEL);
		if (!segs)
			return -ENOMEM;
		if (copy_from_user(segs, u64_to_user_ptr(req->local_segments),
				   array_size(req->nr_local_segments, sizeof(*segs)))) {
			err = -EFAULT;
			goto out_free;
		}
	}
	total = knemlike_local_total(segs, req->nr_local_segments);
	if (total < 0) {
		err = total;
		goto out_free;
	}
	local.seg = segs;
	local.nr = req->nr_local_segments;
	err = knemlike_copy_region(req, &local, total);
	if (!err || err == -EINTR) {
		knemlike_count(copies);
		knemlike_count_add(bytes_copied, req->bytes);
	}
out_free:
	kvfree(segs);
	return err;
}
