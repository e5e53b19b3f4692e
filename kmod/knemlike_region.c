// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: regions -- creation, the cookie index, references, destruction.
 *
 * A cookie is 64 bits: a 32-bit random secret, an 8-bit generation and the 24-bit index
 * of the region in knemlike_regions. Lookups compare all 64 bits, so a guessed, stale or
 * recycled cookie finds nothing. No cookie is, or reveals, a kernel address.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "knemlike_internal.h"

#define KNEMLIKE_INDEX_BITS	24
#define KNEMLIKE_INDEX_MASK	((1U << KNEMLIKE_INDEX_BITS) - 1)

static DEFINE_XARRAY_ALLOC1(knemlike_regions);
static atomic_t knemlike_generation = ATOMIC_INIT(0);

int knemlike_regions_init(void)
{
	return 0;
}

void knemlike_regions_exit(void)
{
	/* Every file is closed before the module can go, and closing empties the index. */
	WARN_ON(!xa_empty(&knemlike_regions));
	xa_destroy(&knemlike_regions);
}

static u64 knemlike_make_cookie(u32 index)
{
	u64 secret = get_random_u32();
	u64 generation = (u8)atomic_inc_return(&knemlike_generation);

	return secret << 32 | generation << KNEMLIKE_INDEX_BITS | index;
}

static void knemlike_region_free(struct kref *ref)
{
	struct knemlike_region *region = container_of(ref, struct knemlike_region, ref);

	mmdrop(region->mm);
	kvfree(region);
	atomic64_dec(&knemlike_stats.regions_live);
	knemlike_count(regions_destroyed);
}

void knemlike_region_put(struct knemlike_region *region)
{
	kref_put(&region->ref, knemlike_region_free);
}

struct knemlike_region *knemlike_region_get(u64 cookie)
{
	struct knemlike_region *region;

	xa_lock(&knemlike_regions);
	region = xa_load(&knemlike_regions, cookie & KNEMLIKE_INDEX_MASK);
	if (region && (region->cookie != cookie || !kref_get_unless_zero(&region->ref)))
		region = NULL;
	xa_unlock(&knemlike_regions);
	return region;
}

/* Take the region out of the index: no new copy can find it. */
void knemlike_region_retire(struct knemlike_region *region)
{
	xa_cmpxchg(&knemlike_regions, region->index, region, NULL, GFP_KERNEL);
}

/* Check the owner's segment vector; returns the region's length or a negative errno. */
static s64 knemlike_check_segments(const struct knemlike_segment *segs, u32 nr)
{
	u64 total = 0, end;
	u32 i;

	for (i = 0; i < nr; i++) {
		if (!segs[i].len || check_add_overflow(segs[i].addr, segs[i].len, &end))
			return -EINVAL;
		if (!access_ok(u64_to_user_ptr(segs[i].addr), segs[i].len))
			return -EFAULT;
		if (check_add_overflow(total, segs[i].len, &total))
			return -EINVAL;
	}
	if (total > (u64)knemlike_max_region_mb << 20)
		return -E2BIG;
	return total;
}

static struct knemlike_region *knemlike_region_alloc(const struct knemlike_create *req)
{
	struct knemlike_region *region;
	size_t vec_bytes = array_size(req->nr_segments, sizeof(struct knemlike_segment));
	s64 len;

	region = kvzalloc(struct_size(region, segments, req->nr_segments), GFP_KERNEL);
	if (!region)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(region->segments, u64_to_user_ptr(req->segments), vec_bytes)) {
		kvfree(region);
		return ERR_PTR(-EFAULT);
	}
	len = knemlike_check_segments(region->segments, req->nr_segments);
	if (len < 0) {
		kvfree(region);
		return ERR_PTR(len);
	}
	kref_init(&region->ref);
	region->len = len;
	region->nr_segments = req->nr_segments;
	region->prot = req->prot;
	region->flags = req->flags;
	region->owner_uid = current_euid();
	region->mm = current->mm;
	mmgrab(region->mm);
	return region;
}

static int knemlike_check_create(const struct knemlike_create *req)
{
	const u32 prot_all = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE;
	const u32 flags_all = KNEMLIKE_FLAG_SINGLE_USE | KNEMLIKE_FLAG_ANY_USER;

	if (req->reserved || (req->flags & ~flags_all) || !req->prot || (req->prot & ~prot_all))
		return -EINVAL;
	if (!req->nr_segments)
		return -EINVAL;
	if (req->nr_segments > knemlike_max_segments)
		return -E2BIG;
	return 0;
}

int knemlike_region_create(struct knemlike_file *kf, struct knemlike_create *req)
{
	struct knemlike_region *region;
	u32 index;
	int err;

	err = knemlike_check_create(req);
	if (err)
		return err;
	region = knemlike_region_alloc(req);
	if (IS_ERR(region))
		return PTR_ERR(region);

	mutex_lock(&kf->lock);
	if (kf->nr_regions >= knemlike_max_regions_per_file) {
		err = -EMFILE;
		goto out_unlock;
	}
	/* Reserve the index first: the cookie embeds it, and nobody may see the region
	 * before its cookie is set.
	 */
	err = xa_alloc(&knemlike_regions, &index, NULL,
		       XA_LIMIT(1, KNEMLIKE_INDEX_MASK), GFP_KERNEL);
	if (err) {
		err = err == -EBUSY ? -EMFILE : err;
		goto out_unlock;
	}
	region->index = index;
	region->cookie = knemlike_make_cookie(index);
	xa_store(&knemlike_regions, index, region, GFP_KERNEL);
	list_add(&region->file_link, &kf->regions);
	kf->nr_regions++;
	mutex_unlock(&kf->lock);

	atomic64_inc(&knemlike_stats.regions_live);
	knemlike_count(regions_created);
	req->cookie = region->cookie;
	return 0;

out_unlock:
	mutex_unlock(&kf->lock);
	mmdrop(region->mm);
	kvfree(region);
	return err;
}

int knemlike_region_destroy(struct knemlike_file *kf, u64 cookie)
{
	struct knemlike_region *region, *found = NULL;

	mutex_lock(&kf->lock);
	list_for_each_entry(region, &kf->regions, file_link) {
		if (region->cookie == cookie) {
			found = region;
			list_del(&region->file_link);
			kf->nr_regions--;
			break;
		}
	}
	mutex_unlock(&kf->lock);
	if (!found)
		return -ENOENT;
	knemlike_region_retire(found);
	knemlike_region_put(found);
	return 0;
}

void knemlike_file_release_regions(struct knemlike_file *kf)
{
	struct knemlike_region *region, *next;
	LIST_HEAD(doomed);

	mutex_lock(&kf->lock);
	list_splice_init(&kf->regions, &doomed);
	kf->nr_regions = 0;
	mutex_unlock(&kf->lock);

	list_for_each_entry_safe(region, next, &doomed, file_link) {
		list_del(&region->file_link);
		knemlike_region_retire(region);
		knemlike_region_put(region);
	}
}
