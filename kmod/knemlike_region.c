// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: regions -- creation, the cookie index, references, destruction.
 *
 * A cookie is 64 bits: a 40-bit random secret and the 24-bit index of the region in
 * knemlike_regions. Lookups compare all 64 bits, so a guessed, stale or
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

#define KNEMLIKE_INDEX_MASK	((1U << KNEMLIKE_INDEX_BITS) - 1)

/* Linked regions by index (index 0 is never used: no cookie is 0). */
static DEFINE_XARRAY_ALLOC1(knemlike_regions);

/*
 * Per-user accounting of what regions cost the kernel, against max_user_kb (like epoll's
 * max_user_watches): one entry per effective uid that ever created a region, kept until
 * the module goes (a few bytes each, and only setuid makes new uids).
 */
struct knemlike_user {
	atomic_long_t bytes;
};

static DEFINE_XARRAY(knemlike_users);

/* Regions come from a cache of their own: charged to the creator's memory cgroup, and
 * with debug_slab, poisoned when freed so that a use after free shows in the kernel log.
 */
static struct kmem_cache *knemlike_region_cache;

int knemlike_regions_init(void)
{
	slab_flags_t flags = SLAB_ACCOUNT;

	if (knemlike_debug_slab)
		flags |= KNEMLIKE_SLAB_DEBUG_FLAGS;
	knemlike_region_cache = kmem_cache_create("knemlike_region",
						  sizeof(struct knemlike_region), 0, flags, NULL);
	return knemlike_region_cache ? 0 : -ENOMEM;
}

void knemlike_regions_exit(void)
{
	/* Every file is closed before the module can go, and closing empties the index.
	 * A region still allocated here would be reported by kmem_cache_destroy().
	 */
	struct knemlike_user *user;
	unsigned long key;

	WARN_ON(!xa_empty(&knemlike_regions));
	xa_destroy(&knemlike_regions);
	rcu_barrier();	/* regions freed by call_rcu() */
	xa_for_each(&knemlike_users, key, user) {
		WARN_ON(atomic_long_read(&user->bytes));
		kfree(user);
	}
	xa_destroy(&knemlike_users);
	kmem_cache_destroy(knemlike_region_cache);
}

/* The accounting entry of uid, made at its first use; NULL when out of memory. */
struct knemlike_user *knemlike_user_get(kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	struct knemlike_user *user = xa_load(&knemlike_users, key), *old;

	if (user)
		return user;
	user = kzalloc(sizeof(*user), GFP_KERNEL);
	if (!user)
		return NULL;
	old = xa_cmpxchg(&knemlike_users, key, NULL, user, GFP_KERNEL);
	if (old) {
		kfree(user);
		return xa_is_err(old) ? NULL : old;
	}
	return user;
}

/* An upper bound of the kernel memory a region takes: its structure, its segment vector
 * and, when it holds its pages, their array, the segments' page offsets and spans.
 */
static unsigned long knemlike_region_cost(const struct knemlike_region *region)
{
	unsigned long cost = sizeof(*region) + region->nr_segments * sizeof(*region->segments);

	if (region->flags & KNEMLIKE_FLAG_HOLD_PAGES)
		cost += (region->nr_segments + 1) * sizeof(u64) + 128 +
			region->nr_segments * 2 * sizeof(unsigned long) +
			(region->len / PAGE_SIZE + 2 * region->nr_segments) * sizeof(void *);
	return cost;
}

/* Count bytes of kernel memory against the user's max_user_kb: 0 or -ENOSPC. */
int knemlike_user_add(struct knemlike_user *user, unsigned long bytes)
{
	unsigned long limit = (unsigned long)READ_ONCE(knemlike_max_user_kb) << 10;

	if (atomic_long_add_return(bytes, &user->bytes) > limit) {
		atomic_long_sub(bytes, &user->bytes);
		return -ENOSPC;
	}
	return 0;
}

/* Count bytes against the user even past max_user_kb: memory it keeps and can give back
 * (an attachment of an export retired since); its requests get ENOSPC until it does.
 */
void knemlike_user_add_over(struct knemlike_user *user, unsigned long bytes)
{
	atomic_long_add(bytes, &user->bytes);
}

void knemlike_user_sub(struct knemlike_user *user, unsigned long bytes)
{
	atomic_long_sub(bytes, &user->bytes);
}

/* Charge the region to its creator's uid; -ENOSPC over max_user_kb. */
static int knemlike_user_charge(struct knemlike_region *region)
{
	struct knemlike_user *user = knemlike_user_get(region->owner_uid);
	unsigned long cost = knemlike_region_cost(region);
	int err;

	if (!user)
		return -ENOMEM;
	err = knemlike_user_add(user, cost);
	if (err)
		return err;
	region->user = user;
	region->user_cost = cost;
	return 0;
}

static void knemlike_user_uncharge(struct knemlike_region *region)
{
	if (region->user)
		knemlike_user_sub(region->user, region->user_cost);
	region->user = NULL;
}

static void knemlike_region_free_memory(struct knemlike_region *region)
{
	kvfree(region->segments);
	kmem_cache_free(knemlike_region_cache, region);
}

/* Above the index, 40 random bits: nothing in a cookie but the index can be inferred from
 * what the module shows (its counters, the order of indexes), and a guess matches a
 * region with probability 2^-40.
 */
static u64 knemlike_make_cookie(u32 index)
{
	u64 secret = get_random_u64() >> KNEMLIKE_INDEX_BITS;

	return secret << KNEMLIKE_INDEX_BITS | index;
}

static void knemlike_region_free_rcu(struct rcu_head *rcu)
{
	knemlike_region_free_memory(container_of(rcu, struct knemlike_region, rcu));
}

static void knemlike_region_free(struct kref *ref)
{
	struct knemlike_region *region = container_of(ref, struct knemlike_region, ref);

	knemlike_owner_put_region(region);
	knemlike_file_put(region->file);
	knemlike_user_uncharge(region);
	/* A lookup may still be reading it (knemlike_region_get): free it after them. */
	call_rcu(&region->rcu, knemlike_region_free_rcu);
	knemlike_count_add(regions_live, -1);
	knemlike_count(regions_destroyed);
}

void knemlike_region_put(struct knemlike_region *region)
{
	kref_put(&region->ref, knemlike_region_free);
}

/* The linked region named by cookie, with a reference for the caller, or NULL. No lock:
 * regions are freed after an RCU grace period, so one found here stays readable until
 * rcu_read_unlock(), and one whose last reference is gone is not taken.
 */
struct knemlike_region *knemlike_region_get(u64 cookie)
{
	struct knemlike_region *region;

	rcu_read_lock();
	region = xa_load(&knemlike_regions, cookie & KNEMLIKE_INDEX_MASK);
	if (region && (READ_ONCE(region->cookie) != cookie || !kref_get_unless_zero(&region->ref)))
		region = NULL;
	rcu_read_unlock();
	return region;
}

/*
 * The owner's address space went (knemlike_owner.c): retire the region as DESTROY does,
 * but leave it linked, so that its cookie still names it -- copies get ESRCH, attachments
 * SIGBUS -- until DESTROY or close unlinks it. After this, nothing reads region->mm. The
 * caller holds a reference.
 */
void knemlike_region_orphan(struct knemlike_region *region)
{
	down_write(&region->revoke);
	if (!region->retired) {
		region->orphaned = true;
		WRITE_ONCE(region->retired, true);
		knemlike_count(regions_orphaned);
	}
	up_write(&region->revoke);
	if (READ_ONCE(region->attached))
		knemlike_attach_zap(region);
	knemlike_held_destroy(region);
}

/* The second half of unlinking, once the region is off its file's list: out of the
 * index (no new lookup finds it), then drop the reference that being linked held.
 */
static void knemlike_region_retire(struct knemlike_region *region)
{
	/* A copy already past the lookup checks this before each step it takes; one in the
	 * middle of a step (pages pinned, copying) is waited for, so that nothing touches the
	 * region's memory once this returns. A step never waits on the caller's memory.
	 */
	down_write(&region->revoke);
	WRITE_ONCE(region->retired, true);
	up_write(&region->revoke);
	/* No fault maps its pages any more: unmap those mapped, in every process. */
	if (READ_ONCE(region->attached))
		knemlike_attach_zap(region);
	/* No copy reads region->held any more: its pages go back now, not at the last put. */
	knemlike_held_destroy(region);
	xa_erase(&knemlike_regions, region->index);
	knemlike_region_put(region);
}

/*
 * End the life of a linked region: destroy, or the first copy of a single-use region.
 * The caller holds a reference of its own. Returns false when someone else unlinked
 * it first (a racing destroy, close or copy).
 */
bool knemlike_region_unlink(struct knemlike_region *region)
{
	struct knemlike_file *kf = region->file;
	bool linked;

	mutex_lock(&kf->lock);
	linked = !list_empty(&region->file_link);
	if (linked) {
		list_del_init(&region->file_link);
		kf->nr_regions--;
	}
	mutex_unlock(&kf->lock);
	if (linked)
		knemlike_region_retire(region);
	return linked;
}

/* Check the owner's segment vector; returns the region's length or a negative errno. */
static s64 knemlike_check_segments(const struct knemlike_segment *segs, u32 nr)
{
	u64 max_bytes = (u64)READ_ONCE(knemlike_max_region_mb) << 20;
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
	if (total > max_bytes)
		return -E2BIG;
	return total;
}

/* A region of the caller's memory, not yet linked. Its memory is charged to the
 * caller's memory cgroup: a process cannot make the kernel hold more than its limits.
 */
static struct knemlike_region *knemlike_region_alloc(const struct knemlike_create *req)
{
	struct knemlike_region *region;
	s64 len;
	int err;

	region = kmem_cache_zalloc(knemlike_region_cache, GFP_KERNEL);
	if (!region)
		return ERR_PTR(-ENOMEM);
	region->segments = kvmalloc_array(req->nr_segments, sizeof(*region->segments),
					  GFP_KERNEL_ACCOUNT);
	if (!region->segments) {
		err = -ENOMEM;
		goto out_free;
	}
	if (copy_from_user(region->segments, u64_to_user_ptr(req->segments),
			   array_size(req->nr_segments, sizeof(*region->segments)))) {
		err = -EFAULT;
		goto out_free;
	}
	len = knemlike_check_segments(region->segments, req->nr_segments);
	if (len < 0) {
		err = len;
		goto out_free;
	}
	kref_init(&region->ref);
	init_rwsem(&region->revoke);
	INIT_LIST_HEAD(&region->file_link);
	INIT_LIST_HEAD(&region->owner_link);
	region->len = len;
	region->nr_segments = req->nr_segments;
	region->prot = req->prot;
	region->flags = req->flags;
	region->owner_uid = current_euid();
	region->owner = knemlike_owner_get();
	if (IS_ERR(region->owner)) {
		err = PTR_ERR(region->owner);
		goto out_free;
	}
	region->mm = current->mm;
	knemlike_owner_add_region(region);
	return region;

out_free:
	knemlike_region_free_memory(region);
	return ERR_PTR(err);
}

static int knemlike_check_create(const struct knemlike_create *req)
{
	const u32 prot_all = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE;
	const u32 flags_all = KNEMLIKE_FLAG_SINGLE_USE | KNEMLIKE_FLAG_ANY_USER |
			      KNEMLIKE_FLAG_HOLD_PAGES;

	if (req->reserved || (req->flags & ~flags_all) || !req->prot || (req->prot & ~prot_all))
		return -EINVAL;
	if (!req->nr_segments)
		return -EINVAL;
	if (req->nr_segments > READ_ONCE(knemlike_max_segments))
		return -E2BIG;
	return 0;
}

/* Put the region in the index under a fresh cookie. The cookie is set under the index
 * lock, where every lookup reads it, before anyone can find the region.
 */
static int knemlike_region_publish(struct knemlike_region *region)
{
	int err;

	xa_lock(&knemlike_regions);
	err = __xa_alloc(&knemlike_regions, &region->index, region,
			 XA_LIMIT(1, KNEMLIKE_HARD_MAX_REGIONS), GFP_KERNEL_ACCOUNT);
	if (!err)	/* a lookup meanwhile reads 0, which no cookie is, and finds nothing */
		WRITE_ONCE(region->cookie, knemlike_make_cookie(region->index));
	xa_unlock(&knemlike_regions);
	return err == -EBUSY ? -EMFILE : err;	/* -EBUSY: every index is taken */
}

int knemlike_region_create(struct knemlike_file *kf, struct knemlike_create *req)
{
	struct knemlike_region *region;
	int err;

	err = knemlike_check_create(req);
	if (err)
		return err;
	region = knemlike_region_alloc(req);
	if (IS_ERR(region))
		return PTR_ERR(region);
	err = knemlike_user_charge(region);
	if (err)
		goto out_free;
	if (req->flags & KNEMLIKE_FLAG_HOLD_PAGES) {
		/* Pinned here, in the owner's own context: its faults are its own. */
		err = knemlike_held_create(region);
		if (err)
			goto out_free;
	}

	mutex_lock(&kf->lock);
	if (kf->nr_regions >= READ_ONCE(knemlike_max_regions_per_file)) {
		err = -EMFILE;
		goto out_unlock;
	}
	kref_get(&kf->ref);
	region->file = kf;
	err = knemlike_region_publish(region);
	if (err) {
		region->file = NULL;
		knemlike_file_put(kf);	/* not the last: the caller's file holds one */
		goto out_unlock;
	}
	list_add(&region->file_link, &kf->regions);
	kf->nr_regions++;
	/* Counted before anyone can unlink it: unlinking takes kf->lock. */
	knemlike_count(regions_live);
	knemlike_count(regions_created);
	req->cookie = region->cookie;
	mutex_unlock(&kf->lock);
	return 0;

out_unlock:
	mutex_unlock(&kf->lock);
	knemlike_held_destroy(region);
out_free:	/* never published: no lookup can have seen it */
	knemlike_user_uncharge(region);
	knemlike_owner_put_region(region);
	knemlike_region_free_memory(region);
	return err;
}

/* Only the open file that created a region destroys it (to others it does not exist),
 * and only in a process of the creator's effective uid: a descriptor inherited by, or
 * passed to, another user's process does not give it the owner's rights (EPERM).
 */
int knemlike_region_destroy(struct knemlike_file *kf, u64 cookie)
{
	struct knemlike_region *region = knemlike_region_get(cookie);
	int err = -ENOENT;

	if (!region)
		return -ENOENT;
	if (region->file == kf) {
		if (!uid_eq(current_euid(), region->owner_uid))
			err = -EPERM;
		else if (knemlike_region_unlink(region))
			err = 0;
	}
	knemlike_region_put(region);
	return err;
}

/* The file is being closed: unlink every region still on its list. A copy in progress
 * keeps its region (and through it, kf) until it finishes.
 */
void knemlike_file_release_regions(struct knemlike_file *kf)
{
	struct knemlike_region *region;

	mutex_lock(&kf->lock);
	while ((region = list_first_entry_or_null(&kf->regions, struct knemlike_region,
						  file_link))) {
		list_del_init(&region->file_link);
		kf->nr_regions--;
		/* Cannot free kf under our feet: the closing file still holds its reference. */
		knemlike_region_retire(region);
	}
	mutex_unlock(&kf->lock);
}
