/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * knemlike: the kernel APIs that changed between the series we support (6.1 .. 7.2).
 * Every difference is detected by Kbuild from the kernel's headers and handled here.
 */
#ifndef KNEMLIKE_COMPAT_H
#define KNEMLIKE_COMPAT_H

#include <linux/mm.h>

static inline long knemlike_pin_remote(struct mm_struct *mm, unsigned long start,
				       unsigned long nr_pages, unsigned int gup_flags,
				       struct page **pages)
{
#ifdef KNEMLIKE_PIN_REMOTE_HAS_VMAS
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL, NULL);
#else
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL);
#endif
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

#endif /* KNEMLIKE_COMPAT_H */
