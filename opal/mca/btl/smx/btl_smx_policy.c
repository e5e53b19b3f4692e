/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx policy: built once from the parameters, the node and the cost of a single copy
 * (btl_smx_calibrate.c finds it; btl_smx_policy.h has the decision itself).
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx_policy.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct smx_policy mca_btl_smx_policy;

/* Can the selected smsc component copy into a peer without the peer's registration
 * (what a push needs)? */
static bool smx_can_push(void)
{
    return NULL != mca_smsc && !mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION);
}

/* More processes of the job on the node than hardware threads it may use (a crowded
 * node: every core is the job's). */
static bool smx_crowded(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return c->hw_threads > 0 && c->num_local > c->hw_threads;
}

/* What a process keeps in shared memory for its large messages (btl_smx_get.c;
 * btl_smx_chunks.c, smx_chunks_cycle).
 * - A peer's get pieces of mine in flight: 32 fragments' worth (as in the rings of 32
 *   slots the design began with), so that a receiver running beside me never waits.
 * - Whole-fragment chunks written before one is written again: twice the largest L2, at
 *   least 1 MiB, so that a chunk's lines have left the reader's L2 (a writer takes a line
 *   still in another core's cache line by line; from the shared cache or memory at once).
 * On a crowded node a receiver mostly reads my pieces after it is scheduled in, often on
 * the core I leave: pieces copied far ahead and chunks gone round a long cycle only push
 * the buffers and each other out of that core's L2. There, a peer's pieces fill a quarter
 * of the L2 at most (4 at least), and chunks come round after half of it
 * (docs/performance.md, "A crowded node": a cap on all peers' pieces together was
 * slower). */
#define SMX_PIECES_MAX 32
#define SMX_PIECES_MAX_CROWDED_MIN 4
#define SMX_CHUNK_CYCLE_MIN (1ull << 20)

static void smx_footprint(struct smx_policy *p)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const unsigned long long l2 = c->l2_bytes;

    if (!smx_crowded()) {
        p->pieces_max = SMX_PIECES_MAX;
        p->chunk_cycle = 2 * l2 < SMX_CHUNK_CYCLE_MIN ? SMX_CHUNK_CYCLE_MIN : 2 * l2;
        return;
    }
    const unsigned long long n = l2 / 4 / (unsigned long long) c->frag_size;
    p->pieces_max = n < SMX_PIECES_MAX_CROWDED_MIN ? SMX_PIECES_MAX_CROWDED_MIN
                    : n > SMX_PIECES_MAX           ? SMX_PIECES_MAX
                                                   : (int) n;
    p->chunk_cycle = l2 / 2;
}

static bool smx_oversubscribed(void)
{
    return mca_btl_smx_component.single_copy_oversubscribed && smx_crowded();
}

static bool smx_busy_from_start(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return SMX_NEVER_BUSY != c->busy_ranks && c->num_local > c->busy_ranks;
}

/* The rules that replace two memcpys by one smsc copy whatever the class. */
static bool smx_rules_apply(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return (c->exchange_push && smx_can_push()) || smx_oversubscribed()
           || (SMX_OFF != c->single_copy_min_busy
               && (smx_busy_from_start() || SMX_NEVER_BUSY != c->busy_transfers));
}

static bool smx_window_possible(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return SMX_OFF != c->single_copy_window_max && SMX_NEVER != c->single_copy_window_cost_max;
}

bool mca_btl_smx_policy_needs_cost(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return NULL != mca_smsc
           && ((smx_rules_apply() && c->single_copy_cost_max > 0)
               || (smx_window_possible() && c->single_copy_window_cost_max > 0));
}

/* A single copy measured at cost memcpys (NAN or < 0: unknown) is cheap by the limit
 * (% of a memcpy, or never / always). */
static bool smx_cheap_by(int limit, double cost)
{
    if (SMX_ALWAYS == limit) {
        return true;
    }
    return SMX_NEVER != limit && cost >= 0.0 && cost * 100.0 <= (double) limit;
}

static const char *smx_bytes_or_never(size_t bytes, char words[24])
{
    if (0 == bytes) {
        return "never";
    }
    snprintf(words, 24, "%zu", bytes);
    return words;
}

void mca_btl_smx_policy_build(double cost, const char *cost_origin, const char *thresholds_origin)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    struct smx_policy *p = &mca_btl_smx_policy;
    const bool cheap = NULL != mca_smsc && smx_cheap_by(c->single_copy_cost_max, cost);
    const bool window = NULL != mca_smsc && smx_window_possible()
                        && smx_cheap_by(c->single_copy_window_cost_max, cost);

    memset(p, 0, sizeof(*p));
    p->cost = isnan(cost) ? -1.0 : cost;
    p->cost_origin = cost_origin;
    p->thresholds_origin = thresholds_origin;
    p->busy_always = smx_busy_from_start();
    p->busy_transfers = c->busy_transfers;
    p->push = c->exchange_push && smx_can_push() && cheap;
    p->adaptive = c->adaptive_copy && NULL != mca_smsc;
    /* With more processes than hardware threads every core is the job's: a get that
     * waits for its peer to be scheduled lends its core to another rank, and what the job
     * can do is what its copies cost in CPU time, not how long each get lasts. */
    p->by_work = p->adaptive && smx_crowded();
    smx_footprint(p);
    p->every_get_single = smx_oversubscribed() && cheap;
    /* A rendezvous holds its sender until the receiver, scheduled in, has taken it (even
     * pushed ahead: the FIN); on a crowded node that is a wait for the scheduler. Where
     * gets go by double copy, an eager message costs the same copies (and the gather of
     * its chunks) and lets the sender go on: there every receiver is taken for late, up
     * to two fragments (4-rank all-to-all on 2 cores, in cache: 40,000 B-64 KiB
     * 1.10-1.14x; mca_btl_smx_policy_apply). */
    p->late_all = smx_crowded() && !p->every_get_single && SMX_SKEW_ON == c->skew
                  && 0 != c->skew_eager_max;
    p->window_max = window ? (size_t) c->single_copy_window_max : 0;
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        struct smx_class_policy *k = &p->cls[cls];
        size_t eager = (size_t) c->eager_limit[cls];

        if (p->busy_always && SMX_OFF != c->eager_limit_busy
            && (size_t) c->eager_limit_busy < eager) {
            eager = (size_t) c->eager_limit_busy;
        }
        if (window && SMX_OFF != c->eager_limit_window && (size_t) c->eager_limit_window < eager) {
            eager = (size_t) c->eager_limit_window;
        }
        k->eager_limit = eager;
        /* a rendezvous's first fragment carries at least what an eager message may */
        k->rndv_eager_limit = m->btl_rndv_eager_limit > (size_t) c->eager_limit[cls]
                                  ? m->btl_rndv_eager_limit : (size_t) c->eager_limit[cls];
        k->single_copy_min = (size_t) c->single_copy_min[cls];
        k->single_copy_min_busy = k->single_copy_min;
        if (cheap && SMX_OFF != c->single_copy_min_busy
            && (0 == k->single_copy_min || (size_t) c->single_copy_min_busy < k->single_copy_min)) {
            k->single_copy_min_busy = (size_t) c->single_copy_min_busy;
        }
    }
    p->built = true;
}

void mca_btl_smx_policy_apply(mca_btl_smx_module_t *module)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_class_policy *k = &mca_btl_smx_policy.cls[module->cls];
    size_t eager = k->eager_limit, rndv_eager = k->rndv_eager_limit;

    if (module->short_peers > 0) {
        eager = eager < SMX_SHORT_EAGER ? eager : SMX_SHORT_EAGER;
        rndv_eager = eager;
    }
    /* ob1 reads these at each send (pml_ob1_sendreq.h); the RDMA pipeline is off, its
     * lengths follow the eager limit. The single-copy threshold is no ob1 notion: ob1
     * hands every contiguous message above the eager limit to btl_get, which asks
     * mca_btl_smx_single_copy(). */
    module->super.btl_rdma_pipeline_send_length = eager;
    module->super.btl_rdma_pipeline_frag_size = eager;
    module->super.btl_rndv_eager_limit = rndv_eager;
    /* A peer late to receive (btl_smx_skew.c): messages up to the skew limit go eagerly,
     * a send then completes once written. On a crowded node (late_all), up to two
     * fragments: the receiver gathers a message's chunks into one buffer, and a 4-rank
     * all-to-all of 128 KiB eagerly, faster in cache, was not off cache; at 8 ranks it
     * was 1.2x slower than by rendezvous. */
    if (0 != c->skew_eager_max && c->skew_eager_max > eager
        && (SMX_SKEW_ALWAYS == c->skew || module->late_peers > 0)) {
        eager = c->skew_eager_max;
    } else if (mca_btl_smx_policy.late_all) {
        const size_t two = 2 * mca_btl_smx_chunk_room_max();
        const size_t late = c->skew_eager_max < two ? c->skew_eager_max : two;
        eager = late > eager ? late : eager;
    }
    module->super.btl_eager_limit = eager;
}

/*
 * btl_smx_policy, for tools (contrib/smx-tune reads it through MPI_T) and for people
 * (btl_base_verbose info prints it when it changes): space-separated key=value words. Sizes
 * in bytes, "never" for no single copy:
 *   cost=<memcpys|unknown>
 *   cost_from=<file|local-rank-0|this-process|parameter|not-needed|unmeasurable>
 *   thresholds_from=<file|defaults> calibration=<the calibration file|none>
 *   window_max=<bytes> every_get_single=<0|1> busy_always=<0|1>
 *   busy_transfers=<n|never> push=<0|1> adaptive=<0|1|work>   (work: by_work)
 *   pieces_in_flight=<n> chunk_cycle=<bytes>   (smx_footprint)
 *   skew=<off|on|always> skew_late_us=<us> skew_eager_limit=<bytes|never> late_all=<0|1>
 *   <class>.eager_limit= <class>.rndv_eager_limit= <class>.single_copy_min=
 *   <class>.single_copy_min_busy= <class>.late_peers=
 *                                          (for each class this process has a module of)
 *   peer<local rank>=<class> peer<local rank>.smsc=<0|1>   (each peer attached so far)
 */
void mca_btl_smx_policy_publish(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_policy *p = &mca_btl_smx_policy;
    const char *path = mca_btl_smx_calibration_path(), *file = NULL != path ? path : "none";
    size_t size = 640 + strlen(file) + 200 * SMX_CLASS_COUNT + 48 * (size_t) c->num_local, n;
    char *text = malloc(size), a[24], b[24];

    if (NULL == text) {
        return;
    }
    n = (size_t) snprintf(text, size, p->cost >= 0.0 ? "cost=%.2f" : "cost=unknown", p->cost);
    n += (size_t) snprintf(text + n, size - n, " cost_from=%s thresholds_from=%s calibration=%s",
                           p->cost_origin, p->thresholds_origin, file);
    snprintf(a, sizeof(a), "%d", p->busy_transfers);
    n += (size_t) snprintf(text + n, size - n,
                           " window_max=%zu every_get_single=%d busy_always=%d busy_transfers=%s "
                           "push=%d adaptive=%s", p->window_max, p->every_get_single,
                           p->busy_always, p->busy_transfers < 0 ? "never" : a, p->push,
                           p->by_work ? "work" : p->adaptive ? "1" : "0");
    n += (size_t) snprintf(text + n, size - n, " pieces_in_flight=%d chunk_cycle=%llu",
                           p->pieces_max, (unsigned long long) p->chunk_cycle);
    n += (size_t) snprintf(text + n, size - n,
                           " skew=%s skew_late_us=%d skew_eager_limit=%s late_all=%d",
                           SMX_SKEW_OFF == c->skew ? "off"
                           : SMX_SKEW_ON == c->skew ? "on" : "always",
                           c->skew_late_us, smx_bytes_or_never(c->skew_eager_max, a),
                           p->late_all);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const struct smx_class_policy *k = &p->cls[cls];
        const char *name = smx_locality_class_name(cls);

        if (NULL != c->modules[cls]) {
            n += (size_t) snprintf(text + n, size - n,
                                   " %s.eager_limit=%zu %s.rndv_eager_limit=%zu "
                                   "%s.single_copy_min=%s %s.single_copy_min_busy=%s "
                                   "%s.late_peers=%d",
                                   name, k->eager_limit, name, k->rndv_eager_limit, name,
                                   smx_bytes_or_never(k->single_copy_min, a), name,
                                   smx_bytes_or_never(k->single_copy_min_busy, b), name,
                                   c->modules[cls]->late_peers);
        }
    }
    for (int r = 0; NULL != c->peers && r < c->num_local; ++r) {
        const mca_btl_smx_endpoint_t *ep = c->peers[r];

        if (NULL != ep) {
            n += (size_t) snprintf(text + n, size - n, " peer%d=%s peer%d.smsc=%d", r,
                                   smx_locality_class_name(ep->cls), r,
                                   NULL != ep->smsc_endpoint);
        }
    }
    if (NULL == c->policy_text || 0 != strcmp(text, c->policy_text)) {
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT, "btl:smx: policy: %s", text);
    }
    free(c->policy_text);
    c->policy_text = text;
}

/* A pair whose single copies cost at most half its double copies (measured on gets up
 * to SMX_SHORT_EAGER_UPTO) would send messages above SMX_SHORT_EAGER better by get too:
 * its class's module shortens its eager limit while any of its peers is so. */
static void smx_short_eager(mca_btl_smx_endpoint_t *ep, size_t size)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    bool want;

    if (size > SMX_SHORT_EAGER_UPTO || NULL == ep->module) {
        return;
    }
    want = smx_adapt_single_far_cheaper(&ep->adapt, size);
    if (want == ep->short_eager) {
        return;
    }
    OPAL_THREAD_LOCK(&c->lock);
    ep->short_eager = want;
    ep->module->short_peers += want ? 1 : -1;
    mca_btl_smx_policy_apply(ep->module);
    OPAL_THREAD_UNLOCK(&c->lock);
    opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT,
                        "btl:smx: %s: eager limit of class %s %zu (%d peers with single copy "
                        "far cheaper)", OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                        smx_locality_class_name(ep->module->cls),
                        ep->module->super.btl_eager_limit, ep->module->short_peers);
}

void mca_btl_smx_copy_measured(mca_btl_smx_endpoint_t *ep, size_t size, enum smx_copy how,
                               uint64_t bytes, uint64_t ns)
{
    const struct smx_adapt_range *k;
    bool changed;
    int r;

    if (!mca_btl_smx_policy.adaptive) {
        return;
    }
    changed = smx_adapt_measured(&ep->adapt, size, how, bytes, ns);
    smx_short_eager(ep, size);
    if (!changed) {
        return;
    }
    mca_btl_smx_count(&mca_btl_smx_component.stats.copy_switches);
    r = smx_adapt_range_of(size);
    k = &ep->adapt.range[r];
    opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT,
                        "btl:smx: %s: gets of %zu KiB%s from %s by %s copy now (measured %u ns "
                        "per KiB by single copy, %u by double copy)",
                        OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                        ((size_t) 1 << (SMX_ADAPT_MIN_SHIFT + r)) / 1024,
                        r == SMX_ADAPT_RANGES - 1 ? " and more" : " up to twice that",
                        NULL != ep->proc ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a peer",
                        SMX_COPY_SINGLE == k->pick ? "single" : "double",
                        k->cost[SMX_COPY_SINGLE], k->cost[SMX_COPY_DOUBLE]);
}

/* The policy from the node's numbers, as local rank 0 found them at init (its segment,
 * which the first add_procs maps with the others: btl_smx_calibrate.c). */
void mca_btl_smx_policy_setup(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_smx_endpoint_t *first = c->peers[0];
    const struct smx_segment_header *h = 0 == c->local_rank ? c->segment
                                         : NULL != first ? first->peer_segment : NULL;

    mca_btl_smx_policy_build_for_node(h);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (NULL != c->modules[cls]) {
            mca_btl_smx_policy_apply(c->modules[cls]);
        }
    }
}
