/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * knemlike: the kernel APIs that changed between the series we support (6.1 .. 6.12).
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

#endif /* KNEMLIKE_COMPAT_H */
