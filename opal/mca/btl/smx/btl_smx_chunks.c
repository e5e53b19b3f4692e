/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx chunks: my segment's chunk area. Chunks come in three sizes, carved from the
 * area as first needed and never given back: one is reused once its receiver is through
 * with it (btl_smx_send.c says how messages use them).
 */
#include "opal_config.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_frag.h"
#include "btl_smx_pages.h"
#include "btl_smx_types.h"

#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/sys_limits.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
void *mca_btl_smx_area_carve(int cls, size_t bytes, uint64_t *offset)
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
void mca_btl_smx_chunk_unget(struct smx_chunk_slot *s)
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
 * (component lock held; mca_btl_smx_chunks_unget takes it). */
void mca_btl_smx_chunks_give_back(struct smx_chunk_slot *s)
{
    while (NULL != s) {
        struct smx_chunk_slot *next = s->next;
        s->parts = NULL;
        mca_btl_smx_chunk_unget(s);
        s = next;
    }
}

void mca_btl_smx_chunks_unget(struct smx_chunk_slot *s)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OPAL_THREAD_LOCK(&c->lock);
    mca_btl_smx_chunks_give_back(s);
    OPAL_THREAD_UNLOCK(&c->lock);
}

/* The chunks of ep's ring records that the reader is through with, its count of lines
 * consumed being 'seen' (component lock held). */
void mca_btl_smx_ring_chunks_reclaim(mca_btl_smx_endpoint_t *ep, uint64_t seen)
{
    while (NULL != ep->ref_first && ep->ref_first->release <= seen) {
        struct smx_chunk_slot *s = ep->ref_first;
        ep->ref_first = s->next;
        if (NULL == ep->ref_first) {
            ep->ref_last = NULL;
        }
        mca_btl_smx_chunk_unget(s);
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
                mca_btl_smx_chunk_unget(s);
            } else {
                link = &s->next;
            }
        }
    }
    /* (the peers I made a ring to only: at most btl_smx_pair_rings_max, where a loop over
     * every peer cost each whole-fragment message of a 384-rank job 384 endpoints) */
    for (int i = 0; NULL != c->ringed && i < c->num_ringed; ++i) {
        mca_btl_smx_endpoint_t *ep = c->ringed[i];
        if (NULL != ep->ref_first) {
            mca_btl_smx_ring_chunks_reclaim(ep,
                                            __atomic_load_n(&ep->out->consumed, __ATOMIC_ACQUIRE));
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
 * writer would have to take them back one by one. A longer cycle takes more of the shared
 * cache from large transfers (docs/design.md, "The pair ring", has the timings). Instead,
 * a ring record's payload moves on through its chunk
 * from one use to the next (mca_btl_smx_post_begin), so that small ones too come back to
 * a line only after the whole cycle's bytes. */
#define SMX_CHUNKS_CYCLE 16

static int smx_chunks_cycle(int cls)
{
    if (SMX_CHUNK_CLASSES - 1 != cls) {
        return SMX_CHUNKS_CYCLE;
    }
    const uint64_t n = mca_btl_smx_component.chunk_cycle / smx_chunk_bytes(cls);
    return n > SMX_CHUNKS_CYCLE ? (n > INT_MAX ? INT_MAX : (int) n) : SMX_CHUNKS_CYCLE;
}

/* A new chunk of class 'cls', made ready; NULL when its share of the area is used up, or
 * no page of it could be had (the file system is full). Its pages are reserved as it is
 * first used for as many bytes (smx_chunk_reserve), unless init reserved them. */
static struct smx_chunk_slot *smx_chunk_carve(int cls)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk_slot *s;
    uint64_t offset;

    if (c->area_full) {
        return NULL;
    }
    s = malloc(sizeof(*s));
    if (NULL == s) {
        return NULL;
    }
    s->chunk = mca_btl_smx_area_carve(cls, smx_chunk_bytes(cls), &offset);
    if (NULL == s->chunk) {
        free(s);
        return NULL;
    }
    s->offset = offset;
    s->cls = cls;
    s->rot = 0;
    s->ep = NULL;
    s->parts = NULL; /* (read at finalize: a chunk init carved may never be taken) */
    s->release = 0;
    s->reserved = offset + smx_chunk_bytes(cls) <= c->area_ready ? (uint32_t) smx_chunk_bytes(cls)
                                                                 : 0;
    smx_chunk_ready(s);
    return s;
}

/* The pages of the first 'need' bytes of s (its header included) taken from the file
 * system and mapped, if they are not yet: tmpfs gives a page at its first write, and a
 * full one meets that write with SIGBUS. 0, or an errno (the file system is full: no more
 * pages are asked for, area_full). */
static int smx_chunk_reserve(struct smx_chunk_slot *s, uint64_t need)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint64_t whole = smx_chunk_bytes(s->cls);
    const uint64_t page = (uint64_t) opal_getpagesize();
    int rc;

    if (need > whole) {
        need = whole;
    }
    if (need <= s->reserved) {
        return 0;
    }
    if (c->area_full) {
        return ENOSPC;
    }
    rc = mca_btl_smx_reserve(s->offset + s->reserved, need - s->reserved);
    if (0 != rc) {
        c->area_full = true;
        return rc;
    }
    /* (to the end of the page: the next chunk's first bytes may be reserved with them) */
    need = ((s->offset + need + page - 1) & ~(page - 1)) - s->offset;
    s->reserved = (uint32_t) (need < whole ? need : whole);
    return 0;
}

/* The first ready chunk of class 'cls' whose first 'need' bytes are reserved, and the one
 * before it on the list (NULL: it is the first); NULL if none. */
static struct smx_chunk_slot *smx_ready_with(int cls, uint64_t need, struct smx_chunk_slot **prev)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint64_t whole = smx_chunk_bytes(cls);

    need = need < whole ? need : whole;
    *prev = NULL;
    for (struct smx_chunk_slot *s = c->chunk_free[cls]; NULL != s; *prev = s, s = s->next) {
        if (s->reserved >= need) {
            return s;
        }
    }
    return NULL;
}

int mca_btl_smx_chunks_start(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_segment_header *h = c->segment;
    const int frag = SMX_CHUNK_CLASSES - 1;
    const size_t room = smx_chunk_room(frag);
    int want[SMX_CHUNK_CLASSES];
    int rc = 0;

    /* As many whole fragments as one message to a late receiver takes at once
     * (mca_btl_smx_post_multi takes them all or none: with fewer in the area, it would
     * wait for ever), at least one: a message of any size has one to wait for (a smaller
     * size goes in one when it has none: mca_btl_smx_chunk_take_for). */
    for (int cls = 0; cls < SMX_CHUNK_CLASSES; ++cls) {
        want[cls] = cls == frag;
    }
    if (c->skew_eager_max > room) {
        want[frag] = (int) ((c->skew_eager_max + room - 1) / room);
    }
    if (c->area_fixed) {
        /* A budget asked for is reserved whole: a process that cannot have it refuses. */
        rc = mca_btl_smx_reserve(h->area_offset, h->rings_offset - h->area_offset);
        if (0 != rc) {
            mca_btl_smx_reserve_refused(h->rings_offset - h->area_offset, rc);
            return rc;
        }
        c->area_ready = h->rings_offset;
        return 0;
    }
    for (int cls = 0; cls < SMX_CHUNK_CLASSES && 0 == rc; ++cls) {
        for (int k = 0; k < want[cls] && 0 == rc; ++k) {
            struct smx_chunk_slot *s = smx_chunk_carve(cls);
            rc = NULL == s ? ENOSPC /* (the area holds more: mca_btl_smx_area_min) */
                           : smx_chunk_reserve(s, smx_chunk_bytes(cls));
        }
    }
    if (0 != rc) {
        mca_btl_smx_reserve_refused(c->area_used, rc);
    }
    return rc;
}

/* A chunk of class 'cls' to ep, its first 'need' bytes reserved: a ready one, one back
 * from a receiver, or a new one (component lock held). */
static struct smx_chunk_slot *smx_chunk_take(mca_btl_smx_endpoint_t *ep, int cls, uint64_t need)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk_slot *s, *prev = NULL;

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
    if (0 != smx_chunk_reserve(s, need)) {
        /* The file system is full: the area stays as it is. This never waits for ever: init
         * reserved the whole fragments a message takes at once, and a smaller message
         * goes in one of them when its size has none (mca_btl_smx_chunk_take_for). */
        static bool said = false;
        if (!said) {
            said = true;
            opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                                "btl:smx: %s: no more room in %s; messages go on through the "
                                "%.0f KiB of chunks reserved so far",
                                OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), c->backing_directory,
                                (double) c->area_used / 1024.0);
        }
        s = smx_ready_with(cls, need, &prev);
        if (NULL == s) {
            smx_chunks_reclaim();
            s = smx_ready_with(cls, need, &prev);
        }
        if (NULL == s) {
            return NULL;
        }
    }
    if (NULL == prev) {
        c->chunk_free[cls] = s->next;
    } else {
        prev->next = s->next;
        if (c->chunk_free_last[cls] == s) {
            c->chunk_free_last[cls] = prev;
        }
    }
    s->ep = ep;
    s->next = NULL;
    s->parts = NULL;
    (void) __atomic_add_fetch(&ep->chunks_out, 1, __ATOMIC_RELAXED);
    c->chunks_busy[cls]++;
    return s;
}

struct smx_chunk_slot *mca_btl_smx_chunk_take(mca_btl_smx_endpoint_t *ep, int cls)
{
    return smx_chunk_take(ep, cls, smx_chunk_bytes(cls));
}

/* A chunk for 'len' payload bytes to ep, of the smallest class that holds them
 * (component lock held). Through the peer's queue the payload follows the chunk's header
 * (btl_smx_send.c), so only its pages are reserved; a ring's record may place it anywhere
 * in the chunk (mca_btl_smx_post_begin), so the chunk is reserved whole. */
struct smx_chunk_slot *mca_btl_smx_chunk_take_for(mca_btl_smx_endpoint_t *ep, size_t len)
{
    int cls = 0;

    while (cls < SMX_CHUNK_CLASSES - 1 && len > smx_chunk_room(cls)) {
        cls++;
    }
    if (len > smx_chunk_room(cls)) {
        return NULL; /* larger than a fragment: never asked for (btl_max_send_size) */
    }
    struct smx_chunk_slot *s = smx_chunk_take(ep, cls, NULL == ep->out
                                                           ? sizeof(struct smx_chunk) + len
                                                           : smx_chunk_bytes(cls));
    /* With no more pages to be had, a size init reserved none of may have none at all: a
     * larger chunk carries the message (the whole fragments init reserved at least). */
    while (NULL == s && mca_btl_smx_component.area_full && cls < SMX_CHUNK_CLASSES - 1) {
        ++cls;
        s = smx_chunk_take(ep, cls, NULL == ep->out ? sizeof(struct smx_chunk) + len
                                                    : smx_chunk_bytes(cls));
    }
    return s;
}

/* The same, taking the component lock. */
struct smx_chunk_slot *mca_btl_smx_chunk_get(mca_btl_smx_endpoint_t *ep, size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk_slot *s;

    OPAL_THREAD_LOCK(&c->lock);
    s = mca_btl_smx_chunk_take_for(ep, len);
    OPAL_THREAD_UNLOCK(&c->lock);
    return s;
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
