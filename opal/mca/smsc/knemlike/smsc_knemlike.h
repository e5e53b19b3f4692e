/*
 * smsc/knemlike: shared-memory single copy through the knemlike kernel module
 * (/dev/knemlike, kmod/), with a registration cache (smsc_knemlike_cache.h); and, where
 * the module has exports, peers' memory mapped here (MCA_SMSC_FEATURE_CAN_MAP,
 * smsc_knemlike_map.c).
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

#include <linux/knemlike.h>

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

/* What a process publishes in the modex (PMIx, local scope) once it has exported its
 * address space: a peer maps any page-aligned part of [start, end) with the cookie. */
struct smsc_knemlike_modex {
    struct knemlike_export_cookie cookie;
    uint64_t start, end;
};

struct mca_smsc_knemlike_component_t {
    mca_smsc_component_t super;

    /* MCA parameters */
    char *device;                 /* smsc_knemlike_device */
    int cache_max_entries;        /* smsc_knemlike_cache_max_entries, 0: no limit */
    unsigned long cache_max_mb;   /* smsc_knemlike_cache_max_mb, 0: auto */
    bool hold_pages;              /* smsc_knemlike_hold_pages */
    int attach_max;               /* smsc_knemlike_attach_max, 0: copies by ioctl only */
    bool map;                     /* smsc_knemlike_map */
    unsigned long map_max_mb;     /* smsc_knemlike_map_max_mb, per peer, 0: no limit */

    /* state, valid once query succeeded */
    int fd;
    opal_mutex_t lock;            /* serialises the registration cache */
    struct smsc_knemlike_cache cache;
    int hold;                     /* hold_pages, and the module can */
    int attach;                   /* attach_max > 0, and the module can (not under valgrind) */
    struct smsc_knemlike_attach_cache attachments;
    uint64_t cache_max_bytes;     /* cache_max_mb, or what auto came to; 0: no limit */
    bool can_attach_exports;      /* the module has exports (ABI 3), not under valgrind */
    bool exported;                /* this process's export, published in the modex */
    struct smsc_knemlike_modex export_info; /* its cookie and range, when exported */
    unsigned long long pvar_map_hits, pvar_maps, pvar_map_evictions, pvar_map_failures;
};
typedef struct mca_smsc_knemlike_component_t mca_smsc_knemlike_component_t;

/* A peer, as this process sees it: the peer's export, if it published one, and the
 * mappings of it made here (by range; smsc_knemlike_map.c). Our own class: libopen-pal
 * does not export mca_smsc_endpoint_t's class to out-of-tree components. */
struct smsc_knemlike_endpoint {
    mca_smsc_endpoint_t super;
    opal_mutex_t lock;                 /* serialises the mapping cache */
    bool mappable;                     /* the peer exported, and this process can attach */
    struct smsc_knemlike_modex peer;
    struct smsc_knemlike_cache maps;   /* valid when mappable */
};

OPAL_DECLSPEC extern mca_smsc_knemlike_component_t mca_smsc_knemlike_component;
extern mca_smsc_module_t mca_smsc_knemlike_module;

/* Start the registration and attachment caches over the open device
 * (smsc_knemlike_module.c); stop them (the component's close). */
void mca_smsc_knemlike_cache_start(void);
void mca_smsc_knemlike_cache_stop(void);

/* Exports (smsc_knemlike_map.c). Export this process's address space and publish it in
 * the modex; false (and why, at smsc_base_verbose) when it cannot: CAN_MAP is then not
 * advertised. Destroy the export (the component's close). */
bool mca_smsc_knemlike_export_publish(void);
void mca_smsc_knemlike_export_destroy(void);
/* An endpoint's mappings: set up from the peer's modex, and every mapping undone. */
void mca_smsc_knemlike_map_endpoint_init(struct smsc_knemlike_endpoint *endpoint);
void mca_smsc_knemlike_map_endpoint_fini(struct smsc_knemlike_endpoint *endpoint);
void *mca_smsc_knemlike_map_peer_region(mca_smsc_endpoint_t *endpoint, uint64_t flags,
                                        void *remote_address, size_t size, void **local_mapping);
void mca_smsc_knemlike_unmap_peer_region(void *ctx);

END_C_DECLS

#endif /* MCA_SMSC_KNEMLIKE_H */
