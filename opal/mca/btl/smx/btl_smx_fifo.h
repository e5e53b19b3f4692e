/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx rings: one per (sender, receiver) pair, in the receiver's segment. Exactly one
 * process writes slots (the sender) and one reads them (the receiver), so no locks and
 * no read-modify-write atomics, only ordered loads and stores (paper 004's rule):
 *   - the sender fills slot i % slots, then stores seq = i + 1 with release order;
 *   - the receiver polls the one slot it expects next (contiguous slots: the next flag
 *     to poll is always the next slot's), sees seq == i + 1 with acquire order, delivers,
 *     then stores consumed = i + 1 in the ring header with release order;
 *   - the sender reuses a slot once consumed says so: that store is how the receiver
 *     marks a slot done, and the sender only reads it when its private count of
 *     messages in flight reaches the ring size (a lazy sweep).
 * The receiver never writes a slot, so a message costs one cache-line transfer each
 * way instead of the two of a full/empty flag that both sides write. Indices are 64-bit
 * and never wrap in practice; a stale slot from the previous lap carries seq i + 1 - slots.
 */
#ifndef MCA_BTL_SMX_FIFO_H
#define MCA_BTL_SMX_FIFO_H

#include "btl_smx_types.h"

static inline struct smx_slot_header *smx_ring_slot(struct smx_ring *ring, uint64_t index)
{
    return (struct smx_slot_header *) ((char *) (ring + 1)
                                       + (size_t) (index & (ring->slots - 1)) * ring->slot_size);
}

static inline struct smx_ring *smx_segment_ring(void *segment, int sender)
{
    struct smx_segment_header *h = (struct smx_segment_header *) segment;
    return (struct smx_ring *) ((char *) (h + 1) + (size_t) sender * h->ring_bytes);
}

static inline uint32_t smx_ring_payload(const struct smx_ring *ring)
{
    return ring->slot_size - (uint32_t) sizeof(struct smx_slot_header);
}

/* Receiver: has message 'index' arrived? */
static inline int smx_slot_ready(const struct smx_slot_header *s, uint64_t index)
{
    return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == index + 1;
}

/* Sender: message 'index' is written; hand it to the receiver. */
static inline void smx_slot_publish(struct smx_slot_header *s, uint64_t index)
{
    __atomic_store_n(&s->seq, index + 1, __ATOMIC_RELEASE);
}

/* Receiver: done with every message before 'next'; their slots go back to the sender. */
static inline void smx_ring_consumed(struct smx_ring *ring, uint64_t next)
{
    __atomic_store_n(&ring->consumed, next, __ATOMIC_RELEASE);
}

/* Sender: is there a free slot for message 'head'? 'seen' caches the receiver's count. */
static inline int smx_ring_has_room(struct smx_ring *ring, uint64_t head, uint64_t *seen)
{
    if (head - *seen < ring->slots) {
        return 1;
    }
    *seen = __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE);
    return head - *seen < ring->slots;
}

#endif /* MCA_BTL_SMX_FIFO_H */
