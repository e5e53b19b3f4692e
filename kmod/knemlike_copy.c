// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: the copy between a local segment vector and a region.
 *
 * Coherence by construction: the owner's pages are resolved at copy time, in chunks of
 * at most KNEMLIKE_CHUNK_PAGES, from the owner's address space as it is now. A region
 * whose memory was unmapped gives -ESTALE; one whose address was remapped gives the new
 * contents; never the old pages. The owner's mm is kept alive (mmget) only for the
 * duration of the copy, so an owner that exits mid-copy leaves the copier a consistent
 * copy, and one that exited before gives -ESRCH.
 *
 * The local side goes through copy_to_user / copy_from_user: a bad local address is
 * -EFAULT, never an oops. The owner's mmap lock is dropped before touching local memory,
 * so a process copying from its own region cannot deadlock on it.
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

#define KNEMLIKE_CHUNK_PAGES	32

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

/* Copy n bytes between kernel address kaddr and the local vector at c. */
static int knemlike_copy_local(struct knemlike_cursor *c, void *kaddr, size_t n, u32 dir)
{
	while (n) {
		const struct knemlike_segment *s = &c->seg[c->i];
		size_t step = min_t(u64, n, s->len - c->off);
		void __user *uaddr = u64_to_user_ptr(s->addr + c->off);
		unsigned long left;

		if (dir == KNEMLIKE_COPY_FROM_REGION)
			left = copy_to_user(uaddr, kaddr, step);
		else
			left = copy_from_user(kaddr, uaddr, step);
		if (left)
			return -EFAULT;
		kaddr += step;
		n -= step;
		knemlike_cursor_advance(c, step);
	}
	return 0;
}

/* Copy len bytes between pinned pages (starting page_off into pages[0]) and the local
 * vector.
 */
static int knemlike_copy_pages(struct page **pages, size_t page_off, size_t len,
			       struct knemlike_cursor *local, u32 dir)
{
	while (len) {
		struct page *page = pages[page_off >> PAGE_SHIFT];
		size_t in_page = page_off & ~PAGE_MASK;
		size_t n = min_t(size_t, PAGE_SIZE - in_page, len);
		void *kaddr = kmap_local_page(page);
		int err = knemlike_copy_local(local, kaddr + in_page, n, dir);

		if (dir == KNEMLIKE_COPY_TO_REGION)
			flush_dcache_page(page);
		kunmap_local(kaddr);
		if (err)
			return err;
		page_off += n;
		len -= n;
	}
	return 0;
}

/* One chunk: pin up to KNEMLIKE_CHUNK_PAGES of the owner's pages at the remote cursor,
 * copy, unpin. Returns the bytes copied or a negative errno.
 */
static long knemlike_copy_chunk(struct knemlike_region *region, struct page **pages,
				struct knemlike_cursor *remote, struct knemlike_cursor *local,
				u64 remaining, u32 dir)
{
	struct mm_struct *mm = region->mm;
	u64 addr = remote->seg[remote->i].addr + remote->off;
	u64 len = min(remaining, remote->seg[remote->i].len - remote->off);
	unsigned long first = addr & PAGE_MASK, page_off = addr - first;
	unsigned long nr_pages = min_t(u64, DIV_ROUND_UP(page_off + len, PAGE_SIZE),
				       KNEMLIKE_CHUNK_PAGES);
	unsigned int gup_flags = dir == KNEMLIKE_COPY_TO_REGION ? FOLL_WRITE : 0;
	long got;
	int err;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	/* Destroyed or closed meanwhile: the owner has revoked access. Checked under the
	 * owner's mmap lock, so that whatever it maps after DESTROY returned (munmap and mmap
	 * take that lock for writing) is never pinned here; a chunk already pinned is still
	 * copied.
	 */
	if (READ_ONCE(region->retired)) {
		mmap_read_unlock(mm);
		return -ENOENT;
	}
	got = knemlike_pin_remote(mm, first, nr_pages, gup_flags, pages);
	mmap_read_unlock(mm);
	if (got <= 0)
		return got == 0 || got == -EFAULT ? -ESTALE : got;
	knemlike_count_add(pages_pinned, got);

	len = min_t(u64, len, (u64)got * PAGE_SIZE - page_off);
	err = knemlike_copy_pages(pages, page_off, len, local, dir);
	unpin_user_pages_dirty_lock(pages, got, dir == KNEMLIKE_COPY_TO_REGION);
	return err ? err : (long)len;
}

static int knemlike_copy_between(struct knemlike_region *region, u64 offset,
				 struct knemlike_cursor *local, u64 total, u32 dir)
{
	struct knemlike_cursor remote = {
		.seg = region->segments, .nr = region->nr_segments,
	};
	struct page **pages;
	int err = 0;

	if (!mmget_not_zero(region->mm))
		return -ESRCH;
	pages = kmalloc_array(KNEMLIKE_CHUNK_PAGES, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		err = -ENOMEM;
		goto out_mmput;
	}
	knemlike_cursor_advance(&remote, offset);
	knemlike_cursor_skip_empty(local);
	while (total) {
		long done;

		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		done = knemlike_copy_chunk(region, pages, &remote, local, total, dir);
		if (done < 0) {
			err = done;
			break;
		}
		knemlike_cursor_advance(&remote, done);
		total -= done;
		cond_resched();
	}
	kfree(pages);
out_mmput:
	mmput(region->mm);
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

static int knemlike_copy_region(struct knemlike_copy *req, struct knemlike_cursor *local,
				u64 total)
{
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
	 * succeeds; a failed one leaves it to the next.
	 */
	single_use = region->flags & KNEMLIKE_FLAG_SINGLE_USE;
	if (single_use && atomic_cmpxchg(&region->used, 0, 1)) {
		err = -ENOENT;	/* another copy has it */
		goto out_put;
	}
	if (total)
		err = knemlike_copy_between(region, req->offset, local, total, req->direction);
	if (single_use) {
		if (err)
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
	if (!err) {
		req->bytes = total;
		knemlike_count(copies);
		knemlike_count_add(bytes_copied, total);
	}
out_free:
	kvfree(segs);
	return err;
}
