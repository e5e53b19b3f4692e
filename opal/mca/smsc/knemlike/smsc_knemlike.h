/*
 * smsc/knemlike: shared-memory single copy through the knemlike kernel module
 * (/dev/knemlike, kmod/), with a registration cache (smsc_knemlike_cache.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_SMSC_KNEMLIKE_H
#define MCA_SMSC_KNEMLIKE_H

#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/mca/threads/mutex.h"

#ifdef SMX_HAVE_MEMCHECK_H
#    include <valgrind/memcheck.h>
#endif

#include "smsc_knemlike_attach.h"
#include "smsc_knemlike_cache.h"

BEGIN_C_DECLS

/*
 * valgrind's memcheck sees neither what the kernel writes into this process for a copy
 * (the application's first read of it would be reported as uninitialised) nor what it
 * reads from it for a peer (unset bytes sent would not be reported). These tell it; a few
 * instructions outside valgrind, nothing when built without valgrind's header.
 */
static inline void knemlike_memcheck_received(void *addr, size_t len)
{
#ifdef SMX_HAVE_MEMCHECK_H
    (void) VALGRIND_MAKE_MEM_DEFINED(addr, len);
#else
    (void) addr;
    (void) len;
#endif
}

static inline void knemlike_memcheck_sending(const void *addr, size_t len)
{
#ifdef SMX_HAVE_MEMCHECK_H
    (void) VALGRIND_CHECK_MEM_IS_DEFINED(addr, len);
#else
    (void) addr;
    (void) len;
#endif
}

/* Whether this process runs under valgrind (attachments are then not used). */
static inline bool knemlike_under_valgrind(void)
{
#ifdef SMX_HAVE_MEMCHECK_H
    return 0 != RUNNING_ON_VALGRIND;
#else
    return false;
#endif
}

struct mca_smsc_knemlike_component_t {
    mca_smsc_component_t super;

    /* MCA parameters */
    char *device;                 /* smsc_knemlike_device */
    int cache_max_entries;        /* smsc_knemlike_cache_max_entries, 0: no limit */
    unsigned long cache_max_mb;   /* smsc_knemlike_cache_max_mb, 0: auto */
    bool hold_pages;              /* smsc_knemlike_hold_pages */
    int attach_max;               /* smsc_knemlike_attach_max, 0: copies by ioctl only */

    /* state, valid once query succeeded */
    int fd;
    opal_mutex_t lock;            /* serialises the registration cache */
    struct smsc_knemlike_cache cache;
    int hold;                     /* hold_pages, and the module can */
    int attach;                   /* attach_max > 0, and the module can (not under valgrind) */
    struct smsc_knemlike_attach_cache attachments;
    uint64_t cache_max_bytes;     /* cache_max_mb, or what auto came to; 0: no limit */
    unsigned long long pvar_hits, pvar_misses, pvar_evictions, pvar_unheld, pvar_held_bytes;
    unsigned long long pvar_attach_hits, pvar_attaches, pvar_attach_evictions,
        pvar_attach_refused;
};
typedef struct mca_smsc_knemlike_component_t mca_smsc_knemlike_component_t;

OPAL_DECLSPEC extern mca_smsc_knemlike_component_t mca_smsc_knemlike_component;
extern mca_smsc_module_t mca_smsc_knemlike_module;

/* Start the registration and attachment caches over the open device
 * (smsc_knemlike_module.c); stop them (the component's close). */
void mca_smsc_knemlike_cache_start(void);
void mca_smsc_knemlike_cache_stop(void);

END_C_DECLS

#endif /* MCA_SMSC_KNEMLIKE_H */
