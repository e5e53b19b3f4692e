/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx send: the one place a message enters shared memory (layouts in
 * btl_smx_types.h, the two ways in btl_smx_fifo.h).
 *
 * A message to a peer goes through the peer's queue, in a chunk of my segment, until I
 * have sent that peer btl_smx_pair_ring_after of them; then, while btl_smx_pair_rings_max
 * allows, I make a ring for it, offer it through the queue, and write every later message
 * to that peer into the ring (or into a chunk the ring's record points to). The offer
 * travels behind everything queued before it, so the peer sees my messages in order. A
 * fragment that finds no room waits on its endpoint, in order, for progress to post it;
 * its completion always comes from progress (ob1 may call btl_send from its callbacks).
 *
 * Chunks (btl_smx_chunks.c) are carved from my area as first needed and reused, so a
 * process takes of /dev/shm what it had in flight at most, within btl_smx_budget_kb.
 * Receivers free chunks and ring lines whenever they progress, whatever their own room
 * (btl_smx_frag.c: no deadlock).
 *
 * Threads: everything here runs with the peer's lock held, and takes the component's
 * only around the chunk area and its lists (btl_smx.h, at the endpoint; docs/design.md,
 * "Threads: a lock per peer"): the copies into shared memory hold no lock another peer's
 * sender needs.
 */
#include "opal_config.h"

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_fifo.h"
#include "btl_smx_frag.h"
#include "btl_smx_send.h"
#include "btl_smx_types.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
/* A chunk for a message through the peer's queue; the entry is claimed at commit, right
 * before it is filled, so that a sender descheduled while it copies never holds up the
 * receiver's queue. */
static bool smx_queue_begin(mca_btl_smx_endpoint_t *ep, size_t len, struct smx_post *p)
{
    p->slot = mca_btl_smx_chunk_get(ep, len);
    if (NULL == p->slot) {
        return false;
    }
    p->slot->chunk->done = 0;
    p->data = p->slot->chunk + 1;
    return true;
}

/* Hand a written chunk to the peer's queue; one that finds it full waits on the endpoint
 * (ep->stalled), ahead of anything sent to that peer later. */
static void smx_queue_send(mca_btl_smx_endpoint_t *ep, struct smx_chunk_slot *slot)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint64_t entry = smx_queue_claim(ep->peer_segment, &ep->queue_seen);

    if (UINT64_MAX == entry) {
        ep->stalled = slot;
        mca_btl_smx_activate(ep);
        return;
    }
    smx_queue_fill(ep->peer_segment, entry, SMX_CHUNK_ID(ep->slot_there, slot->offset));
    OPAL_THREAD_LOCK(&c->lock);
    slot->next = c->chunk_busy[slot->cls]; /* back once the receiver marks it done */
    c->chunk_busy[slot->cls] = slot;
    OPAL_THREAD_UNLOCK(&c->lock);
}

bool mca_btl_smx_unstall(mca_btl_smx_endpoint_t *ep)
{
    struct smx_chunk_slot *slot = ep->stalled;

    if (NULL != slot) {
        ep->stalled = NULL;
        smx_queue_send(ep, slot);
    }
    return NULL == ep->stalled;
}

static void smx_chunk_fill(struct smx_chunk *chunk, size_t len, uint8_t kind, uint8_t tag,
                           uint32_t stamp)
{
    chunk->len = (uint32_t) len;
    chunk->tag = tag;
    chunk->kind = kind;
    chunk->stamp = stamp;
}

/* A ring's key (btl_smx_types.h): random, its top bit set (never 0, the fresh lines'
 * value). */
static uint64_t smx_ring_key(void)
{
    uint64_t key = 0;

    if (sizeof(key) != getrandom(&key, sizeof(key), GRND_NONBLOCK)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key = (uint64_t) ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t) getpid() << 32
              ^ (uint64_t) ts.tv_sec;
        key ^= key >> 31;
        key *= 0xbf58476d1ce4e5b9ull;
        key ^= key >> 29;
    }
    return key | (UINT64_C(1) << 63);
}

/* A peer I have sent enough to gets a ring of its own, offered through its queue. */
static void smx_ring_make(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_ring_offer *offer;
    struct smx_pair_ring *ring = NULL;
    volatile char *data;
    struct smx_post p;
    uint64_t offset;
    uint32_t lines = 0;

    if (!smx_queue_begin(ep, sizeof(*offer), &p)) {
        return;
    }
    /* The ring's place in the count (its size depends on it) taken with its lines: threads
     * making rings to different peers at once get different ones, and never more than
     * room was made for. */
    OPAL_THREAD_LOCK(&c->lock);
    if (c->pair_rings < c->pair_rings_max) {
        lines = smx_ring_size(c->pair_rings) / SMX_CACHE_LINE;
        ring = mca_btl_smx_area_carve(SMX_CHUNK_CLASSES,
                              sizeof(*ring) + (size_t) lines * SMX_CACHE_LINE, &offset);
        if (NULL == ring) {
            c->pair_rings = c->pair_rings_max; /* (cannot happen: room for the most is made) */
        } else {
            c->pair_rings++;
        }
    }
    if (NULL == ring) {
        mca_btl_smx_chunk_unget(p.slot);
        OPAL_THREAD_UNLOCK(&c->lock);
        return;
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    /* Its pages are written below: taken from the file system first, so that a full one
     * (a small /dev/shm) means no ring, never a SIGBUS. No more rings are tried then. */
    if (c->segment_fd < 0
        || 0 != posix_fallocate(c->segment_fd, (off_t) offset,
                                (off_t) (sizeof(*ring) + (size_t) lines * SMX_CACHE_LINE))) {
        OPAL_THREAD_LOCK(&c->lock);
        mca_btl_smx_chunk_unget(p.slot);
        c->pair_rings = c->pair_rings_max;
        OPAL_THREAD_UNLOCK(&c->lock);
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                            "btl:smx: %s: no room in %s for a pair ring of %u KiB; its peers "
                            "are written to through their queues",
                            OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), c->backing_directory,
                            lines * SMX_CACHE_LINE / 1024);
        return;
    }
    ring->lines = lines;
    /* Write each of its pages now (its last byte too: the ring need not start on a page):
     * tmpfs allocates a page at its first write, and the laps leave lines unused until a
     * later phase of larger messages would fault on them. A zero is no record's seq. */
    data = (volatile char *) (ring + 1);
    for (size_t at = 0; at < (size_t) lines * SMX_CACHE_LINE; at += 4096) {
        data[at] = 0;
    }
    data[(size_t) lines * SMX_CACHE_LINE - 1] = 0;
    offer = p.data;
    offer->offset = offset;
    offer->lines = lines;
    offer->key = ep->out_key = smx_ring_key();
    ep->out_lines = lines;
    smx_chunk_fill(p.slot->chunk, sizeof(*offer), SMX_KIND_RING, 0, 0);
    smx_queue_send(ep, p.slot); /* (if it stalls, the ring is used once it goes) */
    ep->out_head = ep->out_seen = 0;
    OPAL_THREAD_LOCK(&c->lock);
    ep->out = ring; /* (read by smx_chunks_reclaim once the ring has records) */
    c->ringed[c->num_ringed++] = ep;
    OPAL_THREAD_UNLOCK(&c->lock);
    mca_btl_smx_count(&c->stats.pair_rings);
    opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT, "btl:smx: %s: a ring of %u KiB to %s",
                        OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), lines * SMX_CACHE_LINE >> 10,
                        OPAL_NAME_PRINT(ep->proc->proc_name));
}

/* A ring record's chunk to the end of the ones that come back with the reader's count
 * (component lock held). */
static void smx_ring_ref_add(mca_btl_smx_endpoint_t *ep, struct smx_chunk_slot *s,
                             uint64_t release)
{
    s->release = release;
    s->next = NULL;
    if (NULL == ep->ref_last) {
        ep->ref_first = s;
    } else {
        ep->ref_last->next = s;
    }
    ep->ref_last = s;
}

bool mca_btl_smx_post_begin(mca_btl_smx_endpoint_t *ep, size_t len, bool piece,
                            struct smx_post *p)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    p->rec = NULL;
    p->slot = NULL;
    p->skip = 0;
    p->stamp = 0;
    if (!mca_btl_smx_unstall(ep)) {
        return false; /* a message to this peer is still waiting for its queue */
    }
    if (NULL == ep->out) {
        /* (a hint without the lock: smx_ring_make looks again under it) */
        if (ep->queued < (uint32_t) c->pair_ring_after
            || __atomic_load_n(&c->pair_rings, __ATOMIC_RELAXED) >= c->pair_rings_max) {
            return smx_queue_begin(ep, len, p);
        }
        smx_ring_make(ep);
        if (NULL == ep->out) {
            return smx_queue_begin(ep, len, p);
        }
    }
    /* A record may take what smx_ring_carries allows; a larger message goes in a chunk,
     * whose lines come back far later than a ring's (smx_chunk_ready). */
    uint32_t lines = smx_record_lines(len);
    const bool inline_data = !piece && smx_ring_carries(ep->out_lines, lines);
    lines = inline_data ? smx_record_span(lines) : smx_record_lines(sizeof(struct smx_chunk_ref));
    if (!smx_ring_room(ep->out, ep->out_lines, ep->out_head, &ep->out_seen, lines, &p->skip)) {
        return false;
    }
    /* (its first line is where the receiver polls: written at commit only) */
    p->rec = smx_ring_line(ep->out, ep->out_lines, ep->out_head + p->skip);
    p->lines = lines;
    if (inline_data) {
        p->data = p->rec + 1;
        return true;
    }
    OPAL_THREAD_LOCK(&c->lock);
    mca_btl_smx_ring_chunks_reclaim(ep, ep->out_seen);
    /* Anything above a small chunk in a whole-fragment one, whose lines come round only
     * after the longest cycle (smx_chunks_cycle), where the area has one; the eager
     * size's chunks are for the queue, whose receiver reads the payload where the chunk's
     * header says. (One hold of the lock for both.) */
    p->slot = NULL;
    if (len > smx_chunk_room(0)) {
        p->slot = mca_btl_smx_chunk_take(ep, SMX_CHUNK_CLASSES - 1);
    }
    if (NULL == p->slot) {
        p->slot = mca_btl_smx_chunk_take_for(ep, len);
    }
    /* The chunk comes back with the record that will point to it, once the reader is past
     * that record's lines (it cannot be before the record is written; a record abandoned
     * leaves it there until the reader is past a later one in the same place). */
    if (NULL != p->slot) {
        smx_ring_ref_add(ep, p->slot, ep->out_head + p->skip + p->lines);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL == p->slot) {
        return false;
    }
    /* The record names where the payload is: a message that fills little of the chunk
     * goes after where the last one went, so that one chunk's use after another writes
     * other lines, and the lines come back as late as if the message filled it (the
     * cycle of smx_chunks_cycle() counts chunks, not bytes). */
    size_t at = p->slot->rot;
    if (at + len > smx_chunk_room(p->slot->cls)) {
        at = 0;
    }
    p->slot->rot = (uint32_t) ((at + len + SMX_CACHE_LINE - 1) & ~(size_t) (SMX_CACHE_LINE - 1));
    p->data = (char *) (p->slot->chunk + 1) + at;
    return true;
}

/* Commit, with the chunks of a message the posted list names ('parts', chained by next):
 * they come back with what carries the list. */
static void smx_post_commit(mca_btl_smx_endpoint_t *ep, struct smx_post *p, size_t len,
                            uint8_t kind, uint8_t tag, struct smx_chunk_slot *parts)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    if (NULL == p->rec) {
        struct smx_chunk_slot **link = &p->slot->parts;
        for (struct smx_chunk_slot *s = parts, *next; NULL != s; s = next) {
            next = s->next;
            s->next = NULL;
            *link = s;
            link = &s->parts;
        }
        smx_chunk_fill(p->slot->chunk, len, kind, tag, p->stamp);
        smx_queue_send(ep, p->slot);
        ep->queued++;
        return;
    }
    if (NULL != parts) {
        OPAL_THREAD_LOCK(&c->lock);
        for (struct smx_chunk_slot *s = parts, *next; NULL != s; s = next) {
            next = s->next;
            smx_ring_ref_add(ep, s, ep->out_head + p->skip + p->lines);
        }
        OPAL_THREAD_UNLOCK(&c->lock);
    }
    if (NULL != p->slot) { /* the record points to the chunk (on the list since begin) */
        struct smx_chunk_ref *ref = (struct smx_chunk_ref *) (p->rec + 1);
        ref->offset = p->slot->offset + (uint64_t) ((char *) p->data - (char *) p->slot->chunk);
        ref->len = (uint32_t) len;
        ref->stamp = p->stamp;
        ref->kind = kind;
        len = sizeof(*ref);
        kind = SMX_KIND_REF;
    }
    smx_ring_post(p->rec, ep->out_head + p->skip, ep->out_key, len, kind, tag, p->lines);
    if (0 != p->skip) {
        struct smx_record *skip = smx_ring_line(ep->out, ep->out_lines, ep->out_head);
        skip->len = 0;
        skip->kind = SMX_KIND_SKIP;
        skip->nlines = (uint16_t) p->skip;
        smx_ring_publish(skip, ep->out_head, ep->out_key);
    }
    ep->out_head += p->skip + p->lines;
}

void mca_btl_smx_post_commit(mca_btl_smx_endpoint_t *ep, struct smx_post *p, size_t len,
                             uint8_t kind, uint8_t tag)
{
    smx_post_commit(ep, p, len, kind, tag, NULL);
}

bool mca_btl_smx_post_multi(mca_btl_smx_endpoint_t *ep, const void *header, size_t header_size,
                            struct opal_convertor_t *convertor, size_t payload_size,
                            mca_btl_base_tag_t tag)
{
    const size_t room = mca_btl_smx_chunk_room_max(), total = header_size + payload_size;
    const size_t count = (total + room - 1) / room;
    const size_t list_len = sizeof(struct smx_chunk_list) + count * sizeof(struct smx_chunk_part);
    struct smx_chunk_slot *parts = NULL, **tail = &parts, *s;
    struct iovec iov[SMX_MULTI_MAX];
    struct smx_chunk_list *list;
    struct smx_post p;
    size_t at = 0, i = 0;

    if (count > SMX_MULTI_MAX || !mca_btl_smx_unstall(ep)) {
        return false;
    }
    /* all the chunks or none: a message holding some while it waits for others could
     * wait for ever on another one doing the same; whole-fragment chunks, which
     * mca_btl_smx_frag_chunks_max() counts (with small fragments the eager size's chunks
     * are as large, but far fewer) */
    OPAL_THREAD_LOCK(&mca_btl_smx_component.lock); /* (taken together: all or none) */
    for (size_t k = 0; k < count; ++k) {
        if (NULL == (s = mca_btl_smx_chunk_take(ep, SMX_CHUNK_CLASSES - 1))) {
            mca_btl_smx_chunks_give_back(parts);
            OPAL_THREAD_UNLOCK(&mca_btl_smx_component.lock);
            return false;
        }
        s->chunk->done = 0;
        *tail = s;
        tail = &s->next;
    }
    OPAL_THREAD_UNLOCK(&mca_btl_smx_component.lock);
    if (!mca_btl_smx_post_begin(ep, list_len, false, &p)) {
        mca_btl_smx_chunks_unget(parts);
        return false;
    }
    list = p.data;
    for (s = parts; NULL != s; s = s->next, ++i) {
        const size_t len = total - at < room ? total - at : room;
        smx_chunk_fill(s->chunk, len, SMX_KIND_AM, tag, 0);
        list->part[i].offset = s->offset + sizeof(struct smx_chunk);
        list->part[i].len = (uint32_t) len;
        iov[i].iov_base = s->chunk + 1;
        iov[i].iov_len = len;
        at += len;
    }
    list->count = (uint32_t) count;
    if (NULL == convertor) { /* all of it in one buffer */
        const char *from = header;
        for (i = 0; i < count; from += iov[i].iov_len, ++i) {
            memcpy(iov[i].iov_base, from, iov[i].iov_len);
        }
    } else { /* the header, then the payload across the chunks */
        uint32_t iov_count = (uint32_t) count;
        memcpy(iov[0].iov_base, header, header_size);
        iov[0].iov_base = (char *) iov[0].iov_base + header_size;
        iov[0].iov_len -= header_size;
        size_t packed = payload_size;
        if (opal_convertor_pack(convertor, iov, &iov_count, &packed) < 0
            || packed != payload_size) {
            mca_btl_smx_post_abandon(ep, &p);
            mca_btl_smx_chunks_unget(parts);
            return false;
        }
    }
    smx_post_commit(ep, &p, list_len, SMX_KIND_MULTI, tag, parts);
    mca_btl_smx_count(&mca_btl_smx_component.stats.skew_eager_sends);
    return true;
}

void mca_btl_smx_post_abandon(mca_btl_smx_endpoint_t *ep, struct smx_post *p)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    (void) ep;
    /* nothing is published yet; a ring record's chunk is on the ring's list already
     * (mca_btl_smx_post_begin) and comes back from there */
    if (NULL != p->slot && NULL == p->rec) {
        OPAL_THREAD_LOCK(&c->lock);
        mca_btl_smx_chunk_unget(p->slot);
        OPAL_THREAD_UNLOCK(&c->lock);
    }
}

void mca_btl_smx_activate(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    if (!ep->active) {
        ep->active = true;
        OPAL_THREAD_LOCK(&c->lock);
        c->active[c->num_active++] = ep;
        OPAL_THREAD_UNLOCK(&c->lock);
    }
}

void mca_btl_smx_copy_in_measured(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                  size_t n)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const unsigned did = smx_store_copy(&ep->store, SMX_NT_ALWAYS == c->nontemporal, to, from, n);

    if (0 != (did & SMX_STORE_STREAMED)) {
        mca_btl_smx_count(&c->stats.streamed_copies);
    }
    if (0 != (did & SMX_STORE_SWITCHED)) {
        mca_btl_smx_count(&c->stats.store_switches);
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                            "btl:smx: %s: payloads to %s now go %s (a memcpy of 1 KiB costs "
                            "%u cycles, streamed %u)",
                            OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                            OPAL_NAME_PRINT(ep->proc->proc_name),
                            SMX_STORE_STREAM == ep->store.way ? "past the caches "
                                                                "(non-temporal stores)"
                                                              : "through the caches (memcpy)",
                            ep->store.cost[SMX_STORE_CACHED], ep->store.cost[SMX_STORE_STREAM]);
    }
}

/* Call with the peer's lock held. */
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag)
{
    const size_t first = SMX_FIRST_LINE_ROOM;
    const unsigned char *buf = frag->segments[0].seg_addr.pval; /* (frag->big, or ->data) */
    const size_t head = frag->segments[0].seg_len;
    const bool place = SMX_KIND_IN_PLACE == frag->kind;
    const size_t len = head + (place ? sizeof(struct smx_in_place) : frag->user_len);
    struct smx_post p;
    unsigned char *data;

    if (len > mca_btl_smx_chunk_room_max()) { /* eagerly to a late receiver */
        return mca_btl_smx_post_multi(frag->endpoint, buf, len, NULL, 0, frag->tag);
    }
    if (!mca_btl_smx_post_begin(frag->endpoint, len, false, &p)) {
        return false;
    }
    p.stamp = frag->stamp;
    data = p.data;
    if (place) { /* where the data is, then the upper layer's header */
        const struct smx_in_place at = {.addr = (uint64_t) (uintptr_t) frag->user,
                                        .len = frag->user_len, .stamp = frag->stamp};
        memcpy(data, &at, sizeof(at));
        memcpy(data + sizeof(at), buf, head);
    } else if (NULL != frag->user) { /* the payload straight from the user's buffer */
        mca_btl_smx_copy_in(frag->endpoint, data + head, frag->user, frag->user_len);
        memcpy(data, buf, head);
    } else {
        /* What lies beyond a record's first cache line first, the line the receiver polls
         * last and in one burst (the fragment is in cache, so the order costs no extra
         * copy, where btl_sendi would need a gather on the stack). */
        if (len > first) {
            mca_btl_smx_copy_in(frag->endpoint, data + first, buf + first, len - first);
        }
        memcpy(data, buf, len < first ? len : first);
    }
    mca_btl_smx_post_commit(frag->endpoint, &p, len, frag->kind, frag->tag);
    return true;
}

/* Under MPI_THREAD_MULTIPLE the callback of a fragment of the upper layer's that went
 * into a pair ring runs once the receiver has taken its record (the ring's 'consumed'
 * has passed it), as btl/sm's fragments complete when their receiver hands them back;
 * elsewhere at once. ob1 completes a synchronous send, and the rendezvous of a large
 * one, at the later of two events: its header's fragment completing here, and the
 * receiver's ACK. Completed at once, the header left the ACK last: far more sending
 * threads slept on their request and had to be woken, and on a core its rank's threads
 * share a wake-up costs about a time slice (docs/design.md, "Threads: synchronous sends",
 * has why and the runs). What it costs: such a callback comes a progress call later or
 * so; an eager message that had to wait for room completes once taken rather than once
 * written, and only under threads. */
void mca_btl_smx_posted(mca_btl_smx_endpoint_t *ep, mca_btl_smx_frag_t *frag)
{
    /* (one in place: once its receiver has copied the data, always; it went into my ring) */
    frag->taken_at = SMX_KIND_IN_PLACE == frag->kind
                             || (opal_using_threads() && NULL != ep->out
                                 && NULL != frag->base.des_cbfunc)
                         ? ep->out_head
                         : 0;
    mca_btl_smx_completed_push(frag);
}

bool mca_btl_smx_send_now(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_endpoint_t *ep = frag->endpoint;
    bool posted;

    OPAL_THREAD_LOCK(&ep->lock);
    posted = opal_list_is_empty(&ep->pending) && mca_btl_smx_try_post(frag);
    OPAL_THREAD_UNLOCK(&ep->lock);
    return posted;
}

/* Post now if nothing of this peer's is waiting (per-peer order), else queue. */
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_endpoint_t *ep = frag->endpoint;

    OPAL_THREAD_LOCK(&ep->lock);
    if (opal_list_is_empty(&ep->pending) && mca_btl_smx_try_post(frag)) {
        mca_btl_smx_posted(ep, frag);
    } else {
        opal_list_append(&ep->pending, &frag->base.super.super);
        mca_btl_smx_activate(ep);
        mca_btl_smx_count(&c->stats.sends_queued);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return OPAL_SUCCESS;
}
