/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * knemlike: declarations shared by the module's files.
 */
#ifndef KNEMLIKE_INTERNAL_H
#define KNEMLIKE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/knemlike.h>

/* Module parameters (knemlike_main.c). */
extern unsigned int knemlike_max_segments;
extern unsigned int knemlike_max_regions_per_file;
extern unsigned int knemlike_max_region_mb;

/* State of one open file of /dev/knemlike: the regions it created. */
struct knemlike_file {
	struct mutex lock;		/* protects regions and nr_regions */
	struct list_head regions;
	unsigned int nr_regions;
};

/*
 * A region: a vector of the owner's virtual memory. No page is pinned while it lives;
 * a copy resolves the owner's pages at that moment (knemlike_copy.c).
 *
 * References: the owner's file list holds one (dropped by destroy or close); each copy
 * in progress holds one. The index entry (knemlike_regions) holds none: lookups take a
 * reference under the index lock with kref_get_unless_zero().
 */
struct knemlike_region {
	struct kref ref;
	u64 cookie;
	u32 index;			/* key in the index */
	u32 prot;			/* KNEMLIKE_PROT_* */
	u32 flags;			/* KNEMLIKE_FLAG_* */
	atomic_t used;			/* single-use regions: set by the first copy */
	kuid_t owner_uid;		/* effective uid of the creator */
	struct mm_struct *mm;		/* owner's address space (mmgrab'd) */
	struct list_head file_link;	/* in knemlike_file.regions */
	u64 len;			/* sum of the segment lengths */
	u32 nr_segments;
	struct knemlike_segment segments[];
};

/* knemlike_region.c */
int knemlike_regions_init(void);
void knemlike_regions_exit(void);
int knemlike_region_create(struct knemlike_file *kf, struct knemlike_create *req);
int knemlike_region_destroy(struct knemlike_file *kf, u64 cookie);
void knemlike_file_release_regions(struct knemlike_file *kf);
struct knemlike_region *knemlike_region_get(u64 cookie);
void knemlike_region_put(struct knemlike_region *region);
void knemlike_region_retire(struct knemlike_region *region);

/* knemlike_copy.c */
int knemlike_copy(struct knemlike_copy *req);

/* knemlike_stats.c: counters an administrator reads in sysfs. */
struct knemlike_stats {
	atomic64_t regions_live;
	atomic64_t regions_created;
	atomic64_t regions_destroyed;
	atomic64_t copies;
	atomic64_t bytes_copied;
	atomic64_t pages_pinned;
	atomic64_t refused_bad_request;
	atomic64_t refused_limit;
	atomic64_t refused_no_region;
	atomic64_t refused_permission;
	atomic64_t refused_bounds;
	atomic64_t refused_stale;
	atomic64_t refused_owner_gone;
};

extern struct knemlike_stats knemlike_stats;
extern const struct attribute_group *knemlike_attr_groups[];

#define knemlike_count(counter)		atomic64_inc(&knemlike_stats.counter)
#define knemlike_count_add(counter, n)	atomic64_add((n), &knemlike_stats.counter)

/* Count a refusal by its errno and pass the errno on. */
int knemlike_refuse(int err);

#endif /* KNEMLIKE_INTERNAL_H */
