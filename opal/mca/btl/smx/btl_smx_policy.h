/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx policy: where a message goes eagerly, by single copy or by double copy.
 *
 * Built once per process, at the first add_procs, from the parameters, the node's
 * calibration file, the number of processes on the node, the hardware threads and what a
 * single copy costs here (read or measured once per node, btl_smx_calibrate.c).
 * Afterwards the node's load counter, read at each decision, and what each peer's gets
 * were measured to cost (btl_smx_adapt.h) change an answer. docs/using-smx.md ("How
 * btl/smx decides") has the same rules as a table.
 */
#ifndef MCA_BTL_SMX_POLICY_H
#define MCA_BTL_SMX_POLICY_H

#include "btl_smx.h"

#include <time.h>

BEGIN_C_DECLS

struct smx_segment_header;

struct smx_class_policy {
    size_t eager_limit;          /* largest eager message (ob1 reads it from the module) */
    size_t rndv_eager_limit;     /* first fragment of a rendezvous that cannot go by get */
    size_t single_copy_min;      /* node idle: smallest get by single copy; 0 never */
    size_t single_copy_min_busy; /* node busy: the same */
};

struct smx_policy {
    bool built;
    struct smx_class_policy cls[SMX_CLASS_COUNT];
    size_t window_max;      /* every get of 1 to window_max bytes by single copy */
    bool every_get_single;  /* oversubscribed (and single copy cheap): every get */
    bool busy_always;       /* more processes than btl_smx_busy_ranks: busy from the start */
    int busy_transfers;     /* busy while more large transfers are in flight; < 0: never */
    bool push;              /* serve an exchange's double-copy get by one copy into the peer */
    bool adaptive;          /* each peer's gets by the copy measured faster (btl_smx_adapt.h) */
    bool by_work;           /* ... measured by the CPU time its copies take, not how long
                               the get lasts: more processes than hardware threads */
    int pieces_max;         /* a peer's get pieces of mine in shared memory at a time */
    uint64_t chunk_cycle;   /* bytes of whole-fragment chunks written before one is again */
    bool late_all;          /* every receiver taken for late (btl_smx_skew.c): crowded,
                               gets not all by single copy, and a skew limit the area
                               allows */
    /* what it was built from, for btl_base_verbose */
    double cost;            /* a single copy in memcpys; < 0: unknown */
    const char *cost_origin;
    const char *thresholds_origin; /* "file": some from the calibration file; "defaults" */
};

extern struct smx_policy mca_btl_smx_policy;

/* Does the policy depend on what a single copy costs here (then local rank 0 measures
 * it at init, unless the calibration file or a parameter gives it)? */
bool mca_btl_smx_policy_needs_cost(void);
/* Build the policy once (cost: the node's, or NAN if there is none; where it and the
 * thresholds came from, for btl_smx_policy). */
void mca_btl_smx_policy_build(double cost, const char *cost_origin, const char *thresholds_origin);

/* btl_smx_calibrate.c: the numbers measured on the node. */
/* The calibration file this process uses (btl_smx_calibration_file, 'auto' resolved);
 * NULL: none. */
const char *mca_btl_smx_calibration_path(void);
/* Local rank 0, at init: read the calibration file (or measure, and write it) into its
 * segment's header. */
void mca_btl_smx_calibrate_node(void);
/* Every process, at its first add_procs: the policy from the node's numbers as local rank
 * 0's header 'h' holds them (NULL, or not filled: this process measures for itself). */
void mca_btl_smx_policy_build_for_node(const struct smx_segment_header *h);
/* The same at the first add_procs, from local rank 0's segment (mapped first), and every
 * module given its limits. */
void mca_btl_smx_policy_setup(void);
/* Give a module the limits of its class (shorter while a peer's measurements say so:
 * mca_btl_smx_copy_measured): the one place a module's limits are set. */
void mca_btl_smx_policy_apply(mca_btl_smx_module_t *module);
/* Publish the policy and the class of every attached peer in btl_smx_policy (and print
 * it at btl_base_verbose info when it changed). */
void mca_btl_smx_policy_publish(void);

static inline bool mca_btl_smx_node_busy(const struct smx_policy *p)
{
    const uint32_t *counter = mca_btl_smx_component.transfers_in_flight;

    return p->busy_always
           || (p->busy_transfers >= 0 && NULL != counter
               && __atomic_load_n(counter, __ATOMIC_RELAXED) > (uint32_t) p->busy_transfers);
}

static inline uint64_t mca_btl_smx_now_ns(void)
{
    struct timespec t;

    (void) clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

/* What the rules above say a get of 'size' bytes from ep starts with (before any
 * measurement); ep has a single-copy endpoint. */
static inline bool mca_btl_smx_single_copy_by_rule(const mca_btl_smx_endpoint_t *ep,
                                                   size_t size)
{
    const struct smx_policy *p = &mca_btl_smx_policy;
    const struct smx_class_policy *k = &p->cls[ep->cls];
    size_t min;

    if (p->every_get_single || (0 != size && size <= p->window_max)) {
        return true;
    }
    min = k->single_copy_min;
    if (k->single_copy_min_busy != min && mca_btl_smx_node_busy(p)) {
        min = k->single_copy_min_busy;
    }
    return 0 != min && size >= min;
}

/*
 * The one decision between single and double copy, for this peer, this size, now.
 * serving: this process is asked for the data (it may push it by one copy into the
 * peer, an exchange); otherwise it pulls the data (btl_get): the rules above say where a
 * peer starts, and its measured gets where it goes from there.
 */
static inline bool mca_btl_smx_single_copy(mca_btl_smx_endpoint_t *ep, size_t size,
                                           bool serving)
{
    const struct smx_policy *p = &mca_btl_smx_policy;
    bool single;

    if (NULL == ep->smsc_endpoint) {
        return false;
    }
    if (serving) {
        return p->push && __atomic_load_n(&ep->pulling, __ATOMIC_RELAXED) > 0;
    }
    single = mca_btl_smx_single_copy_by_rule(ep, size);
    if (!p->adaptive) {
        return single;
    }
    return SMX_COPY_SINGLE == smx_adapt_choose(&ep->adapt, size,
                                               single ? SMX_COPY_SINGLE : SMX_COPY_DOUBLE);
}

/* The same question asked where no get follows (the sender deciding to push ahead,
 * btl_smx_push.c): the method in use, without taking a turn of the adaptive copy's tries,
 * which only a get can measure. */
static inline bool mca_btl_smx_single_copy_now(const mca_btl_smx_endpoint_t *ep, size_t size)
{
    bool single;

    if (NULL == ep->smsc_endpoint) {
        return false;
    }
    single = mca_btl_smx_single_copy_by_rule(ep, size);
    if (!mca_btl_smx_policy.adaptive) {
        return single;
    }
    return SMX_COPY_SINGLE == smx_adapt_current(&ep->adapt, size,
                                                single ? SMX_COPY_SINGLE : SMX_COPY_DOUBLE);
}

/* Messages above this many bytes go to btl_get, not eagerly, while single copy from a
 * peer of the module's class is measured at most half as dear as double copy up to
 * SMX_SHORT_EAGER_UPTO bytes (as btl/sm's default eager limit: smaller messages gain
 * nothing from a single copy). */
#define SMX_SHORT_EAGER 4096
#define SMX_SHORT_EAGER_UPTO (256 * 1024)
/* Gets from this peer completed: 'how' moved 'bytes' in 'ns' (the range of 'size'). */
void mca_btl_smx_copy_measured(mca_btl_smx_endpoint_t *ep, size_t size, enum smx_copy how,
                               uint64_t bytes, uint64_t ns);

END_C_DECLS

#endif /* MCA_BTL_SMX_POLICY_H */
