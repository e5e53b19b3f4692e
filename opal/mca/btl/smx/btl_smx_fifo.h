/*
 * btl/smx rings: one per (sender, receiver) pair, in the receiver's segment. Exactly one
 * process writes slots (the sender) and one reads them (the receiver); a slot's 'full'
 * flag hands it over: the sender fills the slot, then sets full with release order; the
 * receiver sees full with acquire order, consumes, then clears it with release order.
 * Head and tail indices live in each side's private memory. Polling touches one flag
 * per ring (contiguous slots: the next flag to poll is always the tail's).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_BTL_SMX_FIFO_H
#define MCA_BTL_SMX_FIFO_H

#include <stdint.h>

#define SMX_CACHE_LINE 64

struct smx_slot_header {
    uint32_t full; /* 1: written, not yet consumed */
    uint32_t len;  /* payload bytes */
    uint8_t tag;
    uint8_t pad[SMX_CACHE_LINE - 9];
};

struct smx_ring {
    uint32_t slots;     /* number of slots */
    uint32_t slot_size; /* bytes per slot, header included */
    uint8_t pad[SMX_CACHE_LINE - 8];
    /* slots follow */
};

struct smx_segment_header {
    uint64_t magic;
    uint32_t num_local;
    uint32_t ring_bytes; /* size of one ring, header and slots */
    uint8_t pad[SMX_CACHE_LINE - 16];
    /* num_local rings follow, indexed by the sender's local rank */
};

#define SMX_SEGMENT_MAGIC 0x736d7831726e6731ull

static inline struct smx_slot_header *smx_ring_slot(struct smx_ring *ring, uint32_t index)
{
    return (struct smx_slot_header *) ((char *) (ring + 1)
                                       + (size_t) (index % ring->slots) * ring->slot_size);
}

static inline struct smx_ring *smx_segment_ring(void *segment, int sender)
{
    struct smx_segment_header *h = segment;
    return (struct smx_ring *) ((char *) (h + 1) + (size_t) sender * h->ring_bytes);
}

static inline int smx_slot_is_full(const struct smx_slot_header *s)
{
    return __atomic_load_n(&s->full, __ATOMIC_ACQUIRE);
}

static inline void smx_slot_set(struct smx_slot_header *s, uint32_t full)
{
    __atomic_store_n(&s->full, full, __ATOMIC_RELEASE);
}

#endif
