/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the numbers measured on the node. What a copy through the smsc component costs
 * against memcpy, out of cache: local rank 0 measures it at init and leaves it in its
 * segment's header for the others (btl_smx_component.c, btl_smx_module.c).
 */
#include "opal_config.h"

#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_calfile.h"
#include "btl_smx_policy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ------------------------------------------------------------------ the probe */

/* One copy of the probe, and how many of each kind (alternately, each on buffers of its
 * own). */
#define SMX_PROBE_COPY (1024 * 1024)
#define SMX_PROBE_COPIES 8
/* The pool's bounds: where the topology shows no cache, and where a cache is so large
 * that a pool larger than it would make the probe slow (faulting in every page of the
 * pool once is most of what the probe costs). */
#define SMX_PROBE_POOL_MIN (8 * 1024 * 1024)
#define SMX_PROBE_POOL_MAX (128 * 1024 * 1024)
#define SMX_PROBE_POOL_UNKNOWN (40 * 1024 * 1024)

struct smx_probe {
    double cost;                   /* single copy in memcpys; < 0: it could not copy */
    double single_gbs, memcpy_gbs; /* the median copy's rate, GB/s */
    size_t pool;                   /* bytes of buffers it went through */
    double ms;                     /* what the whole probe took */
};

/* The pool the copies go through: a quarter more than the largest cache, so that a buffer
 * a copy takes has left the caches since it was last touched (as a message's buffers
 * have, between one transfer and the next, in a real application). */
static size_t smx_probe_pool(void)
{
    uint64_t cache = NULL != opal_hwloc_topology ? smx_calib_largest_cache(opal_hwloc_topology) : 0;
    uint64_t pool = 0 == cache ? SMX_PROBE_POOL_UNKNOWN : cache + cache / 4;

    pool = pool < SMX_PROBE_POOL_MIN ? SMX_PROBE_POOL_MIN
           : pool > SMX_PROBE_POOL_MAX ? SMX_PROBE_POOL_MAX : pool;
    return (size_t) (pool + 2 * SMX_PROBE_COPY - 1) / (2 * SMX_PROBE_COPY) * (2 * SMX_PROBE_COPY);
}

static int smx_by_time(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}

static uint64_t smx_median(uint64_t *t, int n)
{
    qsort(t, (size_t) n, sizeof(*t), smx_by_time);
    return (t[(n - 1) / 2] + t[n / 2]) / 2;
}

/*
 * What a transfer costs by single copy, in memcpys: SMX_PROBE_COPIES copies of 1 MiB
 * through the smsc component (an endpoint to myself) and as many by memcpy, alternately,
 * each from and to buffers of a pool larger than the caches, written once at the start
 * and taken in order, so that both the source and the destination of every copy come
 * from memory; the ratio of the medians. An in-cache copy would measure the mechanism's
 * own cost (CMA pins and maps every page) against a memcpy far faster than any transfer
 * of an application's data.
 */
static void smx_probe_run(struct smx_probe *pr)
{
    const uint64_t start = mca_btl_smx_now_ns();
    const size_t pool = smx_probe_pool(), pairs = pool / (2 * SMX_PROBE_COPY);
    uint64_t t_single[SMX_PROBE_COPIES], t_memcpy[SMX_PROBE_COPIES], single, copy;
    mca_smsc_endpoint_t *self = NULL;
    unsigned char *buf;
    void *reg = NULL;

    memset(pr, 0, sizeof(*pr));
    pr->cost = -1.0;
    pr->pool = pool;
    if (NULL == mca_smsc) {
        return;
    }
    buf = mmap(NULL, pool, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == buf) {
        return;
    }
    /* every page written once, in order (a copy into a page never touched would measure
     * the page fault) */
#if defined(MADV_POPULATE_WRITE)
    if (0 != madvise(buf, pool, MADV_POPULATE_WRITE))
#endif
    {
        memset(buf, 1, pool);
    }
    self = MCA_SMSC_CALL(get_endpoint, opal_proc_local_get());
    if (NULL == self) {
        goto out;
    }
    if (mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
        reg = MCA_SMSC_CALL(register_region, buf, pool);
        if (NULL == reg) {
            goto out;
        }
    }
    for (size_t i = 0; i < 2 * SMX_PROBE_COPIES; ++i) {
        unsigned char *from = buf + (i % pairs) * 2 * SMX_PROBE_COPY, *to = from + SMX_PROBE_COPY;
        const uint64_t t0 = mca_btl_smx_now_ns();

        if (0 == i % 2) {
            memcpy(to, from, SMX_PROBE_COPY);
            t_memcpy[i / 2] = mca_btl_smx_now_ns() - t0;
        } else if (OPAL_SUCCESS
                   == MCA_SMSC_CALL(copy_from, self, to, from, SMX_PROBE_COPY, reg)) {
            t_single[i / 2] = mca_btl_smx_now_ns() - t0;
        } else {
            goto out;
        }
    }
    single = smx_median(t_single, SMX_PROBE_COPIES);
    copy = smx_median(t_memcpy, SMX_PROBE_COPIES);
    pr->cost = (double) single / (double) (0 == copy ? 1 : copy);
    pr->single_gbs = (double) SMX_PROBE_COPY / (double) (0 == single ? 1 : single);
    pr->memcpy_gbs = (double) SMX_PROBE_COPY / (double) (0 == copy ? 1 : copy);
out:
    if (NULL != reg) {
        MCA_SMSC_CALL(deregister_region, reg);
    }
    if (NULL != self) {
        MCA_SMSC_CALL(return_endpoint, self);
    }
    munmap(buf, pool);
    pr->ms = (double) (mca_btl_smx_now_ns() - start) / 1e6;
}

double mca_btl_smx_measure_single_copy_cost(void)
{
    struct smx_probe pr;

    smx_probe_run(&pr);
    return pr.cost;
}
