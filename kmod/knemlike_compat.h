/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * knemlike: the kernel APIs that changed between the series we support (6.1 .. 6.12).
 * Every difference is detected by Kbuild from the kernel's headers and handled here.
 */
#ifndef KNEMLIKE_COMPAT_H
#define KNEMLIKE_COMPAT_H

#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched/coredump.h>
#ifdef KNEMLIKE_HAVE_TASK_EXEC_STATE
#include <linux/sched/exec_state.h>
#endif

/* Pages of another address space, pinned (pin) or referenced. Both calls lost their
 * vmas argument in 6.5.
 */
static inline long knemlike_gup_remote(struct mm_struct *mm, unsigned long start,
				       unsigned long nr_pages, unsigned int gup_flags,
				       struct page **pages, bool pin)
{
#ifdef KNEMLIKE_PIN_REMOTE_HAS_VMAS
	if (!pin)
		return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL, NULL);
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL, NULL);
#else
	if (!pin)
		return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL);
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL);
#endif
}

static inline long knemlike_pin_remote(struct mm_struct *mm, unsigned long start,
				       unsigned long nr_pages, unsigned int gup_flags,
				       struct page **pages)
{
	return knemlike_gup_remote(mm, start, nr_pages, gup_flags, pages, true);
}

/* vm_flags became read-only, with setters, in 6.3. */
static inline void knemlike_vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
#ifdef KNEMLIKE_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void knemlike_vm_flags_clear(struct vm_area_struct *vma, unsigned long flags)
{
#ifdef KNEMLIKE_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/* Give up the lock a fault runs under (the mmap lock, or since 6.5 maybe the VMA's own)
 * before returning VM_FAULT_RETRY.
 */
static inline void knemlike_release_fault_lock(struct vm_fault *vmf)
{
#ifdef KNEMLIKE_HAVE_RELEASE_FAULT_LOCK
	release_fault_lock(vmf);
#else
	mmap_read_unlock(vmf->vma->vm_mm);
#endif
}

/* A task's dumpability (SUID_DUMP_*, a ptrace check's): its address space's, until 7.x
 * made it the task's own exec state. Under rcu_read_lock(); mm is the task's.
 */
static inline int knemlike_dumpable(struct task_struct *task, struct mm_struct *mm)
{
#ifdef KNEMLIKE_HAVE_TASK_EXEC_STATE
	return rcu_dereference(task->exec_state)->dumpable;
#else
	return get_dumpable(mm);
#endif
}

/* Unmap [addr, addr + size) of a VM_PFNMAP mapping: zap_vma_ptes(), renamed in 7.x. */
static inline void knemlike_zap_pfn_range(struct vm_area_struct *vma, unsigned long addr,
					  unsigned long size)
{
#ifdef KNEMLIKE_HAVE_ZAP_SPECIAL_VMA_RANGE
	zap_special_vma_range(vma, addr, size);
#else
	zap_vma_ptes(vma, addr, size);
#endif
}

#endif /* KNEMLIKE_COMPAT_H */
