/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * knemlike: declarations shared by the module's files.
 */
#ifndef KNEMLIKE_INTERNAL_H
#define KNEMLIKE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>
#include <linux/knemlike.h>

struct file;

/*
 * Module parameters (knemlike_main.c). Root may change them at run time, so each
 * request reads a limit once, with READ_ONCE(). Their setters keep them within the
 * hard limits below, which bound what one request can make the kernel allocate.
 */
extern unsigned int knemlike_max_segments;
extern unsigned int knemlike_max_regions_per_file;
extern unsigned int knemlike_max_region_mb;
extern unsigned int knemlike_max_user_kb;

/* debug_slab: poison, red-zone and check the module's objects (knemlike_main.c). */
extern bool knemlike_debug_slab;
#define KNEMLIKE_SLAB_DEBUG_FLAGS \
	(SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER)

#define KNEMLIKE_HARD_MAX_SEGMENTS	(1U << 20)	/* a 16 MiB segment vector */
#define KNEMLIKE_INDEX_BITS		24		/* of a cookie: the region's index */
#define KNEMLIKE_HARD_MAX_REGIONS	((1U << KNEMLIKE_INDEX_BITS) - 1)
#define KNEMLIKE_HARD_MAX_REGION_MB	(1U << 27)	/* 128 TiB: all of x86-64 user space */
#define KNEMLIKE_HARD_MAX_USER_KB	(1U << 30)	/* 1 TiB of kernel memory per user */

/*
 * One open file of /dev/knemlike: the regions created through it.
 *
 * References: the open file holds one (dropped by release) and every region created
 * through it holds one, so that a copy that ends a single-use region can still take
 * the region off this list after the file was closed.
 */
struct knemlike_file {
	struct kref ref;
	struct mutex lock;		/* protects regions, nr_regions, region->file_link */
	struct list_head regions;
	unsigned int nr_regions;
	struct list_head grants;	/* attachments being mapped (knemlike_attach.c) */
	struct list_head exports;	/* export->file_link; counted in nr_regions too */
};

void knemlike_file_put(struct knemlike_file *kf);

/*
 * A region: a vector of the owner's virtual memory. Unless it holds its pages
 * (KNEMLIKE_FLAG_HOLD_PAGES, knemlike_held.c), no page is pinned while it lives: a copy
 * resolves the owner's pages at that moment (knemlike_copy.c).
 *
 * A region is *linked* while it is on its file's list and in the index, from creation
 * until destroy, close, or the first successful copy of a single-use region unlinks it
 * (knemlike_region_unlink(), exactly once). References: being linked holds one; each
 * lookup in progress (a copy, a destroy) holds one. The index entry holds none: lookups
 * take theirs under the index lock with kref_get_unless_zero(), and a region leaves the
 * index before its linked reference is dropped. The last put frees it.
 */
struct knemlike_region {
	struct kref ref;
	u64 cookie;
	u32 index;			/* key in the index */
	u32 prot;			/* KNEMLIKE_PROT_* */
	u32 flags;			/* KNEMLIKE_FLAG_* */
	atomic_t used;			/* single-use regions: claimed by a copy */
	bool retired;			/* out of the index: copies stop before their next step */
	bool attached;			/* ever attached: retiring unmaps its attachments */
	bool orphaned;			/* retired because its owner's address space went */
	struct rw_semaphore revoke;	/* read: a copy step; write: retiring (knemlike_copy.c) */
	kuid_t owner_uid;		/* effective uid of the creator */
	/* The owner's address space: valid while the region is not retired (its owner keeps
	 * it, knemlike_owner.c); read it under revoke, with retired false.
	 */
	struct mm_struct *mm;
	struct knemlike_owner *owner;	/* referenced */
	struct list_head owner_link;	/* in owner->regions until freed or orphaned */
	struct knemlike_file *file;	/* the open file it belongs to (referenced) */
	struct list_head file_link;	/* in file->regions; empty once unlinked */
	u64 len;			/* sum of the segment lengths */
	u32 nr_segments;
	struct knemlike_segment *segments;	/* the owner's vector, as created */
	/* KNEMLIKE_FLAG_HOLD_PAGES: the pages held between copies (knemlike_held.c); valid
	 * from creation until retired, so read it only under revoke with retired false.
	 */
	struct knemlike_held *held;
	struct knemlike_user *user;	/* charged: user_cost bytes against max_user_kb */
	unsigned long user_cost;
	struct rcu_head rcu;		/* freed after a grace period: lookups take no lock */
};

/*
 * The ids of a process that the kernel's ptrace access check compares of its target
 * (__ptrace_may_access(), which process_vm_readv() runs): an export serves only while
 * the process that made it has the ids it had then (knemlike_export_owner_check()).
 */
struct knemlike_ids {
	kuid_t uid, euid, suid;
	kgid_t gid, egid, sgid;
};

/*
 * An export: a range of its owner's address space that peers holding its cookie map
 * (knemlike_export.c, knemlike_export_attach.c). Nothing of it is pinned; what peers
 * have mapped is recorded per page (mapped), so that a change of the owner's mapping
 * unmaps exactly that, and so that a change where nothing was mapped (an attachment of
 * the owner's own, above all) unmaps nothing.
 *
 * Linked (on its file's list and in the index) from creation until DESTROY or close,
 * which holds one reference; each lookup in progress and each attachment holds one.
 * Freed after an RCU grace period: lookups take no lock.
 */
struct knemlike_export {
	struct kref ref;
	u64 id;				/* cookie: index (low 32 bits), 32 random bits */
	u64 secret[2];			/* cookie: 128 random bits */
	u32 index;			/* key in the index */
	u32 flags;			/* KNEMLIKE_EXPORT_* */
	struct knemlike_ids ids;	/* of the creating thread, at EXPORT (ids.euid: its user) */
	int dumpable;			/* get_dumpable() of its address space, at EXPORT */
	struct pid *pid;		/* the creating process (its thread group), referenced */
	unsigned long start;		/* the owner's range: page aligned */
	unsigned long nr_pages;
	/* The owner's address space: valid while not retired, read under revoke. */
	struct mm_struct *mm;
	struct knemlike_owner *owner;	/* referenced */
	struct list_head owner_link;	/* in owner->exports until freed or orphaned */
	struct knemlike_file *file;	/* the open file it belongs to (referenced) */
	struct list_head file_link;	/* in file->exports; empty once unlinked */
	struct file *map_file;		/* attachments map it: its address_space finds them */
	struct mmu_interval_notifier mni;	/* over [start, start + nr_pages pages) */
	struct rw_semaphore revoke;	/* read: a take of the owner's pages; write: retire */
	struct rw_semaphore sem;	/* read: mapping pages; write: the notifier, retire */
	bool retired;			/* no page is mapped any more (written under both) */
	bool owner_gone;		/* the notifier saw the address space's release */
	/* Once retired, why, as ATTACH reports it: -ENOENT destroyed or closed, -ESRCH its
	 * owner's process or address space gone (orphaned), -EPERM revoked (the owner's ids
	 * or dumpability changed). Written with retired.
	 */
	int end;
	struct xarray mapped;		/* chunk of 256 pages -> bitmap of pages mapped */
	struct mutex grant_lock;	/* protects grants, attachments, kept */
	struct list_head grants;	/* attachments being mapped (knemlike_export_attach.c) */
	struct list_head attachments;	/* every attachment of it, until freed */
	bool kept;			/* retired: its attachments pay for what is left */
	/* Charged KNEMLIKE_EXPORT_COST against max_user_kb, from EXPORT until retired. */
	struct knemlike_user *user;
	struct rcu_head rcu;
};

/* What an export costs: its structure and an upper bound of its pseudo file's inode,
 * dentry and file. The creator pays it until the export is retired; then every
 * attachment that keeps it, until unmapped (knemlike_export_attachments_keep()).
 */
#define KNEMLIKE_EXPORT_COST	(sizeof(struct knemlike_export) + 2048)

/* knemlike_region.c */
int knemlike_regions_init(void);
void knemlike_regions_exit(void);
int knemlike_region_create(struct knemlike_file *kf, struct knemlike_create *req);
int knemlike_region_destroy(struct knemlike_file *kf, u64 cookie);
void knemlike_file_release_regions(struct knemlike_file *kf);
struct knemlike_region *knemlike_region_get(u64 cookie);
void knemlike_region_put(struct knemlike_region *region);
bool knemlike_region_unlink(struct knemlike_region *region);

void knemlike_region_orphan(struct knemlike_region *region);
struct knemlike_user *knemlike_user_get(kuid_t uid);
int knemlike_user_add(struct knemlike_user *user, unsigned long bytes);
void knemlike_user_add_over(struct knemlike_user *user, unsigned long bytes);
void knemlike_user_sub(struct knemlike_user *user, unsigned long bytes);

/* knemlike_owner.c */
struct knemlike_owner;
int knemlike_owners_init(void);
void knemlike_owners_exit(void);
struct knemlike_owner *knemlike_owner_get(void);
void knemlike_owner_add_region(struct knemlike_region *region);
void knemlike_owner_put_region(struct knemlike_region *region);
void knemlike_owner_add_export(struct knemlike_export *export);
void knemlike_owner_put_export(struct knemlike_export *export);

/* knemlike_copy.c */
int knemlike_copy(struct knemlike_copy *req);
void knemlike_copy_pages(struct page **dst, size_t doff, struct page **src, size_t soff,
			 size_t len);
bool knemlike_mapped(struct mm_struct *mm, unsigned long start, unsigned long end);

/* knemlike_held.c */
int knemlike_held_create(struct knemlike_region *region);
void knemlike_held_destroy(struct knemlike_region *region);
int knemlike_held_refresh(struct knemlike_region *region);
void knemlike_held_flush(void);
void knemlike_held_attach(struct knemlike_region *region);
int knemlike_held_refresh_at(struct knemlike_region *region, unsigned long page,
			     unsigned long lo_win, unsigned long hi_win);
unsigned long knemlike_held_seq(struct knemlike_region *region);
bool knemlike_held_changed(struct knemlike_region *region, unsigned long seq);
int knemlike_held_map(struct knemlike_region *region, struct vm_area_struct *vma,
		      unsigned long addr, unsigned long first, unsigned long nr,
		      unsigned long touched, bool write, vm_fault_t *ret);
vm_fault_t knemlike_held_may_write(struct knemlike_region *region, unsigned long page);
long knemlike_held_copy(struct knemlike_region *region, u32 seg, u64 raddr,
			struct page **local, size_t loff, u64 len, u32 dir);
long knemlike_held_step(struct knemlike_region *region, u32 seg, u64 raddr, u64 laddr,
			u64 len, u32 dir);
void knemlike_held_exit(void);

/* knemlike_attach.c */
int knemlike_attach_init(void);
void knemlike_attach_exit(void);
void knemlike_attach_open(struct file *file);
int knemlike_attach(struct file *file, struct knemlike_attach *req);
int knemlike_attach_mmap(struct file *file, struct vm_area_struct *vma);
void knemlike_attach_zap(struct knemlike_region *region);
void knemlike_attach_release(struct knemlike_file *kf);
void knemlike_attach_seal(struct vm_area_struct *vma, bool writable);
struct file *knemlike_pseudo_file(const struct file_operations *fops, void *private);

/* knemlike_export.c */
#define KNEMLIKE_EXPORT_CHUNK_SHIFT	8	/* pages per bitmap of what is mapped: 256 */
int knemlike_exports_init(void);
void knemlike_exports_exit(void);
int knemlike_export_create(struct knemlike_file *kf, struct knemlike_export_create *req);
int knemlike_export_destroy(struct knemlike_file *kf, const struct knemlike_export_cookie *c);
void knemlike_file_release_exports(struct knemlike_file *kf);
struct knemlike_export *knemlike_export_get(const struct knemlike_export_cookie *c);
void knemlike_export_put(struct knemlike_export *export);
void knemlike_export_orphan(struct knemlike_export *export);
int knemlike_export_hold(struct knemlike_export *export);
void knemlike_export_unhold(struct knemlike_export *export);
int knemlike_export_track(struct knemlike_export *export, unsigned long page,
			  struct knemlike_user *user);
unsigned long *knemlike_export_bits(struct knemlike_export *export, unsigned long page);

/* knemlike_export_attach.c */
int knemlike_export_attach(struct knemlike_export_attach *req);
int knemlike_export_mmap(struct file *file, struct vm_area_struct *vma);
void knemlike_export_attachments_keep(struct knemlike_export *export);

/* knemlike_stats.c: counters an administrator reads in sysfs. Per CPU, so that copies
 * on different CPUs never write the same cache line; sysfs shows the sum. Gauges
 * (regions_live, held_pages) go up on one CPU and down on another: only their sum means
 * anything.
 */
struct knemlike_stats {
	s64 regions_live;
	s64 regions_created;
	s64 regions_destroyed;
	s64 copies;
	s64 bytes_copied;
	s64 pages_pinned;
	s64 held_pages;		/* pinned now by regions that hold their pages */
	s64 held_takes;		/* times a region took all its pages */
	s64 held_drops;		/* times a change of the owner's mapping dropped them */
	s64 attachments;	/* regions mapped into peers now (KNEMLIKE_IOC_ATTACH) */
	s64 attach_faults;	/* touches of an attachment that mapped the owner's pages */
	s64 attach_revokes;	/* times a region's attachments were unmapped */
	s64 owners_live;	/* address spaces with regions, watched for their end */
	s64 regions_orphaned;	/* regions retired because their owner's address space went */
	s64 exports_live;	/* exports not yet freed */
	s64 exports_orphaned;	/* exports retired because their owner's address space went */
	s64 exports_revoked;	/* exports retired because their owner's ids changed */
	s64 export_faults;	/* touches of export attachments that mapped pages */
	s64 export_pages_mapped;	/* pages those touches mapped */
	s64 export_pages_pinned;	/* owner pages pinned now, while a touch maps them */
	s64 export_zaps;	/* unmappings of an export's attachments (notifier, destroy) */
	s64 export_cookie_misses;	/* export cookies that named nothing (guesses?) */
	s64 refused_bad_request;
	s64 refused_limit;
	s64 refused_no_region;
	s64 refused_permission;
	s64 refused_bounds;
	s64 refused_stale;
	s64 refused_owner_gone;
};

DECLARE_PER_CPU(struct knemlike_stats, knemlike_stats);
extern const struct attribute_group *knemlike_attr_groups[];

#define knemlike_count_add(counter, n)	this_cpu_add(knemlike_stats.counter, (n))
#define knemlike_count(counter)		knemlike_count_add(counter, 1)

/* Count a refusal by its errno and pass the errno on. */
int knemlike_refuse(int err);

#endif /* KNEMLIKE_INTERNAL_H */
