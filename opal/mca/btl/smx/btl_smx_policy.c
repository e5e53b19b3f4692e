/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx policy: built once from the parameters, the node and the measured cost of a
 * single copy (btl_smx_policy.h has the decision itself).
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

static bool smx_oversubscribed(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return c->single_copy_oversubscribed && c->hw_threads > 0 && c->num_local > c->hw_threads;
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

static const char *smx_onoff(bool wanted, bool cheap)
{
    return !wanted ? "off" : cheap ? "on" : "off (single copy too dear)";
}

static const char *smx_bytes_or_never(size_t bytes, char words[24])
{
    if (0 == bytes) {
        return "never";
    }
    snprintf(words, 24, "%zu", bytes);
    return words;
}

void mca_btl_smx_policy_build(double cost, const char *origin)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    struct smx_policy *p = &mca_btl_smx_policy;
    const bool cheap = NULL != mca_smsc && smx_cheap_by(c->single_copy_cost_max, cost);
    const bool window = NULL != mca_smsc && smx_window_possible()
                        && smx_cheap_by(c->single_copy_window_cost_max, cost);
    char cost_words[96], window_words[64];

    memset(p, 0, sizeof(*p));
    p->cost = isnan(cost) ? -1.0 : cost;
    p->cost_origin = origin;
    p->num_local = c->num_local;
    p->hw_threads = c->hw_threads;
    p->busy_always = smx_busy_from_start();
    p->busy_transfers = c->busy_transfers;
    p->push = c->exchange_push && smx_can_push() && cheap;
    p->every_get_single = smx_oversubscribed() && cheap;
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

    if (p->cost >= 0.0) {
        snprintf(cost_words, sizeof(cost_words), "%.2f memcpys (4 MiB, %s)", p->cost, origin);
    } else {
        snprintf(cost_words, sizeof(cost_words), "an unknown amount (%s)", origin);
    }
    if (0 != p->window_max) {
        snprintf(window_words, sizeof(window_words), "up to %zu bytes", p->window_max);
    } else {
        snprintf(window_words, sizeof(window_words), "%s",
                 smx_window_possible() && NULL != mca_smsc ? "off (single copy too dear)" : "off");
    }
    opal_output_verbose(1, c->output,
                        "btl:smx: a single copy costs %s here: exchange push %s, oversubscribed "
                        "single copy %s, busy single copy %s; single-copy window %s",
                        cost_words, smx_onoff(c->exchange_push && smx_can_push(), cheap),
                        smx_onoff(smx_oversubscribed(), cheap),
                        smx_onoff(NULL != mca_smsc && smx_rules_apply(), cheap), window_words);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const struct smx_class_policy *k = &p->cls[cls];

        if (NULL == c->modules[cls]) {
            continue;
        }
        char idle[24], busy[24];

        opal_output_verbose(1, c->output,
                            "btl:smx: policy %s: eager limit %zu, rendezvous first fragment %zu, "
                            "single copy from %s, busy from %s%s%s",
                            smx_locality_class_name(cls), k->eager_limit, k->rndv_eager_limit,
                            smx_bytes_or_never(k->single_copy_min, idle),
                            smx_bytes_or_never(k->single_copy_min_busy, busy),
                            p->busy_always ? ", node busy from the start" : "",
                            p->every_get_single ? ", every rendezvous single (oversubscribed)" : "");
    }
}

void mca_btl_smx_policy_apply(mca_btl_smx_module_t *module)
{
    const struct smx_class_policy *k = &mca_btl_smx_policy.cls[module->cls];

    /* ob1 reads these at each send (pml_ob1_sendreq.h); the RDMA pipeline is off, its
     * lengths follow the eager limit. The single-copy threshold is no ob1 notion: ob1
     * hands every contiguous message above the eager limit to btl_get, which asks
     * mca_btl_smx_single_copy(). */
    module->super.btl_eager_limit = k->eager_limit;
    module->super.btl_rdma_pipeline_send_length = k->eager_limit;
    module->super.btl_rdma_pipeline_frag_size = k->eager_limit;
    module->super.btl_rndv_eager_limit = k->rndv_eager_limit;
}

void mca_btl_smx_policy_print_peer(const mca_btl_smx_endpoint_t *ep)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_policy *p = &mca_btl_smx_policy;
    const struct smx_class_policy *k = &p->cls[ep->cls];
    char single[128], busy_words[24], idle[24], window[64] = "";
    const char *busy = smx_bytes_or_never(k->single_copy_min_busy, busy_words);

    if (NULL == ep->smsc_endpoint) {
        snprintf(single, sizeof(single), "never (no single-copy endpoint)");
    } else if (p->every_get_single) {
        snprintf(single, sizeof(single), "1, every rendezvous (oversubscribed: %d processes > %d "
                 "hardware threads)", p->num_local, p->hw_threads);
    } else if (p->busy_always) {
        snprintf(single, sizeof(single), "%s (node busy)", busy);
    } else {
        snprintf(single, sizeof(single), "%s (busy: %s)",
                 smx_bytes_or_never(k->single_copy_min, idle), busy);
    }
    if (NULL != ep->smsc_endpoint && 0 != p->window_max) {
        snprintf(window, sizeof(window), ", single-copy window up to %zu", p->window_max);
    }
    opal_output_verbose(10, c->output,
                        "btl:smx: peer %s (local rank %d): class %s, eager limit %zu, rendezvous "
                        "first fragment %zu, single copy from %s%s, %s",
                        OPAL_NAME_PRINT(ep->proc->proc_name), ep->peer_local_rank,
                        smx_locality_class_name(ep->cls), k->eager_limit, k->rndv_eager_limit,
                        single, window,
                        p->busy_always ? "node busy: more processes than btl_smx_busy_ranks"
                        : p->busy_transfers < 0 ? "never busy by transfers"
                                                : "busy above btl_smx_busy_transfers in flight");
}

static uint64_t smx_now_ns(void)
{
    struct timespec t;

    (void) clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

/* Copy 4 MiB of my own memory through the smsc component (an endpoint to myself) and
 * with memcpy, alternately, five times each; the ratio of the fastest of each. Both
 * touch the same buffers, so both see the same caches: what differs is the mechanism's
 * own cost (CMA pins and maps the pages one by one). */
double mca_btl_smx_measure_single_copy_cost(void)
{
    const size_t size = 4 * 1024 * 1024;
    uint64_t best_memcpy = UINT64_MAX, best_single = UINT64_MAX;
    mca_smsc_endpoint_t *self;
    unsigned char *buf = NULL;
    void *reg = NULL;
    double cost = -1.0;

    if (NULL == mca_smsc || 0 != posix_memalign((void **) &buf, 4096, 2 * size)) {
        return -1.0;
    }
    memset(buf, 1, 2 * size);
    self = MCA_SMSC_CALL(get_endpoint, opal_proc_local_get());
    if (NULL == self) {
        free(buf);
        return -1.0;
    }
    if (mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
        reg = MCA_SMSC_CALL(register_region, buf, size);
        if (NULL == reg) {
            goto out;
        }
    }
    for (int i = 0; i < 5; ++i) {
        uint64_t t0 = smx_now_ns(), t1, t2;

        memcpy(buf + size, buf, size);
        t1 = smx_now_ns();
        if (OPAL_SUCCESS != MCA_SMSC_CALL(copy_from, self, buf + size, buf, size, reg)) {
            goto out;
        }
        t2 = smx_now_ns();
        best_memcpy = t1 - t0 < best_memcpy ? t1 - t0 : best_memcpy;
        best_single = t2 - t1 < best_single ? t2 - t1 : best_single;
    }
    cost = (double) best_single / (double) (0 == best_memcpy ? 1 : best_memcpy);
out:
    if (NULL != reg) {
        MCA_SMSC_CALL(deregister_region, reg);
    }
    MCA_SMSC_CALL(return_endpoint, self);
    free(buf);
    return cost;
}
