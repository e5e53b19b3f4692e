/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the two ways a message reaches its receiver (layouts and rules in
 * btl_smx_types.h).
 *   - the receiver's queue, shared by all its senders: a chunk of the sender's segment
 *     per message; how a pair starts, and how most pairs stay;
 *   - a pair ring, once a sender has sent a peer btl_smx_pair_ring_after messages: the
 *     message is written into the ring itself (one cache-line transfer for a small one),
 *     or into a chunk the ring's record points to when it is too large for the ring.
 * Only ordered loads and stores, except the compare-and-swap of a queue's tail
 * (the rule of Chai et al.'s intra-node design: no read-modify-write on the fast path).
 */
#ifndef MCA_BTL_SMX_FIFO_H
#define MCA_BTL_SMX_FIFO_H

#include "btl_smx_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline struct smx_queue_entry *smx_queue_entries(void *segment)
{
    return (struct smx_queue_entry *) ((char *) segment + sizeof(struct smx_segment_header));
}

/* Sender: claim an entry of the receiver's queue, if there is room; UINT64_MAX: the
 * queue is full (the receiver is behind), try again later. 'seen' caches the receiver's
 * head: read again only when the queue looks full. A claimed entry must be filled. */
static inline uint64_t smx_queue_claim(void *segment, uint64_t *seen)
{
    struct smx_segment_header *h = (struct smx_segment_header *) segment;
    const uint64_t mask = h->queue_entries - 1;
    uint64_t tail = __atomic_load_n(&h->queue_tail, __ATOMIC_RELAXED);

    do {
        if (tail - *seen > mask
            && tail - (*seen = __atomic_load_n(&h->queue_head, __ATOMIC_ACQUIRE)) > mask) {
            return UINT64_MAX;
        }
    } while (!__atomic_compare_exchange_n(&h->queue_tail, &tail, tail + 1, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
    return tail;
}

/* Sender: hand the claimed entry the chunk (written before, ordered by this release). */
static inline void smx_queue_fill(void *segment, uint64_t index, uint64_t chunk)
{
    struct smx_segment_header *h = (struct smx_segment_header *) segment;
    struct smx_queue_entry *e = smx_queue_entries(segment) + (index & (h->queue_entries - 1));

    e->chunk = chunk;
    __atomic_store_n(&e->seq, index + 1, __ATOMIC_RELEASE);
}

/* Receiver: the chunk id of the next entry of my queue, or 0 if it is not filled yet;
 * the entry is released at once (the chunk id is all it holds). */
static inline uint64_t smx_queue_pop(void *segment, uint64_t *my_head, uint64_t mask)
{
    struct smx_segment_header *h = (struct smx_segment_header *) segment;
    const uint64_t head = *my_head;
    struct smx_queue_entry *e = smx_queue_entries(segment) + (head & mask);
    uint64_t chunk;

    if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != head + 1) {
        return 0;
    }
    chunk = e->chunk;
    *my_head = head + 1;
    __atomic_store_n(&h->queue_head, head + 1, __ATOMIC_RELEASE);
    return chunk;
}

/* Both sides keep the ring's size (its lines) in their endpoint, and neither reads the
 * ring's header on the way: the writer's reads of it would pull in the line beside it,
 * 'consumed', which the reader writes after every message. */
static inline struct smx_record *smx_ring_line(struct smx_pair_ring *ring, uint32_t lines,
                                               uint64_t index)
{
    return (struct smx_record *) ((char *) (ring + 1)
                                  + (size_t) (index & (lines - 1)) * SMX_CACHE_LINE);
}

/* Records start every SMX_RECORD_ALIGN lines (256 bytes): the reader's prefetchers fetch
 * the lines beside the one it polls, which the writer would then have to take back. */
#define SMX_RECORD_ALIGN 4u

/* Lines a record of 'len' payload bytes spans. */
static inline uint32_t smx_record_lines(size_t len)
{
    const uint32_t lines = (uint32_t) ((sizeof(struct smx_record) + len + SMX_CACHE_LINE - 1)
                                       / SMX_CACHE_LINE);
    return (lines + SMX_RECORD_ALIGN - 1) & ~(SMX_RECORD_ALIGN - 1);
}

/* Small records (at most SMX_RING_SMALL lines: 496 payload bytes) keep to the first
 * SMX_RING_LAP lines (32 KiB) of a ring while the reader keeps up: the first one written
 * past them goes back to the ring's start (a SKIP to its end first) if the reader is
 * through with the lines it will cover there, so that a ping-pong keeps to lines still in
 * the caches. A ring of at most SMX_RING_LAP lines just wraps. docs/design.md ("The pair
 * ring") says why, docs/performance.md ("At scale") has the timings. */
#define SMX_RING_LAP 512u
#define SMX_RING_SMALL 8u

/* A record of more than SMX_RING_SMALL lines carried inline leaves SMX_RECORD_GAP lines
 * (512 bytes) empty after it: the reader's prefetchers run on past the record it copies
 * from, into lines the writer would then have to take back. */
#define SMX_RECORD_GAP 8u

/* Medium records (a span of at most SMX_RING_MEDIUM lines: payloads up to about 3.2 KiB)
 * have a lap of their own, the first SMX_RING_MEDIUM_LAP lines (10 KiB: two to four
 * records), on the same terms as small ones. A line written again a few messages later is
 * still in the writer's own cache, where taking it back from the reader costs little; one
 * written again after a lap of 256 KiB is in the reader's L2 only, which is the dearest
 * place to take it from. A larger payload is cheaper still in a chunk whose lines have
 * left both L2s (docs/design.md, "The pair ring", has the timings). */
#define SMX_RING_MEDIUM 60u
#define SMX_RING_MEDIUM_LAP 160u

/* Is a record of 'lines' lines at ring line 'at' a small or medium one at its lap's end
 * (smx_ring_room)? Keep this form: a shorter one compiled sendi's inline case into
 * slower code (docs/performance.md, "At scale"). */
static inline bool smx_ring_lap_end(uint32_t at, uint32_t lines)
{
    if (lines > SMX_RING_SMALL && lines <= SMX_RING_MEDIUM) {
        return at >= SMX_RING_MEDIUM_LAP && at < SMX_RING_MEDIUM_LAP + SMX_RING_MEDIUM;
    }
    return lines <= SMX_RING_SMALL && at >= SMX_RING_LAP && at < SMX_RING_LAP + SMX_RING_SMALL;
}

/* Lines an inline record of 'lines' lines takes in a ring, its gap included. */
static inline uint32_t smx_record_span(uint32_t lines)
{
    return lines > SMX_RING_SMALL ? lines + SMX_RECORD_GAP : lines;
}

/* Does a ring of 'size' lines carry a record of 'lines' lines inline? A small or medium one
 * (their laps keep a ping-pong on lines still in the caches) of at most a sixteenth of it.
 * A larger message goes in a chunk the record points to: a ring's lines beyond its laps
 * come round again while the reader's L2 still holds them, and its writer then has to take
 * each line back from there; chunks come round only after twice an L2's worth
 * (smx_chunks_cycle in btl_smx_chunks.c). */
static inline bool smx_ring_carries(uint32_t size, uint32_t lines)
{
    return lines <= size / 16 && smx_record_span(lines) <= SMX_RING_MEDIUM;
}

/* Writer: do the next 'span' lines from 'head' lie behind the reader? 'seen' caches the
 * reader's count of consumed lines, read again only when it says no. */
static inline bool smx_ring_fits(struct smx_pair_ring *ring, uint32_t size, uint64_t head,
                                 uint64_t *seen, uint32_t span)
{
    if (head + span - *seen <= size) {
        return true;
    }
    *seen = __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE);
    return head + span - *seen <= size;
}

/* Writer: is the reader through with every record before 'head'? A medium lap holds two
 * to eight records: going back to its start while the reader is still on the last ones
 * would write lines it is reading (docs/design.md, "The pair ring"); it goes on through
 * the ring instead. */
static inline bool smx_ring_caught_up(struct smx_pair_ring *ring, uint64_t head, uint64_t *seen)
{
    if (*seen == head) {
        return true;
    }
    *seen = __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE);
    return *seen == head;
}

/* Writer: room for a record of 'lines' lines at 'head' (a SKIP to the ring's end first
 * where it would wrap, or at the lap's end, above)? *skip: the SKIP's lines (0: none). */
static inline bool smx_ring_room(struct smx_pair_ring *ring, uint32_t size, uint64_t head,
                                 uint64_t *seen, uint32_t lines, uint32_t *skip)
{
    const uint32_t at = (uint32_t) (head & (size - 1));

    /* (a record takes at most half the ring, so past its end there is always room for it
     * at the start once the reader has caught up) */
    *skip = at + lines > size ? size - at : 0;
    if (0 == *skip && smx_ring_lap_end(at, lines)
        && (lines <= SMX_RING_SMALL ? smx_ring_fits(ring, size, head, seen, size - at + lines)
                                    : smx_ring_caught_up(ring, head, seen))) {
        *skip = size - at;
        return true;
    }
    return smx_ring_fits(ring, size, head, seen, *skip + lines);
}

/* Writer: the record at 'head' is written but for its seq: hand it over. (A SKIP
 * record is handed over after the record it makes room for.) */
static inline void smx_ring_publish(struct smx_record *rec, uint64_t head, uint64_t key)
{
    __atomic_store_n(&rec->seq, (head + 1) ^ key, __ATOMIC_RELEASE);
}

/* Writer: fill in a record's header but its seq, then hand it over. */
static inline void smx_ring_post(struct smx_record *rec, uint64_t head, uint64_t key, size_t len,
                                 uint8_t kind, uint8_t tag, uint32_t lines)
{
    rec->len = (uint32_t) len;
    rec->tag = tag;
    rec->kind = kind;
    rec->nlines = (uint16_t) lines;
    smx_ring_publish(rec, head, key);
}

/* Writer: the common case of an eager message, decided inline (mca_btl_smx_post_begin
 * decides every other): a record of *lines lines that the ring carries inline, that
 * needs no SKIP (it does not wrap, nor is it a small one at the lap's end: smx_ring_room)
 * and that lies behind the reader. *lines becomes its span (smx_record_span). NULL: take
 * the general way. */
static inline struct smx_record *smx_ring_quick(struct smx_pair_ring *ring, uint32_t size,
                                                uint64_t head, uint64_t *seen, uint32_t *lines)
{
    const uint32_t at = (uint32_t) (head & (size - 1));
    const uint32_t span = smx_record_span(*lines);

    if (!smx_ring_carries(size, *lines) || at + span > size || smx_ring_lap_end(at, span)
        || !smx_ring_fits(ring, size, head, seen, span)) {
        return NULL;
    }
    *lines = span;
    return smx_ring_line(ring, size, head);
}

/* Reader: the record starting at 'tail', if it has arrived. */
static inline struct smx_record *smx_ring_next(struct smx_pair_ring *ring, uint32_t size,
                                               uint64_t tail, uint64_t key)
{
    struct smx_record *rec = smx_ring_line(ring, size, tail);
    return __atomic_load_n(&rec->seq, __ATOMIC_ACQUIRE) == ((tail + 1) ^ key) ? rec : NULL;
}

/* Reader: a small message (at most SMX_RING_SMALL lines, 'bytes' from its line-aligned
 * header on) whose first line has been read: fetch its other lines while the upper layer
 * matches it. Larger ones are left to the hardware prefetchers. (Always inlined: GCC 12
 * drops calls to a function whose only effect is __builtin_prefetch.) */
static inline __attribute__((always_inline)) void smx_prefetch(const void *first, size_t bytes)
{
    if (bytes <= SMX_RING_SMALL * SMX_CACHE_LINE) {
        for (unsigned at = SMX_CACHE_LINE; at < bytes; at += SMX_CACHE_LINE) {
            __builtin_prefetch((const char *) first + at);
        }
    }
}

/* Reader: a payload in a chunk (SMX_KIND_REF), away from the record it polled, found by a
 * poll that was waiting for it: fetch all its lines while the upper layer matches it, if
 * it has at most SMX_PREFETCH_MAX bytes: the hardware prefetchers start on a page only
 * once the copy out has missed there. Part of a payload fetched, or larger ones, measured
 * slower than none; records found behind the first in one poll are a run the prefetchers
 * follow already (docs/performance.md, "A chunk's lines fetched while ob1 matches"). */
#define SMX_PREFETCH_MAX 6144u
static inline __attribute__((always_inline)) void smx_prefetch_away(const void *data, size_t bytes)
{
    if (bytes <= SMX_PREFETCH_MAX) {
        const uintptr_t end = (uintptr_t) data + bytes;
        for (uintptr_t at = (uintptr_t) data & ~(uintptr_t) (SMX_CACHE_LINE - 1); at < end;
             at += SMX_CACHE_LINE) {
            __builtin_prefetch((const void *) at);
        }
    }
}

/* Reader: through with every line before 'tail'. */
static inline void smx_ring_consumed(struct smx_pair_ring *ring, uint64_t tail)
{
    __atomic_store_n(&ring->consumed, tail, __ATOMIC_RELEASE);
}

#endif /* MCA_BTL_SMX_FIFO_H */
