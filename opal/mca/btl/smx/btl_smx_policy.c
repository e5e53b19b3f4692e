/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx policy: where each peer starts, the word between receiver and sender, and what
 * the policy is made of for btl_smx_policy (btl_smx_policy.h has the decisions).
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_frag.h"
#include "btl_smx_policy.h"
#include "btl_smx_send.h"
#include "btl_smx_types.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct smx_policy mca_btl_smx_policy;

/* More processes of the job on the node than hardware threads it may use (a crowded
 * node: every core is the job's). */
static bool smx_crowded(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return c->hw_threads > 0 && c->num_local > c->hw_threads;
}

/* A crowded node whose chunk areas are too small for an exchange: a single copy can be
 * made here, and my area holds fewer whole fragments than I have peers. */
static bool smx_cramped(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return NULL != mca_smsc && !c->smsc_forbidden
           && c->area_max / (uint64_t) c->frag_size < (uint64_t) (c->num_local - 1);
}

/* What a process keeps in shared memory for its large messages (pieces_max: btl_smx_get.c;
 * the component's chunk_cycle: btl_smx_chunks.c, smx_chunks_cycle).
 * - A peer's get pieces of mine in flight: 32 fragments' worth (as in the rings of 32
 *   slots the design began with), so that a receiver running beside me never waits.
 * - Whole-fragment chunks written before one is written again: twice the largest L2, at
 *   least 1 MiB, so that a chunk's lines have left the reader's L2 (a writer takes a line
 *   still in another core's cache line by line; from the shared cache or memory at once).
 * On a crowded node a receiver mostly reads my pieces after it is scheduled in, often on
 * the core I leave: pieces copied far ahead and chunks gone round a long cycle only push
 * the buffers and each other out of that core's L2. There, a peer's pieces fill a quarter
 * of the L2 at most (4 at least), and chunks come round after half of it
 * (docs/performance.md, "A crowded node"). */
#define SMX_PIECES_MAX 32
#define SMX_PIECES_MAX_CROWDED_MIN 4
#define SMX_CHUNK_CYCLE_MIN (1ull << 20)

static void smx_footprint(struct smx_policy *p)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const unsigned long long l2 = c->l2_bytes;

    if (!smx_crowded()) {
        p->pieces_max = SMX_PIECES_MAX;
        mca_btl_smx_component.chunk_cycle = 2 * l2 < SMX_CHUNK_CYCLE_MIN ? SMX_CHUNK_CYCLE_MIN
                                                                        : 2 * l2;
        return;
    }
    const unsigned long long n = l2 / 4 / (unsigned long long) c->frag_size;
    p->pieces_max = n < SMX_PIECES_MAX_CROWDED_MIN ? SMX_PIECES_MAX_CROWDED_MIN
                    : n > SMX_PIECES_MAX           ? SMX_PIECES_MAX
                                                   : (int) n;
    mca_btl_smx_component.chunk_cycle = l2 / 2;
}

/* Classes whose two cores share a cache copy through it either way: they start eagerly up
 * to a fragment and by double copy above (Moreaud, Goglin et al.: double copy wins where
 * a cache is shared); the others start as btl/sm does with an SMSC component, eagerly up
 * to 4 KiB and by single copy above (docs/references.md). Measurement moves both. */
static bool smx_shares_cache(int cls)
{
    return SMX_CLASS_L2 == cls || SMX_CLASS_L3 == cls;
}

static size_t smx_prior_eager(int cls)
{
    return smx_shares_cache(cls) ? mca_btl_smx_policy.eager_most : SMX_CHOICE_MIN;
}

static void smx_policy_build(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_policy *p = &mca_btl_smx_policy;

    memset(p, 0, sizeof(*p));
    p->eager_most = mca_btl_smx_module_template.btl_max_send_size;
    p->late_limit = 0 != c->skew_eager_max ? c->skew_eager_max : p->eager_most;
    /* On a crowded node a rendezvous holds its sender until the receiver is scheduled in,
     * and a try of one waits for the scheduler: there every message up to a fragment goes
     * eagerly and only the copy of larger ones is measured, unless my chunk area cannot
     * hold a fragment for every peer; then an exchange's eager messages wait for chunks
     * and go, as btl/sm's do, by single copy from SMX_CHOICE_MIN (docs/design.md, "The
     * switch"). */
    const bool crowded = smx_crowded();
    const bool cramped = crowded && smx_cramped();
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        p->eager_pin[cls] = SMX_MEASURED != c->eager_limit[cls] ? (size_t) c->eager_limit[cls]
                            : cramped ? SMX_CHOICE_MIN
                            : crowded ? p->eager_most : 0;
        p->single_pin[cls] = SMX_MEASURED == c->single_copy_min[cls] && cramped
                                 ? SMX_CHOICE_MIN
                                 : c->single_copy_min[cls];
    }
    smx_footprint(p);
    p->built = true;
}

/* ob1 reads a module's limits at each send (pml_ob1_sendreq.h); the RDMA pipeline is off,
 * its lengths follow the eager limit, and a rendezvous's first fragment (non-contiguous
 * data) carries at least what an eager message may. */
static void smx_policy_apply(mca_btl_smx_module_t *module)
{
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    const struct smx_policy *p = &mca_btl_smx_policy;
    const size_t eager = 0 != p->eager_pin[module->cls] ? p->eager_pin[module->cls]
                                                        : smx_prior_eager(module->cls);

    module->super.btl_rdma_pipeline_send_length = eager;
    module->super.btl_rdma_pipeline_frag_size = eager;
    module->super.btl_rndv_eager_limit = m->btl_rndv_eager_limit > eager ? m->btl_rndv_eager_limit
                                                                         : eager;
    module->super.btl_eager_limit = SMX_SKEW_ALWAYS == mca_btl_smx_component.skew ? p->late_limit
                                                                                 : eager;
}

void mca_btl_smx_policy_setup(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    smx_policy_build();
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (NULL != c->modules[cls]) {
            smx_policy_apply(c->modules[cls]);
        }
    }
}

void mca_btl_smx_policy_start(mca_btl_smx_endpoint_t *ep)
{
    const struct smx_policy *p = &mca_btl_smx_policy;
    const bool can_single = NULL != ep->smsc_endpoint;
    const bool mapped = mca_btl_smx_component.in_place; /* peers map my memory */
    uint8_t way[SMX_CHOICE_RANGES], allowed[SMX_CHOICE_RANGES];

    if (!p->built) { /* (a peer attached before the first add_procs) */
        smx_policy_build();
    }
    const size_t eager_pin = p->eager_pin[ep->cls], eager = smx_prior_eager(ep->cls);
    const int single_pin = p->single_pin[ep->cls];
    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        const size_t start = SMX_CHOICE_MIN << r, end = start << 1;
        uint8_t copies = SMX_WAY_BIT(SMX_WAY_DOUBLE) | (can_single ? SMX_WAY_BIT(SMX_WAY_SINGLE) : 0);
        /* (a copy through a mapping is one memcpy: as cheap as either copy of two) */
        bool single = can_single && (!smx_shares_cache(ep->cls) || mapped);

        if (SMX_MEASURED != single_pin) { /* the copy is the parameter's */
            single = can_single && SMX_NEVER != single_pin && start >= (size_t) single_pin;
            copies = SMX_WAY_BIT(single ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE);
        }
        allowed[r] = copies;
        if (start < (0 != eager_pin ? eager_pin : p->eager_most)) {
            allowed[r] |= SMX_WAY_BIT(SMX_WAY_EAGER);
        }
        if (0 != eager_pin) { /* eagerly or not is the parameter's */
            allowed[r] = end <= eager_pin ? SMX_WAY_BIT(SMX_WAY_EAGER)
                         : start >= eager_pin ? copies : allowed[r];
        }
        way[r] = start < (0 != eager_pin ? eager_pin : eager) ? SMX_WAY_EAGER
                 : single ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
    }
    smx_choice_init(&ep->choice, way, allowed);
    /* the sender starts from the same word: it computes the same from the class */
    ep->want = ep->want_sent = smx_choice_word(&ep->choice);
    ep->stamp_tick = ep->stamp_all = 0;
}

/* A word as people read it: each range's way, from 4 KiB ("4k:e 8k:e 16k:s ... 8m+:d"). */
static void smx_word_text(uint32_t word, char *text, size_t len)
{
    static const char way_letter[] = {'e', 's', 'd', '?'};
    size_t n = 0;

    text[0] = '\0';
    for (int r = 0; r < SMX_CHOICE_RANGES && n < len; ++r) {
        const size_t kib = (SMX_CHOICE_MIN << r) >> 10;
        n += (size_t) snprintf(text + n, len - n, "%s%zu%s:%c", 0 == r ? "" : ",",
                               kib >= 1024 ? kib >> 10 : kib, kib >= 1024 ? "m" : "k",
                               way_letter[SMX_CHOICE_WAY(word, r)]);
    }
    if (0 != (word & SMX_CHOICE_LATE) && n < len) {
        snprintf(text + n, len - n, ",late");
    }
}

void mca_btl_smx_want_say(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_frag_t *frag;
    uint32_t word;
    char text[128];

    OPAL_THREAD_LOCK(&c->lock);
    word = smx_choice_word(&ep->choice);
    if (word == ep->want_sent) {
        OPAL_THREAD_UNLOCK(&c->lock);
        return;
    }
    ep->want_sent = word;
    OPAL_THREAD_UNLOCK(&c->lock);
    /* a small descriptor: never refused (btl_smx_frag.c) */
    frag = mca_btl_smx_frag_alloc(ep, sizeof(word));
    if (NULL == frag) {
        ep->want_sent = ~word; /* said at the next measurement */
        return;
    }
    memcpy(frag->data, &word, sizeof(word));
    frag->kind = SMX_KIND_WANT;
    frag->tag = 0;
    frag->segments[0].seg_len = sizeof(word);
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    (void) mca_btl_smx_send_internal(frag);
    if (opal_output_check_verbosity(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT)) {
        smx_word_text(word, text, sizeof(text));
        opal_output(SMX_OUTPUT, "btl:smx: %s: %s's messages to me: %s",
                    OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                    NULL != ep->proc ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a peer", text);
    }
}

void mca_btl_smx_measured(mca_btl_smx_endpoint_t *ep, size_t size, enum smx_way way,
                          uint32_t stamp)
{
    uint32_t ns;

    if (0 == stamp) {
        return;
    }
    ns = mca_btl_smx_stamp_age_ns(stamp);
    if (ns > UINT32_C(2000000000)) {
        return; /* more than 2 s: not a message's time (or a clock that is not shared) */
    }
    if (smx_choice_measured(&ep->choice, size, way, ns)) {
        mca_btl_smx_count(&mca_btl_smx_component.stats.copy_switches);
        mca_btl_smx_want_say(ep);
    }
}

bool mca_btl_smx_want_heard(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    uint32_t word;

    if (len != sizeof(word)) {
        return false;
    }
    memcpy(&word, payload, sizeof(word));
    if (0 != (word & SMX_CHOICE_LATE) && SMX_SKEW_ON != mca_btl_smx_component.skew) {
        word &= ~SMX_CHOICE_LATE; /* (skew off here) */
    }
    ep->want = word;
    ep->stamp_all = 8; /* a try is on its way: time my next messages to it */
    return true;
}

/*
 * btl_smx_policy, for tools (contrib/smx-tune reads it through MPI_T) and for people
 * (btl_base_verbose info prints it when it changes): space-separated key=value words. Sizes
 * in bytes, "auto" for measured, "never" for no single copy:
 *   crowded=<0|1> pieces_in_flight=<n> chunk_cycle=<bytes>   (smx_footprint)
 *   skew=<off|on|always> skew_late_us=<us> skew_eager_limit=<bytes|never>
 *   <class>.eager_limit=<bytes|auto> <class>.single_copy_min=<bytes|never|auto>
 *                                          (a crowded node's eager limit: its bytes)
 *                                          (for each class this process has a module of)
 *   peer<local rank>=<class> peer<local rank>.smsc=<0|1>
 *   peer<local rank>.ways=<the way of its messages to me, per range: 4k:e,8k:s,...>
 *                                          (each peer attached so far)
 */
void mca_btl_smx_policy_publish(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_policy *p = &mca_btl_smx_policy;
    size_t size = 320 + 120 * SMX_CLASS_COUNT + 160 * (size_t) c->num_local, n;
    char *text = malloc(size), a[24], ways[128];

    if (NULL == text) {
        return;
    }
    n = (size_t) snprintf(text, size, "crowded=%d pieces_in_flight=%d chunk_cycle=%llu",
                          smx_crowded(), p->pieces_max, (unsigned long long) c->chunk_cycle);
    snprintf(a, sizeof(a), "%zu", c->skew_eager_max);
    n += (size_t) snprintf(text + n, size - n, " skew=%s skew_late_us=%d skew_eager_limit=%s",
                           SMX_SKEW_OFF == c->skew ? "off"
                           : SMX_SKEW_ON == c->skew ? "on" : "always",
                           c->skew_late_us, 0 == c->skew_eager_max ? "never" : a);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const char *name = smx_locality_class_name(cls);
        const int single = p->single_pin[cls];

        if (NULL == c->modules[cls]) {
            continue;
        }
        snprintf(a, sizeof(a), "%d", single);
        n += (size_t) snprintf(text + n, size - n, " %s.eager_limit=", name);
        n += 0 != p->eager_pin[cls] ? (size_t) snprintf(text + n, size - n, "%zu", p->eager_pin[cls])
                                    : (size_t) snprintf(text + n, size - n, "auto");
        n += (size_t) snprintf(text + n, size - n, " %s.single_copy_min=%s", name,
                               SMX_MEASURED == single ? "auto" : SMX_NEVER == single ? "never" : a);
    }
    for (int r = 0; NULL != c->peers && r < c->num_local; ++r) {
        const mca_btl_smx_endpoint_t *ep = c->peers[r];

        if (NULL != ep) {
            smx_word_text(smx_choice_word(&ep->choice), ways, sizeof(ways));
            n += (size_t) snprintf(text + n, size - n, " peer%d=%s peer%d.smsc=%d peer%d.ways=%s",
                                   r, smx_locality_class_name(ep->cls), r,
                                   NULL != ep->smsc_endpoint, r, ways);
        }
    }
    if (NULL == c->policy_text || 0 != strcmp(text, c->policy_text)) {
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT, "btl:smx: policy: %s", text);
    }
    free(c->policy_text);
    c->policy_text = text;
}
