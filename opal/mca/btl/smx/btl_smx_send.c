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
 * Chunks come in three sizes, carved from my area as first needed and never given back:
 * one is reused once its receiver is through with it. So a process takes of /dev/shm
 * what it had in flight at most, within btl_smx_budget_kb. Receivers free chunks and ring
 * lines whenever they progress, whatever their own room (btl_smx_frag.c: no deadlock).
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
#include "btl_smx_fifo.h"
#include "btl_smx_policy.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Private record of one chunk of my area. */
struct smx_chunk_slot {
    struct smx_chunk_slot *next;
    struct smx_chunk *chunk;
    uint64_t offset;                /* in my segment */
    mca_btl_smx_endpoint_t *ep;     /* whose message it holds while busy */
    struct smx_chunk_slot *parts;   /* the chunks of the message it lists (SMX_KIND_MULTI) */
    uint64_t release;               /* ring records: free once 'consumed' reaches this */
    uint32_t rot;                   /* where a ring record's payload goes in it next */
    int cls;
};

/* Payload bytes of a chunk of each class: ob1 headers and get requests; an eager
 * message at btl/sm's eager limit with its header; a whole fragment. */
static size_t smx_chunk_room(int cls)
{
    static const size_t room[SMX_CHUNK_CLASSES - 1] = {256, 4096 + 256};
    const size_t frag = (size_t) mca_btl_smx_component.frag_size;
    return cls < SMX_CHUNK_CLASSES - 1 && room[cls] < frag ? room[cls] : frag;
}

/* Bytes a chunk of class 'cls' takes of the area. */
static uint64_t smx_chunk_bytes(int cls)
{
    return (sizeof(struct smx_chunk) + smx_chunk_room(cls) + SMX_CACHE_LINE - 1)
           & ~(uint64_t) (SMX_CACHE_LINE - 1);
}

/* Eighths of the chunk area each size may carve: small, eager and whole-fragment chunks.
 * Kept apart so that a burst of one size can never leave no room for another (chunks are
 * recycled within their size only). */
static const int smx_area_eighths[SMX_CHUNK_CLASSES] = {1, 2, 5};

/* Chunks of each size the smallest area holds at least. */
static const int smx_area_least[SMX_CHUNK_CLASSES] = {8, 4, 5};

uint64_t mca_btl_smx_area_min(void)
{
    uint64_t least = 0;

    for (int cls = 0; cls < SMX_CHUNK_CLASSES; ++cls) {
        const uint64_t e = (uint64_t) smx_area_eighths[cls];
        const uint64_t need = ((uint64_t) smx_area_least[cls] * smx_chunk_bytes(cls) + e - 1)
                              / e * 8;
        least = need > least ? need : least;
    }
    return least;
}

/* Bytes of the lines of the k-th ring I make (from 0). */
static uint32_t smx_ring_size(int k)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return k < SMX_RINGS_LARGE ? c->ring_size : c->ring_size_rest;
}

uint64_t mca_btl_smx_rings_bytes(int n)
{
    uint64_t bytes = 0;

    for (int k = 0; k < n; ++k) {
        bytes += sizeof(struct smx_pair_ring) + (uint64_t) smx_ring_size(k);
    }
    return bytes;
}

/* Carve 'bytes' (whole cache lines) from my chunk area for a chunk of class 'cls', or
 * from my ring area for a ring (cls SMX_CHUNK_CLASSES); NULL when that has had its
 * share. */
static void *smx_area_carve(int cls, size_t bytes, uint64_t *offset)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_segment_header *h = c->segment;

    bytes = (bytes + SMX_CACHE_LINE - 1) & ~(size_t) (SMX_CACHE_LINE - 1);
    if (SMX_CHUNK_CLASSES == cls) {
        if (c->rings_used + bytes > h->size - h->rings_offset) {
            return NULL;
        }
        *offset = h->rings_offset + c->rings_used;
        c->rings_used += bytes;
    } else {
        const uint64_t area = h->rings_offset - h->area_offset;
        if (c->area_carved[cls] + bytes > area / 8 * (uint64_t) smx_area_eighths[cls]
            || c->area_used + bytes > area) {
            return NULL;
        }
        *offset = h->area_offset + c->area_used;
        c->area_used += bytes;
        c->area_carved[cls] += bytes;
    }
    return (char *) c->segment + *offset;
}

/* A chunk to the end of the ready ones of its size: reused in the order they came back,
 * so that its lines are written again once the receiver's caches have likely let them go
 * (a line another core still holds costs an invalidation to write). */
static void smx_chunk_ready(struct smx_chunk_slot *s)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    s->next = NULL;
    if (NULL == c->chunk_free[s->cls]) {
        c->chunk_free[s->cls] = s;
    } else {
        c->chunk_free_last[s->cls]->next = s;
    }
    c->chunk_free_last[s->cls] = s;
}

/* A chunk back from its receiver (nothing in it is read any more), with the chunks it
 * listed (component lock held). */
static void smx_chunk_unget(struct smx_chunk_slot *s)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    while (NULL != s) {
        struct smx_chunk_slot *parts = s->parts;
        s->parts = NULL;
        (void) __atomic_sub_fetch(&s->ep->chunks_out, 1, __ATOMIC_RELAXED);
        c->chunks_busy[s->cls]--;
        smx_chunk_ready(s);
        s = parts;
    }
}

/* Chunks taken for one message and not sent, chained by 'next': back at once
 * (component lock held; smx_chunks_unget takes it). */
static void smx_chunks_give_back(struct smx_chunk_slot *s)
{
    while (NULL != s) {
        struct smx_chunk_slot *next = s->next;
        s->parts = NULL;
        smx_chunk_unget(s);
        s = next;
    }
}

static void smx_chunks_unget(struct smx_chunk_slot *s)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OPAL_THREAD_LOCK(&c->lock);
    smx_chunks_give_back(s);
    OPAL_THREAD_UNLOCK(&c->lock);
}

/* The chunks of ep's ring records that the reader is through with, its count of lines
 * consumed being 'seen' (component lock held). */
static void smx_ring_chunks_reclaim(mca_btl_smx_endpoint_t *ep, uint64_t seen)
{
    while (NULL != ep->ref_first && ep->ref_first->release <= seen) {
        struct smx_chunk_slot *s = ep->ref_first;
        ep->ref_first = s->next;
        if (NULL == ep->ref_first) {
            ep->ref_last = NULL;
        }
        smx_chunk_unget(s);
    }
}

/* Chunks sent through a queue come back when their receiver marks them done; chunks a
 * ring's record pointed to, when the reader's count of consumed lines passes the record
 * (read afresh here): no flag of the chunk's to write or read. */
static void smx_chunks_reclaim(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    for (int cls = 0; cls < SMX_CHUNK_CLASSES; ++cls) {
        struct smx_chunk_slot **link = &c->chunk_busy[cls];
        while (NULL != *link) {
            struct smx_chunk_slot *s = *link;
            if (1 == __atomic_load_n(&s->chunk->done, __ATOMIC_ACQUIRE)) {
                *link = s->next;
                smx_chunk_unget(s);
            } else {
                link = &s->next;
            }
        }
    }
    for (int i = 0; NULL != c->peers && i < c->num_peers; ++i) {
        mca_btl_smx_endpoint_t *ep = c->peers[i];
        if (NULL != ep && NULL != ep->ref_first) { /* (then ep->out is set) */
            smx_ring_chunks_reclaim(ep, __atomic_load_n(&ep->out->consumed, __ATOMIC_ACQUIRE));
        }
    }
}

void mca_btl_smx_chunks_reclaim(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OPAL_THREAD_LOCK(&c->lock);
    smx_chunks_reclaim();
    OPAL_THREAD_UNLOCK(&c->lock);
}

/* A slot's record, and those of the chunks it listed, freed (finalize). */
static void smx_slot_free(struct smx_chunk_slot *s)
{
    while (NULL != s) {
        struct smx_chunk_slot *parts = s->parts;
        free(s);
        s = parts;
    }
}

void mca_btl_smx_chunks_fini(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    for (int i = 0; NULL != c->peers && i < c->num_peers; ++i) {
        mca_btl_smx_endpoint_t *ep = c->peers[i];
        if (NULL != ep) {
            smx_slot_free(ep->stalled);
            ep->stalled = NULL;
        }
        while (NULL != ep && NULL != ep->ref_first) {
            struct smx_chunk_slot *s = ep->ref_first;
            ep->ref_first = s->next;
            smx_slot_free(s);
        }
    }
    for (int cls = 0; cls < SMX_CHUNK_CLASSES; ++cls) {
        struct smx_chunk_slot **lists[2] = {&c->chunk_free[cls], &c->chunk_busy[cls]};
        for (int l = 0; l < 2; ++l) {
            while (NULL != *lists[l]) {
                struct smx_chunk_slot *s = *lists[l];
                *lists[l] = s->next;
                smx_slot_free(s);
            }
        }
    }
    c->area_used = c->rings_used = 0;
    memset(c->area_carved, 0, sizeof(c->area_carved));
    memset(c->chunks_busy, 0, sizeof(c->chunks_busy));
    c->pair_rings = 0;
}

/* How many chunks of one size go by before one is written again (and so how many may be
 * out before the ones back are looked for): 16; for whole fragments, as many as fill the
 * policy's cycle (btl_smx_policy.c: twice the largest L2, at least 1 MiB; half the L2 on a
 * crowded node), as far as the area allows. Except on a crowded node, a chunk's lines
 * have then left the receiver's L2 when it is written again (smx_chunk_ready), where the
 * writer would have to take them back one by one. A longer cycle helped messages that fill
 * little of a chunk (8 KiB ones were 1.4x faster with four L2s), but took more of the
 * shared cache from large transfers (4 MiB ones 1.2x slower); docs/design.md ("The pair
 * ring") has the timings. Instead, a ring record's payload moves on through its chunk
 * from one use to the next (mca_btl_smx_post_begin), so that small ones too come back to
 * a line only after the whole cycle's bytes. */
#define SMX_CHUNKS_CYCLE 16

static int smx_chunks_cycle(int cls)
{
    if (SMX_CHUNK_CLASSES - 1 != cls) {
        return SMX_CHUNKS_CYCLE;
    }
    const uint64_t n = mca_btl_smx_policy.chunk_cycle / smx_chunk_bytes(cls);
    return n > SMX_CHUNKS_CYCLE ? (n > INT_MAX ? INT_MAX : (int) n) : SMX_CHUNKS_CYCLE;
}

/* A new chunk of class 'cls', made ready; NULL when its share of the area is used up. */
static struct smx_chunk_slot *smx_chunk_carve(int cls)
{
    struct smx_chunk_slot *s = malloc(sizeof(*s));
    uint64_t offset;

    if (NULL == s) {
        return NULL;
    }
    s->chunk = smx_area_carve(cls, smx_chunk_bytes(cls), &offset);
    if (NULL == s->chunk) {
        free(s);
        return NULL;
    }
    s->offset = offset;
    s->cls = cls;
    s->rot = 0;
    smx_chunk_ready(s);
    return s;
}

/* A chunk of class 'cls' to ep: a ready one, one back from a receiver, or a new one
 * (component lock held). */
static struct smx_chunk_slot *smx_chunk_take(mca_btl_smx_endpoint_t *ep, int cls)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk_slot *s;

    /* Looking for the chunks receivers are through with reads lines they write (a cache
     * miss each): done only once smx_chunks_cycle() of a size are out, or none can be made
     * any more. In between, new chunks are carved, and the ones out come back together. */
    const int cycle = smx_chunks_cycle(cls);
    if (NULL == c->chunk_free[cls] && c->chunks_busy[cls] >= cycle) {
        smx_chunks_reclaim();
    }
    s = c->chunk_free[cls];
    if (NULL == s) {
        s = smx_chunk_carve(cls);
    }
    if (NULL == s && c->chunks_busy[cls] < cycle) {
        smx_chunks_reclaim();
        s = c->chunk_free[cls];
    }
    if (NULL == s) {
        return NULL; /* the area is used up: wait for receivers to finish some */
    }
    c->chunk_free[cls] = s->next;
    s->ep = ep;
    s->next = NULL;
    s->parts = NULL;
    (void) __atomic_add_fetch(&ep->chunks_out, 1, __ATOMIC_RELAXED);
    c->chunks_busy[cls]++;
    return s;
}

/* A chunk for 'len' payload bytes to ep, of the smallest class that holds them
 * (component lock held). */
static struct smx_chunk_slot *smx_chunk_take_for(mca_btl_smx_endpoint_t *ep, size_t len)
{
    int cls = 0;

    while (cls < SMX_CHUNK_CLASSES - 1 && len > smx_chunk_room(cls)) {
        cls++;
    }
    if (len > smx_chunk_room(cls)) {
        return NULL; /* larger than a fragment: never asked for (btl_max_send_size) */
    }
    return smx_chunk_take(ep, cls);
}

/* The same, taking the component lock. */
static struct smx_chunk_slot *smx_chunk_get(mca_btl_smx_endpoint_t *ep, size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk_slot *s;

    OPAL_THREAD_LOCK(&c->lock);
    s = smx_chunk_take_for(ep, len);
    OPAL_THREAD_UNLOCK(&c->lock);
    return s;
}

/* A chunk for a message through the peer's queue; the entry is claimed at commit, right
 * before it is filled, so that a sender descheduled while it copies never holds up the
 * receiver's queue. */
static bool smx_queue_begin(mca_btl_smx_endpoint_t *ep, size_t len, struct smx_post *p)
{
    p->slot = smx_chunk_get(ep, len);
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

static void smx_chunk_fill(struct smx_chunk *chunk, size_t len, uint8_t kind, uint8_t tag)
{
    chunk->len = (uint32_t) len;
    chunk->tag = tag;
    chunk->kind = kind;
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
        ring = smx_area_carve(SMX_CHUNK_CLASSES,
                              sizeof(*ring) + (size_t) lines * SMX_CACHE_LINE, &offset);
        if (NULL == ring) {
            c->pair_rings = c->pair_rings_max; /* (cannot happen: room for the most is made) */
        } else {
            c->pair_rings++;
        }
    }
    if (NULL == ring) {
        smx_chunk_unget(p.slot);
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
        smx_chunk_unget(p.slot);
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
    smx_chunk_fill(p.slot->chunk, sizeof(*offer), SMX_KIND_RING, 0);
    smx_queue_send(ep, p.slot); /* (if it stalls, the ring is used once it goes) */
    ep->out_head = ep->out_seen = 0;
    OPAL_THREAD_LOCK(&c->lock);
    ep->out = ring; /* (read by smx_chunks_reclaim once the ring has records) */
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

bool mca_btl_smx_post_begin(mca_btl_smx_endpoint_t *ep, size_t len, bool stream,
                            struct smx_post *p)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    p->rec = NULL;
    p->slot = NULL;
    p->skip = 0;
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
    const bool inline_data = !stream && smx_ring_carries(ep->out_lines, lines);
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
    smx_ring_chunks_reclaim(ep, ep->out_seen);
    /* Anything above a small chunk in a whole-fragment one, whose lines come round only
     * after the longest cycle (smx_chunks_cycle), where the area has one; the eager
     * size's chunks are for the queue, whose receiver reads the payload where the chunk's
     * header says. (One hold of the lock for both.) */
    p->slot = NULL;
    if (len > smx_chunk_room(0)) {
        p->slot = smx_chunk_take(ep, SMX_CHUNK_CLASSES - 1);
    }
    if (NULL == p->slot) {
        p->slot = smx_chunk_take_for(ep, len);
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
        smx_chunk_fill(p->slot->chunk, len, kind, tag);
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

size_t mca_btl_smx_chunk_room_max(void)
{
    return smx_chunk_room(SMX_CHUNK_CLASSES - 1);
}

uint64_t mca_btl_smx_frag_chunks_max(void)
{
    const struct smx_segment_header *h = mca_btl_smx_component.segment;
    const int cls = SMX_CHUNK_CLASSES - 1;

    if (NULL == h) {
        return 0;
    }
    return (h->rings_offset - h->area_offset) / 8 * (uint64_t) smx_area_eighths[cls]
           / smx_chunk_bytes(cls);
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
        if (NULL == (s = smx_chunk_take(ep, SMX_CHUNK_CLASSES - 1))) {
            smx_chunks_give_back(parts);
            OPAL_THREAD_UNLOCK(&mca_btl_smx_component.lock);
            return false;
        }
        s->chunk->done = 0;
        *tail = s;
        tail = &s->next;
    }
    OPAL_THREAD_UNLOCK(&mca_btl_smx_component.lock);
    if (!mca_btl_smx_post_begin(ep, list_len, false, &p)) {
        smx_chunks_unget(parts);
        return false;
    }
    list = p.data;
    for (s = parts; NULL != s; s = s->next, ++i) {
        const size_t len = total - at < room ? total - at : room;
        smx_chunk_fill(s->chunk, len, SMX_KIND_AM, tag);
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
            smx_chunks_unget(parts);
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
        smx_chunk_unget(p->slot);
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

/* The sender's clock for timing its copies (one in 8): the time-stamp counter, in cycles.
 * clock_gettime() costs enough to be part of what it times: with it, a streamed 4 KiB copy
 * did not look three times cheaper than a memcpy in the far state of the development VM,
 * and 4 KiB stayed memcpy (2.2 us a ping-pong against 1.3). */
static inline uint64_t smx_cycles(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t) hi << 32) | lo;
#else
    return 0; /* (never called: streaming is built for x86-64 only) */
#endif
}

void mca_btl_smx_copy_in_measured(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                  size_t n)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    if (!smx_store_can_stream()) {
        memcpy(to, from, n);
        return;
    }
    if (SMX_NT_ALWAYS == c->nontemporal) {
        smx_store_stream(to, from, n);
        mca_btl_smx_count(&c->stats.streamed_copies);
        return;
    }
    bool timed = false;
    /* below SMX_STORE_TIME_MIN: the way larger copies to this peer chose, untimed */
    const enum smx_store_way way = n < SMX_STORE_TIME_MIN
                                       ? (enum smx_store_way) ep->store.way
                                       : smx_store_next(&ep->store, &timed);
    const uint64_t start = timed ? smx_cycles() : 0;
    if (SMX_STORE_STREAM == way) {
        smx_store_stream(to, from, n);
        mca_btl_smx_count(&c->stats.streamed_copies);
    } else {
        memcpy(to, from, n);
    }
    if (timed && smx_store_measured(&ep->store, way, n, smx_cycles() - start)) {
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
    const size_t len = frag->segment.seg_len;
    struct smx_post p;
    unsigned char *data;

    if (len > mca_btl_smx_chunk_room_max()) { /* eagerly to a late receiver */
        return mca_btl_smx_post_multi(frag->endpoint, frag->segment.seg_addr.pval, len, NULL, 0,
                                      frag->tag);
    }
    if (!mca_btl_smx_post_begin(frag->endpoint, len, false, &p)) {
        return false;
    }
    /* What lies beyond a record's first cache line first, the line the receiver polls
     * last and in one burst (the fragment is in cache, so the order costs no extra copy,
     * where btl_sendi would need a gather on the stack). */
    data = p.data;
    if (len > first) {
        mca_btl_smx_copy_in(frag->endpoint, data + first, frag->data + first, len - first);
    }
    memcpy(data, frag->data, len < first ? len : first);
    mca_btl_smx_post_commit(frag->endpoint, &p, len, frag->kind, frag->tag);
    return true;
}

/* Post now if nothing of this peer's is waiting (per-peer order), else queue. */
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_endpoint_t *ep = frag->endpoint;

    OPAL_THREAD_LOCK(&ep->lock);
    if (opal_list_is_empty(&ep->pending) && mca_btl_smx_try_post(frag)) {
        OPAL_THREAD_LOCK(&c->lock);
        opal_list_append(&c->completed, &frag->base.super.super);
        OPAL_THREAD_UNLOCK(&c->lock);
    } else {
        opal_list_append(&ep->pending, &frag->base.super.super);
        mca_btl_smx_activate(ep);
        mca_btl_smx_count(&c->stats.sends_queued);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return OPAL_SUCCESS;
}

int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag)
{
    mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) descriptor;

    (void) btl;
    frag->tag = tag;
    frag->endpoint = endpoint;
    /* The callback (if any) always comes from progress. */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    int rc = mca_btl_smx_send_internal(frag);
    /* ob1's rendezvous header after a registration that names a push: the push begins
     * (btl_smx_get.c, "pushed ahead") */
    if (OPAL_UNLIKELY(endpoint->push_armed)) {
        mca_btl_smx_push_start(endpoint);
    }
    return rc;
}
