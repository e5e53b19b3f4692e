/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx skew: a late receiver no longer holds its sender (the skew-aware thresholds of
 * Chai, Lai, Jin, Panda, "Designing An Efficient Kernel-level and User-level Hybrid
 * Approach for MPI Intra-node Communication on Multi-core Systems"; docs/references.md).
 *
 * A rendezvous, by single or double copy, ends only once its receiver has posted the
 * receive: a sender whose receiver is late (computing, or in another call) waits for it.
 * A message sent eagerly lets the sender go on. So:
 *
 * The receiver finds out. A get it starts while it is not handing that sender's message
 * to ob1 is one whose rendezvous waited in ob1's unexpected queue: the receive was posted
 * after the message came. If that get starts more than btl_smx_skew_late_us after its
 * sender registered the buffer (the stamp its handle carries), the sender waited that
 * long for this receiver. (The time since the previous get ended, which this used to
 * be, is a round trip in a ping-pong of 64 KiB off cache: every receiver looked late.) After SMX_SKEW_LATE_GETS such gets in a row it is late to that sender, and tells
 * it so (its word, SMX_KIND_WANT, says "late": btl_smx_choice.h); a get that starts inside
 * the delivery (the receive was posted first), or soon after the previous one (the receiver
 * is busy with that very sender), starts the count again. It takes it back once it has
 * had to wait for SMX_SKEW_WAITED of that sender's messages in a row (a progress call
 * found nothing at all before each; the pieces of its own double-copy gets do not count,
 * it waits for those in any case): it is then ahead of it, and tells the sender that too.
 * Other messages pay two stores and a test of a flag for it (smx_deliver).
 *
 * The sender listens. While a receiver's word says it is late, every message to it up to
 * btl_smx_skew_eager_limit goes eagerly, as far as my chunk area holds such messages
 * (mca_btl_smx_skew_init; btl_smx_policy.h, mca_btl_smx_eager_follow): above a fragment
 * in several chunks of mine (SMX_KIND_MULTI), and the send completes once they are
 * written.
 */
#include "opal_config.h"

#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_frag.h"
#include "btl_smx_policy.h"
#include "btl_smx_skew.h"
#include "btl_smx_types.h"

#include <stdio.h>
#include <string.h>

/* Gets in a row that waited for me: I am late (one or two may be messages that came while
 * I was in other calls, after a pause). Messages of a sender in a row that I had
 * waited for: I have caught up with it. */
#define SMX_SKEW_LATE_GETS 3
#define SMX_SKEW_WAITED 8

void mca_btl_smx_skew_init(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const size_t room = mca_btl_smx_chunk_room_max();
    /* at most half the whole-fragment chunks my area may ever carve, in one message */
    uint64_t chunks = mca_btl_smx_frag_chunks_max() / 2;
    size_t most;

    c->skew_late_ns = (uint64_t) c->skew_late_us * 1000u;
    c->skew_eager_max = 0;
    if (SMX_SKEW_OFF == c->skew) {
        return;
    }
    if (chunks > SMX_MULTI_MAX) {
        chunks = SMX_MULTI_MAX;
    }
    most = (size_t) chunks * room;
    c->skew_eager_max = (size_t) c->skew_eager_limit < most ? (size_t) c->skew_eager_limit : most;
    if (c->skew_eager_max <= room) {
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                            "btl:smx: %s: no messages above a fragment to late receivers: the "
                            "chunk area (btl_smx_budget_kb) holds too few fragments",
                            OPAL_NAME_PRINT(OPAL_PROC_MY_NAME));
        c->skew_eager_max = 0;
    }
}

static void smx_skew_say(mca_btl_smx_endpoint_t *ep, bool late)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    /* (a get in one thread and progress in another may both decide: one says it) */
    OPAL_THREAD_LOCK(&c->lock);
    if (ep->skew_late == late) {
        OPAL_THREAD_UNLOCK(&c->lock);
        return;
    }
    ep->skew_late = late;
    ep->skew_idle_seen = c->skew_idle;
    ep->skew_waited = ep->skew_late_gets = 0;
    c->skew_late_count += late ? 1 : -1;
    ep->choice.late = late;
    OPAL_THREAD_UNLOCK(&c->lock);
    mca_btl_smx_count(late ? &c->stats.skew_late : &c->stats.skew_caught_up);
    mca_btl_smx_want_say(ep);
    opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT, "btl:smx: %s: %s %s",
                        OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                        late ? "late to" : "caught up with",
                        NULL != ep->proc ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a peer");
}

void mca_btl_smx_skew_get_start(mca_btl_smx_endpoint_t *ep, uint32_t stamp)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    if (ep->skew_late) {
        return;
    }
    /* the receive was there first, or the message waited no longer than the limit since
     * its sender registered it (the stamp: btl_smx_policy.h) */
    if (c->delivering == ep || 0 == stamp
        || mca_btl_smx_stamp_age_ns(stamp) <= c->skew_late_ns) {
        ep->skew_late_gets = 0;
        return;
    }
    if (++ep->skew_late_gets >= SMX_SKEW_LATE_GETS) {
        smx_skew_say(ep, true);
    }
}

void mca_btl_smx_skew_heard(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    /* a progress call found nothing at all since its last message: I waited for this one */
    if (c->skew_idle != ep->skew_idle_seen) {
        ep->skew_idle_seen = c->skew_idle;
        if (++ep->skew_waited >= SMX_SKEW_WAITED) {
            smx_skew_say(ep, false);
        }
    } else {
        ep->skew_waited = 0;
    }
}
