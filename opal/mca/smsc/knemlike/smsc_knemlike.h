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
#include "opal/mca/btl/smx/smx_memcheck.h"
#include "opal/mca/threads/mutex.h"

#include "smsc_knemlike_attach.h"
#include "smsc_knemlike_cache.h"

BEGIN_C_DECLS

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
