// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: owners -- the address spaces regions and exports are created in, and what
 * happens to them when one is torn down. (Exports are treated as regions are: below,
 * "region" stands for both; knemlike_export_orphan() is their knemlike_region_orphan().)
 *
 * A region names memory of its creator's address space. It must not keep that address
 * space allocated after the creator has exited or exec'd: such a region can serve
 * nothing but ESRCH, and the mm_struct and page-table root it would keep are several KB
 * that no limit counts, so a user could make the kernel hold processes x regions of
 * them. So a region holds no reference to its mm; one owner per mm does, through an MMU
 * notifier registered at the first CREATE in that address space. When the address space
 * is torn down (the notifier's release, at exit or exec), a work item orphans each of its
 * regions -- retired as DESTROY retires, so that copies get ESRCH and attachments SIGBUS,
 * but still linked, so that its cookie and its DESTROY behave as documented -- and then
 * unregisters the notifier, which lets the mm go. What stays is this structure, until
 * the last region of that mm goes.
 *
 * Lifetimes. owner->ref: one for being registered (in knemlike_owners), one per region
 * of the mm (knemlike_owner_get() .. knemlike_owner_put_region()), one for a queued
 * release. region->mm stays valid while the region is not retired: the owner's notifier
 * is unregistered only after every region of it has been retired (knemlike_region_orphan()
 * under the region's revoke semaphore, which every user of region->mm holds).
 *
 * Locks. knemlike_owners_lock (a mutex) over the table of registered owners; owner->lock
 * (a spinlock) over its list of regions. Registering takes the creator's mmap lock for
 * writing, outside both, so that a process that stalls its own mmap lock delays only
 * itself. The release callback takes neither lock: it only queues the work.
 */
#include <linux/hashtable.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "knemlike_internal.h"

struct knemlike_owner {
	struct kref ref;
	struct mm_struct *mm;
	spinlock_t lock;		/* protects regions and exports */
	struct list_head regions;	/* region->owner_link: its regions not yet orphaned */
	struct list_head exports;	/* export->owner_link: its exports not yet orphaned */
#ifdef CONFIG_MMU_NOTIFIER
	struct mmu_notifier mn;
	struct hlist_node node;		/* in knemlike_owners while registered */
	struct work_struct work;	/* orphan the regions, unregister */
	unsigned long released;		/* bit 0: the release was queued (or is not wanted) */
#endif
};

static void knemlike_owner_free(struct kref *ref)
{
	struct knemlike_owner *owner = container_of(ref, struct knemlike_owner, ref);

#ifndef CONFIG_MMU_NOTIFIER
	mmdrop(owner->mm);
#endif
	kfree(owner);
}

static void knemlike_owner_put(struct knemlike_owner *owner)
{
	kref_put(&owner->ref, knemlike_owner_free);
}

/* The region stops being one of its owner's: it is freed, or it was orphaned. */
void knemlike_owner_put_region(struct knemlike_region *region)
{
	struct knemlike_owner *owner = region->owner;

	spin_lock(&owner->lock);
	list_del_init(&region->owner_link);
	spin_unlock(&owner->lock);
	knemlike_owner_put(owner);
}

/* The region, created in owner's address space, is one of its regions from now on. */
void knemlike_owner_add_region(struct knemlike_region *region)
{
	struct knemlike_owner *owner = region->owner;

	spin_lock(&owner->lock);
	list_add(&region->owner_link, &owner->regions);
	spin_unlock(&owner->lock);
}

/* The export stops being one of its owner's: it is freed, or it was orphaned. */
void knemlike_owner_put_export(struct knemlike_export *export)
{
	struct knemlike_owner *owner = export->owner;

	spin_lock(&owner->lock);
	list_del_init(&export->owner_link);
	spin_unlock(&owner->lock);
	knemlike_owner_put(owner);
}

/* The export, made in owner's address space, is one of its exports from now on. */
void knemlike_owner_add_export(struct knemlike_export *export)
{
	struct knemlike_owner *owner = export->owner;

	spin_lock(&owner->lock);
	list_add(&export->owner_link, &owner->exports);
	spin_unlock(&owner->lock);
}

#ifdef CONFIG_MMU_NOTIFIER

#define KNEMLIKE_OWNER_HASH_BITS	8
static DEFINE_HASHTABLE(knemlike_owners, KNEMLIKE_OWNER_HASH_BITS);
static DEFINE_MUTEX(knemlike_owners_lock);
static struct workqueue_struct *knemlike_owner_wq;

static void knemlike_owner_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct knemlike_owner *owner = container_of(mn, struct knemlike_owner, mn);

	/* Called at most twice (exit, then an unregister racing it): queue once. */
	if (test_and_set_bit(0, &owner->released))
		return;
	kref_get(&owner->ref);
	queue_work(knemlike_owner_wq, &owner->work);
}

static const struct mmu_notifier_ops knemlike_owner_ops = {
	.release = knemlike_owner_release,
};

/* Orphan every export of the owner (the same walk as for its regions, below). */
static void knemlike_owner_orphan_exports(struct knemlike_owner *owner)
{
	struct knemlike_export *export;

	for (;;) {
		spin_lock(&owner->lock);
		export = list_first_entry_or_null(&owner->exports, struct knemlike_export,
						  owner_link);
		if (export) {
			list_del_init(&export->owner_link);
			if (!kref_get_unless_zero(&export->ref))
				export = ERR_PTR(-ENOENT);
		}
		spin_unlock(&owner->lock);
		if (!export)
			break;
		if (!IS_ERR(export)) {
			knemlike_export_orphan(export);
			knemlike_export_put(export);
		}
	}
}

/* The address space is gone: orphan every region and export of it, then let the mm go. */
static void knemlike_owner_gone(struct work_struct *work)
{
	struct knemlike_owner *owner = container_of(work, struct knemlike_owner, work);
	struct knemlike_region *region;
	bool registered;

	for (;;) {
		spin_lock(&owner->lock);
		region = list_first_entry_or_null(&owner->regions, struct knemlike_region,
						  owner_link);
		if (region) {
			list_del_init(&region->owner_link);
			/* One being freed takes itself off the list (now a no-op). */
			if (!kref_get_unless_zero(&region->ref))
				region = ERR_PTR(-ENOENT);
		}
		spin_unlock(&owner->lock);
		if (!region)
			break;
		if (!IS_ERR(region)) {
			knemlike_region_orphan(region);
			knemlike_region_put(region);
		}
	}
	knemlike_owner_orphan_exports(owner);
	/* Unless the module's exit unregistered it first. */
	mutex_lock(&knemlike_owners_lock);
	registered = !hlist_unhashed(&owner->node);
	if (registered)
		hash_del(&owner->node);
	mutex_unlock(&knemlike_owners_lock);
	if (registered) {
		mmu_notifier_unregister(&owner->mn, owner->mm);	/* drops the mm */
		knemlike_count_add(owners_live, -1);
		knemlike_owner_put(owner);	/* being registered */
	}
	knemlike_owner_put(owner);		/* the queued release */
}

static struct knemlike_owner *knemlike_owner_find(struct mm_struct *mm)
{
	struct knemlike_owner *owner;

	hash_for_each_possible(knemlike_owners, owner, node, (unsigned long)mm) {
		if (owner->mm == mm && !test_bit(0, &owner->released)) {
			kref_get(&owner->ref);
			return owner;
		}
	}
	return NULL;
}

/*
 * The owner of the caller's address space, with a reference for a region of it: the one
 * registered, or a new one. ERR_PTR(-ENOMEM) or the errno of registering.
 */
struct knemlike_owner *knemlike_owner_get(void)
{
	struct mm_struct *mm = current->mm;
	struct knemlike_owner *owner, *found;
	int err;

	mutex_lock(&knemlike_owners_lock);
	found = knemlike_owner_find(mm);
	mutex_unlock(&knemlike_owners_lock);
	if (found)
		return found;

	owner = kzalloc(sizeof(*owner), GFP_KERNEL_ACCOUNT);
	if (!owner)
		return ERR_PTR(-ENOMEM);
	kref_init(&owner->ref);		/* being registered */
	owner->mm = mm;
	spin_lock_init(&owner->lock);
	INIT_LIST_HEAD(&owner->regions);
	INIT_LIST_HEAD(&owner->exports);
	INIT_HLIST_NODE(&owner->node);
	INIT_WORK(&owner->work, knemlike_owner_gone);
	owner->mn.ops = &knemlike_owner_ops;
	err = mmu_notifier_register(&owner->mn, mm);	/* the mm's lock, for writing */
	if (err) {
		kfree(owner);
		return ERR_PTR(err);
	}
	mutex_lock(&knemlike_owners_lock);
	found = knemlike_owner_find(mm);	/* another thread of the process was first */
	if (!found) {
		hash_add(knemlike_owners, &owner->node, (unsigned long)mm);
		kref_get(&owner->ref);	/* the caller's region */
		knemlike_count(owners_live);
	}
	mutex_unlock(&knemlike_owners_lock);
	if (found) {
		set_bit(0, &owner->released);	/* nothing to queue for this one */
		mmu_notifier_unregister(&owner->mn, mm);
		kfree(owner);
		return found;
	}
	return owner;
}

int knemlike_owners_init(void)
{
	knemlike_owner_wq = alloc_workqueue("knemlike_owner", WQ_UNBOUND, 0);
	return knemlike_owner_wq ? 0 : -ENOMEM;
}

/*
 * The module goes: no file is open, so no region is left, but owners of processes that
 * still live are registered. Unregister them; a release already queued finds its owner
 * unregistered and only drops its reference.
 */
void knemlike_owners_exit(void)
{
	struct knemlike_owner *owner;
	unsigned int bkt;

	for (;;) {
		mutex_lock(&knemlike_owners_lock);
		hash_for_each(knemlike_owners, bkt, owner, node)
			break;
		if (owner)
			hash_del(&owner->node);	/* unhashed: a queued release skips it */
		mutex_unlock(&knemlike_owners_lock);
		if (!owner)
			break;
		set_bit(0, &owner->released);	/* unregistering calls release: no queue */
		mmu_notifier_unregister(&owner->mn, owner->mm);
		WARN_ON(!list_empty(&owner->regions) || !list_empty(&owner->exports));
		knemlike_count_add(owners_live, -1);
		knemlike_owner_put(owner);
	}
	destroy_workqueue(knemlike_owner_wq);	/* runs what was queued, then goes */
}

#else /* !CONFIG_MMU_NOTIFIER: nothing says when an address space goes; hold it */

struct knemlike_owner *knemlike_owner_get(void)
{
	struct knemlike_owner *owner = kzalloc(sizeof(*owner), GFP_KERNEL_ACCOUNT);

	if (!owner)
		return ERR_PTR(-ENOMEM);
	kref_init(&owner->ref);	/* the caller's region */
	owner->mm = current->mm;
	spin_lock_init(&owner->lock);
	INIT_LIST_HEAD(&owner->regions);
	INIT_LIST_HEAD(&owner->exports);
	mmgrab(owner->mm);
	return owner;
}

int knemlike_owners_init(void)
{
	return 0;
}

void knemlike_owners_exit(void)
{
}

#endif
