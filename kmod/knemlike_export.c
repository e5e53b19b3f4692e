// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: exports -- a range of the owner's address space that peers holding its
 * cookie map with plain loads and stores (KNEMLIKE_IOC_EXPORT*). This file: creation,
 * the cookie index, references, the MMU interval notifier, destruction and the owner's
 * end. Attachments and their fault: knemlike_export_attach.c.
 *
 * Nothing is pinned or walked at creation, and no page stays pinned: a touch of an
 * attachment pins the owner's pages of its fault window (at most 256) only while it maps
 * them, and the notifier unmaps them from every attachment before the owner's mapping
 * changes there (as a device that mirrors a process's memory does with HMM). What is
 * mapped is recorded per page (export->mapped), so that the notifier unmaps only that.
 *
 * Cookies: the index (32 bits) and 32 random bits in id, and 128 random bits in secret;
 * a lookup compares all of it, without an early exit on the secret. A cookie that names
 * nothing counts in export_cookie_misses.
 *
 * The owner. An export serves while the process that made it runs on the address space it
 * was made in, with the ids and dumpability it had then (knemlike_export_owner_check(),
 * at ATTACH and at each take of pages, where the kernel checks a ptrace access again:
 * each process_vm_readv() does). An exec, or a change of ids, retires it as an owner's
 * end or a DESTROY does.
 *
 * Locks. export->revoke (rwsem): read around a take of the owner's pages (the notifier's
 * sequence, the owner's mmap lock, the pin: everything that needs export->mm), write to
 * retire; so after a retirement nothing reads export->mm, and the notifier can go.
 * export->sem (rwsem): write in the notifier while it moves the sequence (and in
 * retiring); read while pages are put into an attachment's page table, with the
 * sequence checked. Order: revoke, then an mmap lock (the owner's) or sem, never both an
 * mmap lock and another mm's. Unmapping attachments (unmap_mapping_range) is done with
 * neither held. export->grant_lock (a mutex) over the grants, the list of attachments
 * and kept: taken under an attaching process's mmap lock (its mmap, its munmap's
 * vm_ops->close) or with nothing held (ATTACH, retiring), never around another lock.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "knemlike_compat.h"
#include "knemlike_internal.h"

#define KNEMLIKE_EXPORT_CHUNK_PAGES	(1UL << KNEMLIKE_EXPORT_CHUNK_SHIFT)
#define KNEMLIKE_EXPORT_CHUNK_LONGS	BITS_TO_LONGS(KNEMLIKE_EXPORT_CHUNK_PAGES)

/* What is mapped of a chunk of the export's pages, and who was charged for knowing it:
 * the user of the attachment whose touch first mapped pages there.
 */
struct knemlike_export_chunk {
	struct knemlike_user *user;
	unsigned long bits[KNEMLIKE_EXPORT_CHUNK_LONGS];
};

/* What a chunk costs, with its share of the xarray's nodes (576 B per 64). */
#define KNEMLIKE_EXPORT_CHUNK_COST	(sizeof(struct knemlike_export_chunk) + 16)

#ifdef CONFIG_MMU_NOTIFIER

/* Linked exports by index (0 is never used). */
static DEFINE_XARRAY_ALLOC1(knemlike_exports);
static struct kmem_cache *knemlike_export_cache;

static const struct file_operations knemlike_export_fops = {
	.owner = THIS_MODULE,
	.mmap = knemlike_export_mmap,	/* only what KNEMLIKE_IOC_EXPORT_ATTACH grants */
	.llseek = noop_llseek,
};

int knemlike_exports_init(void)
{
	slab_flags_t flags = SLAB_ACCOUNT;

	if (knemlike_debug_slab)
		flags |= KNEMLIKE_SLAB_DEBUG_FLAGS;
	knemlike_export_cache = kmem_cache_create("knemlike_export",
						  sizeof(struct knemlike_export), 0, flags, NULL);
	return knemlike_export_cache ? 0 : -ENOMEM;
}

void knemlike_exports_exit(void)
{
	WARN_ON(!xa_empty(&knemlike_exports));
	xa_destroy(&knemlike_exports);
	rcu_barrier();	/* exports freed by call_rcu() */
	kmem_cache_destroy(knemlike_export_cache);
}

static void knemlike_export_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(knemlike_export_cache, container_of(rcu, struct knemlike_export, rcu));
}

/* Free the chunks, each uncharged from the user who paid for it. Nothing reads them any
 * more (retired or never published; a touch that makes one since frees nothing).
 */
static void knemlike_export_free_chunks(struct knemlike_export *export)
{
	struct knemlike_export_chunk *c;
	unsigned long index;

	xa_for_each(&export->mapped, index, c) {
		xa_erase(&export->mapped, index);
		knemlike_user_sub(c->user, KNEMLIKE_EXPORT_CHUNK_COST);
		kfree(c);
	}
}

/* The owner stops paying for the export: it is retired, or was never published. */
static void knemlike_export_uncharge(struct knemlike_export *export)
{
	if (export->user)
		knemlike_user_sub(export->user, KNEMLIKE_EXPORT_COST);
	export->user = NULL;
}

/* Free what the export holds. Retired (or never published): its notifier is gone. */
static void knemlike_export_release(struct knemlike_export *export)
{
	knemlike_export_free_chunks(export);
	xa_destroy(&export->mapped);
	if (export->map_file)
		fput(export->map_file);
	knemlike_export_uncharge(export);
	if (export->owner)
		knemlike_owner_put_export(export);
	if (export->file)
		knemlike_file_put(export->file);
	put_pid(export->pid);
}

static void knemlike_export_free(struct kref *ref)
{
	struct knemlike_export *export = container_of(ref, struct knemlike_export, ref);

	knemlike_export_release(export);
	call_rcu(&export->rcu, knemlike_export_free_rcu);
	knemlike_count_add(exports_live, -1);
}

void knemlike_export_put(struct knemlike_export *export)
{
	kref_put(&export->ref, knemlike_export_free);
}

/* The linked export the cookie names, with a reference for the caller, or NULL. */
struct knemlike_export *knemlike_export_get(const struct knemlike_export_cookie *c)
{
	u32 index = lower_32_bits(c->id);
	struct knemlike_export *export = NULL;
	u64 diff;

	rcu_read_lock();
	if (index)
		export = xa_load(&knemlike_exports, index);
	if (export) {
		/* All of it, without stopping at the first word that differs. */
		diff = (READ_ONCE(export->id) ^ c->id) | (export->secret[0] ^ c->secret[0]) |
		       (export->secret[1] ^ c->secret[1]);
		if (diff || !kref_get_unless_zero(&export->ref))
			export = NULL;
	}
	rcu_read_unlock();
	if (!export)
		knemlike_count(export_cookie_misses);
	return export;
}

/* Unmap export pages [first, first + nr) from every attachment. */
static void knemlike_export_zap(struct knemlike_export *export, unsigned long first,
				unsigned long nr)
{
	unmap_mapping_range(export->map_file->f_mapping, (loff_t)first << PAGE_SHIFT,
			    (loff_t)nr << PAGE_SHIFT, 1);
	knemlike_count(export_zaps);
}

/* Whether some page of [first, last) is mapped in an attachment. */
static bool knemlike_export_any_mapped(struct knemlike_export *export, unsigned long first,
				       unsigned long last)
{
	struct knemlike_export_chunk *c;
	unsigned long chunk, lo, hi, base;

	xa_for_each_range(&export->mapped, chunk, c, first >> KNEMLIKE_EXPORT_CHUNK_SHIFT,
			  (last - 1) >> KNEMLIKE_EXPORT_CHUNK_SHIFT) {
		base = chunk << KNEMLIKE_EXPORT_CHUNK_SHIFT;
		lo = max(first, base) - base;
		hi = min(last, base + KNEMLIKE_EXPORT_CHUNK_PAGES) - base;
		if (find_next_bit(c->bits, hi, lo) < hi)
			return true;
	}
	return false;
}

/*
 * Forget what is mapped of [first, last) and unmap it: per chunk, from its first to its
 * last page mapped. With the notifier's sequence moved (or the export retired), nothing
 * can be mapped there meanwhile, so no lock is needed (and none is held: the unmapping
 * may call notifiers of the attaching processes, this export's among them).
 */
static void knemlike_export_unmap(struct knemlike_export *export, unsigned long first,
				  unsigned long last)
{
	unsigned long chunk, *bits, lo, hi, base, i, top;
	struct knemlike_export_chunk *c;

	xa_for_each_range(&export->mapped, chunk, c, first >> KNEMLIKE_EXPORT_CHUNK_SHIFT,
			  (last - 1) >> KNEMLIKE_EXPORT_CHUNK_SHIFT) {
		bits = c->bits;
		base = chunk << KNEMLIKE_EXPORT_CHUNK_SHIFT;
		lo = max(first, base) - base;
		hi = min(last, base + KNEMLIKE_EXPORT_CHUNK_PAGES) - base;
		lo = find_next_bit(bits, hi, lo);
		if (lo >= hi)
			continue;
		for (i = lo, top = lo; i < hi; i = find_next_bit(bits, hi, i + 1)) {
			clear_bit(i, bits);
			top = i;
		}
		knemlike_export_zap(export, base + lo, top - lo + 1);
	}
}

/*
 * Before the owner's mapping changes over [range->start, range->end): unmap from every
 * attachment what was mapped of it, and move the sequence, so that a touch that took
 * pages before maps none of them (knemlike_export_attach.c). A change where nothing is
 * mapped unmaps nothing: this is how unmapping an attachment that lies inside an export
 * of the same process never unmaps attachments from inside itself (pages are never taken
 * from an attachment, a VM_PFNMAP mapping). At the release of the address space (exit,
 * exec) the export stops serving: ESRCH, SIGBUS.
 */
static bool knemlike_export_invalidate(struct mmu_interval_notifier *mni,
				       const struct mmu_notifier_range *range,
				       unsigned long cur_seq)
{
	struct knemlike_export *export = container_of(mni, struct knemlike_export, mni);
	unsigned long end = export->start + (export->nr_pages << PAGE_SHIFT);
	unsigned long first, last;

	if (range->end <= export->start || range->start >= end)
		return true;
	first = (max(range->start, export->start) - export->start) >> PAGE_SHIFT;
	last = (min(range->end, end) - export->start + PAGE_SIZE - 1) >> PAGE_SHIFT;
	if (mmu_notifier_range_blockable(range)) {
		down_write(&export->sem);
	} else if (!down_write_trylock(&export->sem)) {
		return false;
	} else if (knemlike_export_any_mapped(export, first, last)) {
		up_write(&export->sem);
		return false;	/* unmapping sleeps: the OOM reaper comes back */
	}
	mmu_interval_set_seq(mni, cur_seq);
	if (range->event == MMU_NOTIFY_RELEASE)
		WRITE_ONCE(export->owner_gone, true);
	up_write(&export->sem);
	if (mmu_notifier_range_blockable(range))
		knemlike_export_unmap(export, first, last);
	return true;
}

static const struct mmu_interval_notifier_ops knemlike_export_ops = {
	.invalidate = knemlike_export_invalidate,
};

/*
 * The bitmap of what is mapped in the chunk of the export's page: made, and counted in
 * user's max_user_kb (the toucher's, not the owner's: another user's touches of an
 * ANY_USER export must not use up the owner's), by a touch before it maps pages there
 * (no lock held: the notifier, which reads the bitmaps, may run in reclaim). 0, -ENOMEM
 * or -ENOSPC.
 */
int knemlike_export_track(struct knemlike_export *export, unsigned long page,
			  struct knemlike_user *user)
{
	unsigned long chunk = page >> KNEMLIKE_EXPORT_CHUNK_SHIFT;
	struct knemlike_export_chunk *c, *old;
	int err;

	if (xa_load(&export->mapped, chunk))
		return 0;
	err = knemlike_user_add(user, KNEMLIKE_EXPORT_CHUNK_COST);
	if (err)
		return err;
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (c)
		c->user = user;
	old = c ? xa_cmpxchg(&export->mapped, chunk, NULL, c, GFP_KERNEL_ACCOUNT) :
		  ERR_PTR(-ENOMEM);
	if (!old)
		return 0;
	kfree(c);
	knemlike_user_sub(user, KNEMLIKE_EXPORT_CHUNK_COST);
	return xa_is_err(old) || IS_ERR(old) ? -ENOMEM : 0;	/* or another touch was first */
}

/* The bitmap of the chunk of the export's page (made by knemlike_export_track): valid
 * while the export is not retired, so use it under sem with retired false.
 */
unsigned long *knemlike_export_bits(struct knemlike_export *export, unsigned long page)
{
	struct knemlike_export_chunk *c;

	c = xa_load(&export->mapped, page >> KNEMLIKE_EXPORT_CHUNK_SHIFT);
	return c ? c->bits : NULL;
}

/*
 * No page of the export is mapped once this returns, nor will be: every attachment is
 * unmapped and the notifier is gone (so export->mm is never read again). end: what
 * ATTACH reports from now on (struct knemlike_export). Returns false when it was
 * retired before.
 */
static bool knemlike_export_retire(struct knemlike_export *export, int end)
{
	bool first;

	down_write(&export->revoke);
	down_write(&export->sem);
	first = !export->retired;
	if (first) {
		WRITE_ONCE(export->retired, true);
		export->end = end;
	}
	up_write(&export->sem);
	up_write(&export->revoke);
	if (!first)
		return false;
	knemlike_export_zap(export, 0, export->nr_pages);
	mmu_interval_notifier_remove(&export->mni);
	/* Nothing is mapped any more, nor will be: what is left is the structure and its
	 * file, kept by attachments until they are unmapped. Their users pay for that from
	 * now on, not the owner, who cannot unmap them.
	 */
	knemlike_export_free_chunks(export);
	knemlike_export_uncharge(export);
	knemlike_export_attachments_keep(export);
	return true;
}

/* The owner is gone (-ESRCH) or changed (-EPERM): retire, but stay linked, so that the
 * cookie still names the export (ESRCH, EPERM) until DESTROY or close. Caller holds a ref.
 */
static void knemlike_export_end(struct knemlike_export *export, int end)
{
	if (!knemlike_export_retire(export, end))
		return;
	if (end == -ESRCH)
		knemlike_count(exports_orphaned);
	else
		knemlike_count(exports_revoked);
}

/* The owner's address space went (knemlike_owner.c). */
void knemlike_export_orphan(struct knemlike_export *export)
{
	knemlike_export_end(export, -ESRCH);
}

static bool knemlike_ids_same(const struct knemlike_ids *ids, const struct cred *cred)
{
	return uid_eq(ids->uid, cred->uid) && uid_eq(ids->euid, cred->euid) &&
	       uid_eq(ids->suid, cred->suid) && gid_eq(ids->gid, cred->gid) &&
	       gid_eq(ids->egid, cred->egid) && gid_eq(ids->sgid, cred->sgid);
}

/*
 * Whether the export's owner may still be read as at EXPORT, in the terms of a ptrace
 * access check (which process_vm_readv() runs at each call): 0; -ESRCH when no thread of
 * the process that made it runs on the export's address space any more (it exec'd or
 * exited, whoever else keeps the address space: a CLONE_VM sibling, a vfork parent);
 * -EPERM when one of them has other ids than the creating thread had (setresuid()) or
 * the address space another dumpability (PR_SET_DUMPABLE; the kernel drops it at any
 * change of ids too). Every thread counts: a peer could name any of them to the kernel.
 * Capabilities are not compared: without an exec they can only shrink. Under
 * export->revoke, not retired (export->mm is valid), or in the creating thread.
 */
static int knemlike_export_owner_check(struct knemlike_export *export)
{
	struct task_struct *leader, *t;
	bool found = false;
	int err = 0;

	rcu_read_lock();
	leader = pid_task(export->pid, PIDTYPE_TGID);
	if (leader) {
		for_each_thread(leader, t) {
			if (READ_ONCE(t->mm) != export->mm)
				continue;	/* exited, or another address space */
			found = true;
			if (!knemlike_ids_same(&export->ids, __task_cred(t)) ||
			    knemlike_dumpable(t, export->mm) != export->dumpable) {
				err = -EPERM;
				break;
			}
		}
	}
	rcu_read_unlock();
	return err ?: found ? 0 : -ESRCH;
}

/*
 * Take export->revoke for reading if the export serves (0): not retired, its owner as at
 * EXPORT. Else, with nothing held, what ATTACH reports (-ENOENT, -ESRCH, -EPERM) or
 * -EINTR; an owner found changed here retires the export first, so that every
 * attachment of it is unmapped and touches get SIGBUS from then on.
 */
int knemlike_export_hold(struct knemlike_export *export)
{
	bool changed = false;
	int err;

	if (down_read_killable(&export->revoke))
		return -EINTR;
	if (export->retired) {
		err = export->end;
	} else if (READ_ONCE(export->owner_gone)) {
		err = -ESRCH;	/* its owner's work item is orphaning it */
	} else {
		err = knemlike_export_owner_check(export);
		changed = err;
	}
	if (!err)
		return 0;
	up_read(&export->revoke);
	if (changed)
		knemlike_export_end(export, err);
	return err;
}

void knemlike_export_unhold(struct knemlike_export *export)
{
	up_read(&export->revoke);
}

/* Off its file's list (the caller did that, under the file's lock): retire, out of the
 * index, and drop the reference that being linked held.
 */
static void knemlike_export_unlinked(struct knemlike_export *export)
{
	knemlike_export_retire(export, -ENOENT);
	xa_erase(&knemlike_exports, export->index);
	knemlike_export_put(export);
}

static int knemlike_export_check(const struct knemlike_export_create *req)
{
	const u32 flags_all = KNEMLIKE_EXPORT_ANY_USER | KNEMLIKE_EXPORT_READ_ONLY;
	u64 end;

	if (req->reserved || (req->flags & ~flags_all) || !req->len ||
	    !PAGE_ALIGNED(req->addr) || !PAGE_ALIGNED(req->len) ||
	    check_add_overflow(req->addr, req->len, &end))
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(req->addr), req->len))
		return -EFAULT;
	return 0;
}

/* Put the export in the index under a fresh id (the secret is already there). */
static int knemlike_export_publish(struct knemlike_export *export)
{
	int err;

	xa_lock(&knemlike_exports);
	err = __xa_alloc(&knemlike_exports, &export->index, export, XA_LIMIT(1, INT_MAX),
			 GFP_KERNEL_ACCOUNT);
	if (!err)	/* a lookup meanwhile reads 0, which no id is */
		WRITE_ONCE(export->id, (u64)get_random_u32() << 32 | export->index);
	xa_unlock(&knemlike_exports);
	return err == -EBUSY ? -EMFILE : err;
}

/* Everything but linking: charged, a file to map, an owner, a notifier. */
static int knemlike_export_setup(struct knemlike_export *export)
{
	int err;

	export->user = knemlike_user_get(export->ids.euid);
	if (!export->user)
		return -ENOMEM;
	err = knemlike_user_add(export->user, KNEMLIKE_EXPORT_COST);
	if (err) {
		export->user = NULL;
		return err;
	}
	export->map_file = knemlike_pseudo_file(&knemlike_export_fops, export);
	if (IS_ERR(export->map_file)) {
		err = PTR_ERR(export->map_file);
		export->map_file = NULL;
		return err;
	}
	export->owner = knemlike_owner_get();
	if (IS_ERR(export->owner)) {
		err = PTR_ERR(export->owner);
		export->owner = NULL;
		return err;
	}
	knemlike_owner_add_export(export);
	return mmu_interval_notifier_insert(&export->mni, export->mm, export->start,
					    export->nr_pages << PAGE_SHIFT, &knemlike_export_ops);
}

int knemlike_export_create(struct knemlike_file *kf, struct knemlike_export_create *req)
{
	const struct cred *cred = current_cred();
	struct knemlike_export *export;
	int err;

	err = knemlike_export_check(req);
	if (err)
		return err;
	export = kmem_cache_zalloc(knemlike_export_cache, GFP_KERNEL);
	if (!export)
		return -ENOMEM;
	kref_init(&export->ref);
	init_rwsem(&export->revoke);
	init_rwsem(&export->sem);
	mutex_init(&export->grant_lock);
	INIT_LIST_HEAD(&export->grants);
	INIT_LIST_HEAD(&export->attachments);
	INIT_LIST_HEAD(&export->file_link);
	INIT_LIST_HEAD(&export->owner_link);
	xa_init(&export->mapped);
	export->flags = req->flags;
	export->ids = (struct knemlike_ids){ cred->uid, cred->euid, cred->suid,
					     cred->gid, cred->egid, cred->sgid };
	export->mm = current->mm;
	rcu_read_lock();
	export->dumpable = knemlike_dumpable(current, export->mm);
	rcu_read_unlock();
	export->pid = get_task_pid(current, PIDTYPE_TGID);
	export->start = req->addr;
	export->nr_pages = req->len >> PAGE_SHIFT;
	get_random_bytes(export->secret, sizeof(export->secret));
	/* Threads of the caller with other ids: an export none of them could use. */
	err = knemlike_export_owner_check(export);
	if (!err)
		err = knemlike_export_setup(export);
	if (err)
		goto out_free;

	mutex_lock(&kf->lock);
	if (kf->nr_regions >= READ_ONCE(knemlike_max_regions_per_file)) {
		err = -EMFILE;
		goto out_unlock;
	}
	err = knemlike_export_publish(export);
	if (err)
		goto out_unlock;
	kref_get(&kf->ref);
	export->file = kf;
	list_add(&export->file_link, &kf->exports);
	kf->nr_regions++;
	knemlike_count(exports_live);
	req->cookie.id = export->id;
	req->cookie.secret[0] = export->secret[0];
	req->cookie.secret[1] = export->secret[1];
	mutex_unlock(&kf->lock);
	return 0;

out_unlock:
	mutex_unlock(&kf->lock);
	mmu_interval_notifier_remove(&export->mni);
out_free:	/* never published: no lookup can have seen it */
	knemlike_export_release(export);
	kmem_cache_free(knemlike_export_cache, export);
	return err;
}

/* Only through the open file that created it, by the creator's effective uid. */
int knemlike_export_destroy(struct knemlike_file *kf, const struct knemlike_export_cookie *c)
{
	struct knemlike_export *export = knemlike_export_get(c);
	bool linked = false;
	int err = -ENOENT;

	if (!export)
		return -ENOENT;
	if (export->file == kf) {
		if (!uid_eq(current_euid(), export->ids.euid)) {
			err = -EPERM;
		} else {
			mutex_lock(&kf->lock);
			linked = !list_empty(&export->file_link);
			if (linked) {
				list_del_init(&export->file_link);
				kf->nr_regions--;
			}
			mutex_unlock(&kf->lock);
		}
	}
	if (linked) {
		knemlike_export_unlinked(export);
		err = 0;
	}
	knemlike_export_put(export);
	return err;
}

/* The file is being closed: destroy every export still on its list. */
void knemlike_file_release_exports(struct knemlike_file *kf)
{
	struct knemlike_export *export;

	mutex_lock(&kf->lock);
	while ((export = list_first_entry_or_null(&kf->exports, struct knemlike_export,
						  file_link))) {
		list_del_init(&export->file_link);
		kf->nr_regions--;
		knemlike_export_unlinked(export);
	}
	mutex_unlock(&kf->lock);
}

#else /* !CONFIG_MMU_NOTIFIER: nothing would say when the owner's mapping changes */

int knemlike_exports_init(void)
{
	return 0;
}

void knemlike_exports_exit(void)
{
}

int knemlike_export_create(struct knemlike_file *kf, struct knemlike_export_create *req)
{
	return -EOPNOTSUPP;
}

int knemlike_export_destroy(struct knemlike_file *kf, const struct knemlike_export_cookie *c)
{
	return -EOPNOTSUPP;
}

void knemlike_file_release_exports(struct knemlike_file *kf)
{
}

struct knemlike_export *knemlike_export_get(const struct knemlike_export_cookie *c)
{
	return NULL;
}

void knemlike_export_put(struct knemlike_export *export)
{
}

void knemlike_export_orphan(struct knemlike_export *export)
{
}

int knemlike_export_hold(struct knemlike_export *export)
{
	return -EOPNOTSUPP;
}

void knemlike_export_unhold(struct knemlike_export *export)
{
}

int knemlike_export_track(struct knemlike_export *export, unsigned long page,
			  struct knemlike_user *user)
{
	return -EOPNOTSUPP;
}

unsigned long *knemlike_export_bits(struct knemlike_export *export, unsigned long page)
{
	return NULL;
}

#endif
