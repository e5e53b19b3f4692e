/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx receive: progress, which delivers what my queue and the rings to me hold,
 * serves the gets of my peers, posts what waited for room, and completes what was sent.
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_endpoint.h"
#include "btl_smx_fifo.h"
#include "btl_smx_frag.h"
#include "btl_smx_get.h"
#include "btl_smx_policy.h"
#include "btl_smx_recv.h"
#include "btl_smx_send.h"
#include "btl_smx_skew.h"
#include "btl_smx_types.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Do the 'len' bytes at 'offset' of a peer's segment lie in its chunk or ring area? Every
 * offset and length a peer writes is checked so before it is followed (h: its header,
 * whose layout was checked when it was mapped, btl_smx_endpoint.c). */
static inline bool smx_in_peer_area(const struct smx_segment_header *h, uint64_t offset,
                                    uint64_t len)
{
    return offset >= h->area_offset && offset <= h->size && len <= h->size - offset;
}

/* An eager message in several chunks of the peer's (SMX_KIND_MULTI), each checked to
 * lie within its segment (the list read once: the peer may write it meanwhile), gathered
 * into one buffer of mine, to be handed over as one segment; its length. ob1 takes
 * several segments, but its matched receive then counts the message as the first
 * segment's bytes plus one per further segment, and would let a message too large for
 * its receive through without MPI_ERR_TRUNCATE (pml_ob1_recvfrag.c in 5.0.x). */
static size_t smx_gather_multi(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_chunk_list *list = payload;
    const struct smx_segment_header *h = ep->peer_segment;
    struct smx_chunk_part part[SMX_MULTI_MAX];
    const uint32_t count = len >= sizeof(*list) ? __atomic_load_n(&list->count, __ATOMIC_RELAXED)
                                                : 0;
    size_t total = 0;

    if (0 == count || count > SMX_MULTI_MAX || len < sizeof(*list) + count * sizeof(part[0])) {
        mca_btl_smx_fatal(ep, "a malformed list of chunks");
    }
    memcpy(part, list->part, count * sizeof(part[0]));
    for (uint32_t i = 0; i < count; ++i) {
        if (!smx_in_peer_area(h, part[i].offset, part[i].len)) {
            mca_btl_smx_fatal(ep, "a message outside its segment");
        }
        total += part[i].len;
    }
    if (total > c->gather_size) {
        void *grown = realloc(c->gather, total);
        if (NULL == grown) {
            mca_btl_smx_fatal(ep, "no memory for a message in several chunks");
        }
        c->gather = grown;
        c->gather_size = total;
    }
    total = 0;
    for (uint32_t i = 0; i < count; ++i) {
        memcpy(c->gather + total, (char *) ep->peer_segment + part[i].offset, part[i].len);
        total += part[i].len;
    }
    return total;
}

/* An upper-layer fragment whose data stayed in its sender's buffer (struct smx_in_place,
 * then the header): the data mapped (the smsc component caches the mapping), handed over
 * as a second segment, unmapped once the callback has copied it. Its sender's fragment
 * completes once I am past its record. Where it is read is read once: the record is in
 * shared memory. A mapping refused (the peer's memory is not where it says, or this
 * process is out of mappings) leaves a message that cannot be delivered: the job ends,
 * saying so. */
static void smx_deliver_in_place(mca_btl_smx_endpoint_t *ep, uint8_t tag,
                                 const unsigned char *payload, size_t len)
{
    const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    struct smx_in_place at;
    void *ctx = NULL, *data = NULL;

    if (len < sizeof(at)) {
        mca_btl_smx_fatal(ep, "a malformed in-place message");
    }
    memcpy(&at, payload, sizeof(at));
    if (NULL != ep->smsc_endpoint && 0 != at.len) {
        ctx = MCA_SMSC_CALL(map_peer_region, ep->smsc_endpoint, 0, (void *) (uintptr_t) at.addr,
                            (size_t) at.len, &data);
    }
    if (NULL == ctx) {
        mca_btl_smx_fatal(ep, "an in-place message whose data cannot be mapped here");
    }
    mca_btl_base_segment_t seg[2] = {
        {.seg_addr.pval = (void *) (payload + sizeof(at)), .seg_len = len - sizeof(at)},
        {.seg_addr.pval = data, .seg_len = (size_t) at.len}};
    mca_btl_base_receive_descriptor_t desc = {.endpoint = ep,
                                              .des_segments = seg,
                                              .des_segment_count = 2,
                                              .tag = tag,
                                              .cbdata = reg->cbdata};
    reg->cbfunc(&ep->module->super, &desc);
    MCA_SMSC_CALL(unmap_peer_region, ctx);
    mca_btl_smx_count(&mca_btl_smx_component.stats.in_place);
    if (0 != at.stamp) {
        mca_btl_smx_measured(ep, len - sizeof(at) + (size_t) at.len, SMX_WAY_SINGLE, at.stamp);
    }
}

/* A message from a peer: upper-layer fragments go to the registered callback, with the
 * module of the peer's class (ob1 looks its RDMA BTL up by that pointer). A stamped one
 * (its sender's clock, btl_smx_policy.h) is measured once the callback has put its data
 * in place. */
static void smx_deliver(mca_btl_smx_endpoint_t *ep, uint8_t kind, uint8_t tag, void *payload,
                        size_t len, uint32_t stamp)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    /* skew (btl_smx_skew.c): a get ob1 starts from here is one the receive waited for; a
     * message from a sender I am late to is one I took (not a piece of a get of mine: I
     * wait for those whatever) */
    c->delivering = ep;
    if (OPAL_UNLIKELY(ep->skew_late)
        && (SMX_KIND_AM == kind || SMX_KIND_MULTI == kind || SMX_KIND_IN_PLACE == kind)) {
        mca_btl_smx_skew_heard(ep);
    }
    if (SMX_KIND_MULTI == kind) {
        len = smx_gather_multi(ep, payload, len);
        payload = c->gather;
        kind = SMX_KIND_AM;
    }
    switch (kind) {
    case SMX_KIND_AM: {
        const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
        mca_btl_base_segment_t seg = {.seg_addr.pval = payload, .seg_len = len};
        mca_btl_base_receive_descriptor_t desc = {.endpoint = ep,
                                                  .des_segments = &seg,
                                                  .des_segment_count = 1,
                                                  .tag = tag,
                                                  .cbdata = reg->cbdata};
        reg->cbfunc(&ep->module->super, &desc);
        if (0 != stamp) {
            mca_btl_smx_measured(ep, len, SMX_WAY_EAGER, stamp);
        }
        break;
    }
    case SMX_KIND_GET_REQ:
        mca_btl_smx_get_request_arrived(ep, payload, len);
        break;
    case SMX_KIND_GET_DATA:
        mca_btl_smx_get_piece_arrived(ep, payload, len);
        break;
    case SMX_KIND_IN_PLACE:
        smx_deliver_in_place(ep, tag, payload, len);
        break;
    case SMX_KIND_WANT:
        if (!mca_btl_smx_want_heard(ep, payload, len)) {
            mca_btl_smx_fatal(ep, "a malformed word");
        }
        break;
    default: /* SMX_KIND_SKIP: nothing */
        break;
    }
    c->delivering = NULL;
}

/* The peer's chunk at 'offset' of its segment, checked to lie within it. */
static struct smx_chunk *smx_peer_chunk(mca_btl_smx_endpoint_t *ep, uint64_t offset)
{
    const struct smx_segment_header *h = ep->peer_segment;
    struct smx_chunk *chunk = (struct smx_chunk *) ((char *) ep->peer_segment + offset);

    if (!smx_in_peer_area(h, offset, sizeof(*chunk)) || 0 != (offset & (SMX_CACHE_LINE - 1))
        || !smx_in_peer_area(h, offset + sizeof(*chunk), chunk->len)) {
        mca_btl_smx_fatal(ep, "a message outside its segment");
    }
    smx_prefetch(chunk, sizeof(*chunk) + chunk->len);
    return chunk;
}

/* A chunk from the peer, through my queue; marked done once delivered. */
static void smx_deliver_chunk(mca_btl_smx_endpoint_t *ep, uint64_t offset)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk *chunk = smx_peer_chunk(ep, offset);

    if (SMX_KIND_RING == chunk->kind && NULL == ep->in
        && chunk->len >= sizeof(struct smx_ring_offer)) {
        /* From now on the peer writes to me through this ring (btl_smx_send.c). */
        const struct smx_ring_offer *offer = (const struct smx_ring_offer *) (chunk + 1);
        const struct smx_segment_header *h = ep->peer_segment;
        const uint64_t bytes = sizeof(struct smx_pair_ring) + (uint64_t) offer->lines * SMX_CACHE_LINE;
        if (offer->lines < 64 || 0 != (offer->lines & (offer->lines - 1))
            || !smx_in_peer_area(h, offer->offset, bytes)) {
            mca_btl_smx_fatal(ep, "a ring outside its segment");
        }
        ep->in = (struct smx_pair_ring *) ((char *) ep->peer_segment + offer->offset);
        ep->in_tail = 0;
        ep->in_key = offer->key;
        ep->in_lines = offer->lines;
        c->hot[c->num_hot++] = ep;
    } else if (SMX_KIND_REF == chunk->kind || SMX_KIND_RING == chunk->kind) {
        mca_btl_smx_fatal(ep, "a message of a kind that cannot come this way");
    } else {
        smx_deliver(ep, chunk->kind, chunk->tag, chunk + 1, chunk->len, chunk->stamp);
    }
    __atomic_store_n(&chunk->done, 1, __ATOMIC_RELEASE);
}

/* Up to 'most' records of the peer's ring to me; the count delivered. */
static int smx_poll_ring(mca_btl_smx_endpoint_t *ep, int most)
{
    struct smx_pair_ring *ring = ep->in;
    int n = 0;

    for (; n < most; ++n) {
        struct smx_record *rec = smx_ring_next(ring, ep->in_lines, ep->in_tail, ep->in_key);
        if (NULL == rec) {
            break;
        }
        const uint32_t at = (uint32_t) (ep->in_tail & (ep->in_lines - 1));
        const uint32_t lines = rec->nlines;
        if (0 == lines || at + lines > ep->in_lines
            || (SMX_KIND_SKIP != rec->kind && smx_record_lines(rec->len) > lines)) {
            mca_btl_smx_fatal(ep, "a malformed record");
        }
        smx_prefetch(rec, sizeof(*rec) + rec->len);
        if (SMX_KIND_REF == rec->kind) {
            const struct smx_chunk_ref *ref = (const struct smx_chunk_ref *) (rec + 1);
            const struct smx_segment_header *h = ep->peer_segment;
            if (!smx_in_peer_area(h, ref->offset, ref->len) || SMX_KIND_REF == ref->kind
                || SMX_KIND_RING == ref->kind) {
                mca_btl_smx_fatal(ep, "a message outside its segment");
            }
            if (0 == n) { /* (the first this poll found) */
                smx_prefetch_away((char *) ep->peer_segment + ref->offset, ref->len);
            }
            smx_deliver(ep, ref->kind, rec->tag, (char *) ep->peer_segment + ref->offset,
                        ref->len, ref->stamp);
        } else {
            smx_deliver(ep, rec->kind, rec->tag, rec + 1, rec->len, 0);
        }
        ep->in_tail += lines;
        smx_ring_consumed(ring, ep->in_tail);
    }
    return n;
}

/* The completed fragments: the whole stack at once (another thread in progress takes
 * what is pushed after), in the order they were pushed; callbacks may push more. One whose
 * receiver has not taken it yet (mca_btl_smx_posted) goes back on it, in order, after the
 * loop. The count completed. */
static int smx_complete(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int events = 0;
    mca_btl_smx_frag_t *later = NULL, **later_end = &later;
    for (;;) {
        mca_btl_smx_frag_t *frag = __atomic_load_n(&c->completed, __ATOMIC_RELAXED), *next;
        mca_btl_smx_frag_t *first = NULL;

        if (NULL == frag
            || NULL == (frag = __atomic_exchange_n(&c->completed, NULL, __ATOMIC_ACQUIRE))) {
            break;
        }
        for (; NULL != frag; frag = next) { /* (pushed last first: turned round) */
            next = frag->done_next;
            frag->done_next = first;
            first = frag;
        }
        for (frag = first; NULL != frag; frag = next) {
            /* The callback may free a descriptor it owns: read the flags first. One the
             * BTL releases below leaves the count of fragments out now, so that a send
             * ob1 retries from the callback (held back at btl_smx_max_frags) finds room. */
            const uint32_t flags = frag->base.des_flags;
            next = frag->done_next;
            if (0 != frag->taken_at
                && __atomic_load_n(&frag->endpoint->out->consumed, __ATOMIC_ACQUIRE)
                       < frag->taken_at) {
                *later_end = frag;
                later_end = &frag->done_next;
                continue;
            }
            if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
                mca_btl_smx_frag_uncount(frag);
            }
            if (NULL != frag->base.des_cbfunc) {
                frag->base.des_cbfunc(&frag->endpoint->module->super, frag->endpoint,
                                      &frag->base, OPAL_SUCCESS);
            }
            if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
                mca_btl_smx_frag_release(frag);
            }
            events++;
        }
    }
    *later_end = NULL;
    for (mca_btl_smx_frag_t *frag = later, *next; NULL != frag; frag = next) {
        next = frag->done_next;
        mca_btl_smx_completed_push(frag);
    }
    return events;
}

/* Deliver what my queue and the rings to me hold, feed the gets I serve, retry fragments
 * waiting for room, then complete the fragments already sent. Only the peers that use a
 * ring to me, or have work waiting here, are visited: idle peers cost nothing. */
int mca_btl_smx_progress(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int events = 0;

    if (NULL == c->peers) {
        return 0;
    }
    /* Sends that completed first, and back to the caller if any did: a send in place
     * completes once its receiver has copied it, and that receiver's answer may be in my
     * ring already; delivered before the caller (waiting for that send) can post its
     * receive, the answer would be unexpected, copied twice. */
    if (NULL != __atomic_load_n(&c->completed, __ATOMIC_RELAXED)) {
        events = smx_complete();
        if (0 != events) {
            return events;
        }
    }
    /* One reader of my queue and rings: another thread already polling is enough. */
    if (!opal_using_threads() || !opal_mutex_trylock(&c->poll_lock)) {
        for (int i = 0; i < c->num_hot; ++i) {
            events += smx_poll_ring(c->hot[i], 8); /* a few per peer: fairness */
        }
        for (int n = 0; n < 32; ++n) {
            const uint64_t id = smx_queue_pop(c->segment, &c->queue_head, c->queue_mask);
            const uint32_t slot = SMX_CHUNK_RANK(id);
            if (0 == id) {
                break;
            }
            /* Only a process that mapped my segment writes to it, and I map it back in
             * the same add_procs (my job) or here (another's): a message from no peer
             * is a broken segment or an unreachable sender. */
            mca_btl_smx_endpoint_t *from = slot < (uint32_t) c->num_local
                                               ? c->peers[slot]
                                               : mca_btl_smx_guest(slot - (uint32_t) c->num_local);
            if (NULL == from) {
                opal_output(0, "btl:smx: %s: a message from queue slot %u, which is not a "
                            "peer that can be reached; the job cannot go on",
                            OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), slot);
                abort();
            }
            smx_deliver_chunk(from, SMX_CHUNK_OFFSET(id));
            events++;
        }
        if (OPAL_UNLIKELY(c->skew_late_count > 0) && 0 == events) {
            c->skew_idle++; /* waited for messages (btl_smx_skew.c) */
        }
        if (opal_using_threads()) {
            opal_mutex_unlock(&c->poll_lock);
        }
    }
    /* Each active peer under its own lock (one another thread holds is left to it); the
     * list under the component's, which another thread may change in between: a peer
     * moved under my index waits for the next call. None active (read without the lock:
     * one made active meanwhile waits for the next call): the lock is not taken at all,
     * so that a thread spinning here seldom holds it when the scheduler takes its CPU
     * away (mca_btl_smx_completed_push says what that costs). */
    for (int i = 0; 0 != __atomic_load_n(&c->num_active, __ATOMIC_RELAXED); ++i) {
        mca_btl_smx_endpoint_t *ep;

        OPAL_THREAD_LOCK(&c->lock);
        ep = i < c->num_active ? c->active[i] : NULL;
        OPAL_THREAD_UNLOCK(&c->lock);
        if (NULL == ep) {
            break;
        }
        if (opal_using_threads() && 0 != opal_mutex_trylock(&ep->lock)) {
            continue;
        }
        if (!opal_list_is_empty(&ep->serving)) {
            events += mca_btl_smx_get_serve_locked(ep);
        }
        (void) mca_btl_smx_unstall(ep);
        /* What waited for room, in order, as far as there is room now; then off the list
         * if nothing is left (the last one takes its place), under the component's lock. */
        while (!opal_list_is_empty(&ep->pending)
               && mca_btl_smx_try_post((mca_btl_smx_frag_t *) opal_list_get_first(&ep->pending))) {
            mca_btl_smx_posted(ep, (mca_btl_smx_frag_t *) opal_list_remove_first(&ep->pending));
        }
        if (ep->active && NULL == ep->stalled && opal_list_is_empty(&ep->pending)
            && opal_list_is_empty(&ep->serving)) {
            OPAL_THREAD_LOCK(&c->lock);
            ep->active = false;
            int k = i < c->num_active && c->active[i] == ep ? i : 0; /* (where I found it) */
            while (k < c->num_active && c->active[k] != ep) {
                ++k;
            }
            if (k < c->num_active) {
                c->active[k] = c->active[--c->num_active];
                i -= k == i; /* (the one moved here is visited next) */
            }
            OPAL_THREAD_UNLOCK(&c->lock);
        }
        if (opal_using_threads()) {
            opal_mutex_unlock(&ep->lock);
        }
    }
    events += smx_complete(); /* (what was posted just now) */
    return events;
}
