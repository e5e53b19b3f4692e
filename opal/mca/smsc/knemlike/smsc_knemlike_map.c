/*
 * smsc/knemlike: peers' memory mapped here (MCA_SMSC_FEATURE_CAN_MAP), through the
 * module's exports (ABI 3, kmod/README.md, "Exports").
 *
 * Each process exports its whole user address space once, read-write for its own uid
 * (nothing is pinned or walked), and publishes the cookie in the modex. A peer maps the
 * part of it that holds a buffer (map_peer_region), as with XPMEM; stock btl/sm then
 * sends in place: the receiver copies straight out of the sender's buffer.
 *
 * Mappings are kept per peer in a cache by range (smsc_knemlike_cache.c, one per
 * endpoint), aligned out to SMSC_KNEMLIKE_MAP_ALIGN so that neighbouring buffers share
 * one; the least recently used unused ones are unmapped beyond smsc_knemlike_map_max_mb.
 * A cached mapping never shows stale memory: the module unmaps what it maps whenever the
 * owner's mapping changes there (free and malloc again at the same address included) and
 * maps the owner's current pages at the next touch; a touch where the owner has nothing
 * gets SIGBUS, and btl/sm touches only a buffer whose send has not completed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "smsc_knemlike.h"
#include "smsc_knemlike_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* Nothing is mapped before it is touched, so a wider mapping costs address space only;
 * buffers within 2 MiB of each other then share one (XPMEM aligns its attachments to
 * 8 MiB by default, smsc_xpmem_log_attach_align). */
#define SMSC_KNEMLIKE_MAP_ALIGN (2ULL << 20)

/* --- this process's export --- */

/* The top of the highest mapping but the vsyscall page, and the vDSO's where
 * 'without_vdso' (the stack, as smsc/xpmem finds it); 0 if unknown. */
static uint64_t knemlike_maps_end(bool without_vdso)
{
    uint64_t end = 0;
    char line[512];
    FILE *maps = fopen("/proc/self/maps", "r");
    if (NULL == maps) {
        return 0;
    }
    while (fgets(line, sizeof(line), maps)) {
        unsigned long long lo, hi;
        const bool vdso = NULL != strstr(line, "[vdso]") || NULL != strstr(line, "[vvar");
        if (2 == sscanf(line, "%llx-%llx", &lo, &hi) && NULL == strstr(line, "[vsyscall]")
            && !(without_vdso && vdso) && hi > end) {
            end = hi;
        }
    }
    fclose(maps);
    return end;
}

/* The end of user space. x86-64 with 4-level page tables: one page below 2^47 (the
 * kernel's TASK_SIZE_MAX; a process maps above only if it asks, with 5-level tables);
 * a kernel whose user space ends lower refuses that (EFAULT: User-mode Linux, whose vDSO
 * sits at its end), and the export then ends at the stack. Elsewhere where the maps end.
 * 0 if unknown. */
static uint64_t knemlike_user_space_end(void)
{
#if defined(__x86_64__)
    return 0x7ffffffff000ULL;
#else
    return knemlike_maps_end(false);
#endif
}

bool mca_smsc_knemlike_export_publish(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    const uint64_t page = (uint64_t) getpagesize();
    /* below 64 KiB nothing is mapped (vm.mmap_min_addr), as in kmod_export */
    struct knemlike_export_create req = {.addr = 1ULL << 16};
    const char *why = NULL;
    int rc;

    if (!c->map) {
        why = "smsc_knemlike_map is false";
    } else if (!c->can_attach_exports) {
        why = knemlike_under_valgrind() ? "under valgrind (memcheck would not know the mappings)"
                                        : "the module has no exports (ABI 3's "
                                          "KNEMLIKE_FEATURE_EXPORT)";
    } else {
        uint64_t end = knemlike_user_space_end() & ~(page - 1);
        if (end <= req.addr) {
            why = "the end of user space is unknown";
        } else {
            req.len = end - req.addr;
            /* without KNEMLIKE_EXPORT_ANY_USER: the peers of a job run as one user */
            rc = ioctl(c->fd, KNEMLIKE_IOC_EXPORT, &req);
            if (0 != rc && EFAULT == errno) {
                end = knemlike_maps_end(true) & ~(page - 1);
                if (end > req.addr && end < req.addr + req.len) {
                    req.len = end - req.addr;
                    rc = ioctl(c->fd, KNEMLIKE_IOC_EXPORT, &req);
                }
            }
            if (0 != rc) {
                why = strerror(errno);
            }
        }
    }
    if (NULL != why) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: peers will not map this process's memory (no "
                            "CAN_MAP; single copies through registrations only): %s",
                            why);
        return false;
    }
    c->export_info.cookie = req.cookie;
    c->export_info.start = req.addr;
    c->export_info.end = req.addr + req.len;
    OPAL_MODEX_SEND(rc, PMIX_LOCAL, &c->super.smsc_version, &c->export_info,
                    sizeof(c->export_info));
    if (OPAL_SUCCESS != rc) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: peers will not map this process's memory: "
                            "publishing its export in the modex failed (%d)", rc);
        struct knemlike_export_destroy destroy = {.cookie = req.cookie};
        (void) ioctl(c->fd, KNEMLIKE_IOC_EXPORT_DESTROY, &destroy);
        return false;
    }
    c->exported = true;
    opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                        "smsc:knemlike: this process's address space 0x%llx-0x%llx exported: "
                        "peers map its buffers (CAN_MAP)",
                        (unsigned long long) c->export_info.start,
                        (unsigned long long) c->export_info.end);
    return true;
}

void mca_smsc_knemlike_export_destroy(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    if (c->exported && 0 <= c->fd) {
        struct knemlike_export_destroy req = {.cookie = c->export_info.cookie};
        (void) ioctl(c->fd, KNEMLIKE_IOC_EXPORT_DESTROY, &req); /* (close would do it too) */
    }
    c->exported = false;
}

/* --- mappings of a peer's export, the cache's callbacks (ctx: the endpoint) --- */

static int knemlike_map_attach(void *ctx, uint64_t base, uint64_t len, int hold, uint64_t *addr)
{
    struct smsc_knemlike_endpoint *ep = ctx;
    /* read-write: btl/sm only reads, but users of CAN_MAP may store (the export allows it) */
    struct knemlike_export_attach req = {.cookie = ep->peer.cookie,
                                         .offset = base - ep->peer.start, .len = len,
                                         .prot = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE};
    (void) hold;
    if (ioctl(mca_smsc_knemlike_component.fd, KNEMLIKE_IOC_EXPORT_ATTACH, &req)) {
        return -errno;
    }
    *addr = req.addr;
    return 0;
}

static int knemlike_map_detach(void *ctx, const struct smsc_knemlike_reg *reg)
{
    (void) ctx;
    return munmap((void *) (uintptr_t) reg->cookie, reg->len) ? -errno : 0;
}

void mca_smsc_knemlike_map_endpoint_init(struct smsc_knemlike_endpoint *ep)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    opal_process_name_t *peer = &ep->super.proc->proc_name;
    struct smsc_knemlike_modex *modex = NULL;
    size_t size = 0;
    int rc;

    ep->mappable = false;
    if (!c->can_attach_exports) {
        return;
    }
    /* A peer of this job published before the fence; one of another job (spawn) is
     * fetched from the server. */
    if (peer->jobid == OPAL_PROC_MY_NAME.jobid) {
        OPAL_MODEX_RECV_IMMEDIATE(rc, &c->super.smsc_version, peer, (void **) &modex, &size);
    } else {
        OPAL_MODEX_RECV(rc, &c->super.smsc_version, peer, (void **) &modex, &size);
    }
    if (OPAL_SUCCESS != rc || NULL == modex || sizeof(*modex) != size
        || modex->end <= modex->start) {
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: peer %s published no export: its memory is not "
                            "mapped here", OPAL_NAME_PRINT(*peer));
        free(modex);
        return;
    }
    ep->peer = *modex;
    free(modex);
    struct smsc_knemlike_cache_ops ops = {
        .create = knemlike_map_attach, .destroy = knemlike_map_detach, .ctx = ep};
    smsc_knemlike_cache_init(&ep->maps, &ops, 0, (uint64_t) c->map_max_mb << 20,
                             (uint64_t) getpagesize(), 0);
    ep->mappable = true;
}

void mca_smsc_knemlike_map_endpoint_fini(struct smsc_knemlike_endpoint *ep)
{
    if (ep->mappable) {
        OPAL_THREAD_LOCK(&ep->lock);
        smsc_knemlike_cache_fini(&ep->maps); /* unmaps every mapping, in use or not */
        ep->mappable = false;
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
}

/* Add what one cache call did to the component's counters (MPI_T). */
static void knemlike_map_count(const struct smsc_knemlike_cache_stats *before,
                               const struct smsc_knemlike_cache_stats *after)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    __atomic_add_fetch(&c->pvar_map_hits, after->hits - before->hits, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->pvar_maps, after->misses - after->failures
                       - (before->misses - before->failures), __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->pvar_map_evictions, after->evictions - before->evictions,
                       __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->pvar_map_failures, after->failures - before->failures,
                       __ATOMIC_RELAXED);
}

/*
 * flags as smsc/xpmem takes them: MCA_RCACHE_FLAGS_CACHE_BYPASS maps a span of its own,
 * kept out of the cache and unmapped by unmap_peer_region. Everything else is cached and
 * stays mapped once unused, MCA_RCACHE_FLAGS_PERSIST or not, as in Open MPI 5.0.x's
 * smsc/xpmem (whose mappings keep a reference until the endpoint goes): btl/sm 5.0.x maps
 * each send's buffer with flags 0, and a mapping per send would cost an ioctl, a fault
 * and a munmap. Unlike xpmem's, the cache is bounded (smsc_knemlike_map_max_mb).
 */
void *mca_smsc_knemlike_map_peer_region(mca_smsc_endpoint_t *endpoint, uint64_t flags,
                                        void *remote_address, size_t size, void **local_mapping)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct smsc_knemlike_endpoint *ep = (struct smsc_knemlike_endpoint *) endpoint;
    const bool bypass = 0 != (flags & MCA_RCACHE_FLAGS_CACHE_BYPASS);
    const uint64_t remote = (uintptr_t) remote_address;
    struct smsc_knemlike_cache_entry *e = NULL;
    uint64_t lo, hi;
    int err;

    if (NULL == ep || !ep->mappable) {
        err = -ENOENT;
        goto out_failed;
    }
    err = smsc_knemlike_map_span(remote, size, bypass ? (uint64_t) getpagesize()
                                                      : SMSC_KNEMLIKE_MAP_ALIGN,
                                 ep->peer.start, ep->peer.end, &lo, &hi);
    if (err) {
        goto out_failed;
    }
    if (bypass) {
        e = calloc(1, sizeof(*e));
        if (NULL == e) {
            err = -ENOMEM;
            goto out_failed;
        }
        err = knemlike_map_attach(ep, lo, hi - lo, 0, &e->reg.cookie);
        if (err) {
            free(e);
            e = NULL;
            __atomic_add_fetch(&c->pvar_map_failures, 1, __ATOMIC_RELAXED);
            goto out_failed;
        }
        e->reg.base = lo;
        e->reg.len = hi - lo;
        e->in_use = 1; /* e->cache stays NULL: unmap_peer_region unmaps it */
        __atomic_add_fetch(&c->pvar_maps, 1, __ATOMIC_RELAXED);
    } else {
        OPAL_THREAD_LOCK(&ep->lock);
        struct smsc_knemlike_cache_stats before = ep->maps.stats;
        e = smsc_knemlike_cache_acquire(&ep->maps, lo, hi - lo, &err);
        knemlike_map_count(&before, &ep->maps.stats);
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (NULL == e) {
            goto out_failed;
        }
    }
    *local_mapping = (char *) (uintptr_t) e->reg.cookie + (remote - e->reg.base);
    return e;

out_failed:
    opal_output_verbose(MCA_BASE_VERBOSE_ERROR, opal_smsc_base_framework.framework_output,
                        "smsc:knemlike: cannot map %zu bytes at %p of peer %s: %s", size,
                        remote_address,
                        ep && ep->super.proc ? OPAL_NAME_PRINT(ep->super.proc->proc_name) : "?",
                        NULL == ep || !ep->mappable ? "it published no export"
                                                    : strerror(-err));
    *local_mapping = NULL;
    return NULL;
}

void mca_smsc_knemlike_unmap_peer_region(void *ctx)
{
    struct smsc_knemlike_cache_entry *e = ctx;
    if (NULL == e) {
        return;
    }
    if (NULL == e->cache) { /* MCA_RCACHE_FLAGS_CACHE_BYPASS */
        (void) knemlike_map_detach(NULL, &e->reg);
        free(e);
        return;
    }
    struct smsc_knemlike_endpoint *ep =
        (struct smsc_knemlike_endpoint *) ((char *) e->cache
                                           - offsetof(struct smsc_knemlike_endpoint, maps));
    OPAL_THREAD_LOCK(&ep->lock);
    struct smsc_knemlike_cache_stats before = ep->maps.stats;
    smsc_knemlike_cache_release(&ep->maps, e); /* stays mapped, least recently used last */
    knemlike_map_count(&before, &ep->maps.stats);
    OPAL_THREAD_UNLOCK(&ep->lock);
}
