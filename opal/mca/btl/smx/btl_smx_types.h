/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: layouts of what lives in shared memory. Everything here is read by another
 * process, so fields have fixed sizes and the hot ones sit alone on a cache line.
 *
 * A process's segment:
 *   struct smx_segment_header
 *   ring[0] ... ring[num_local - 1]    one ring per local sender, indexed by its local rank
 * A ring:
 *   struct smx_ring
 *   slot[0] ... slot[slots - 1]        struct smx_slot_header + payload, slot_size bytes each
 */
#ifndef MCA_BTL_SMX_TYPES_H
#define MCA_BTL_SMX_TYPES_H

#include <stdint.h>

#define SMX_CACHE_LINE 64
#define SMX_SEGMENT_MAGIC 0x736d7833726e6737ull /* bumped with every layout change */

/* What a slot carries. */
enum smx_slot_kind {
    SMX_SLOT_AM = 0,   /* an upper-layer fragment, dispatched by its tag */
    SMX_SLOT_GET_REQ,  /* "send me this range of your memory" (emulated get, btl_smx_get.c) */
    SMX_SLOT_GET_DATA, /* a piece of that range */
};

/* 16 bytes, so that a small message (ob1's match header and up to about 30 bytes of
 * data) shares the flag's cache line: the receiver then pulls one line from the sender's
 * cache per message instead of two. */
struct smx_slot_header {
    uint64_t seq; /* index of the message in the ring + 1, written last: the hand-over flag */
    uint32_t len; /* payload bytes after this header */
    uint8_t tag;  /* upper-layer tag (SMX_SLOT_AM) */
    uint8_t kind; /* enum smx_slot_kind */
    uint8_t pad[2];
};
_Static_assert(sizeof(struct smx_slot_header) == 16, "a slot header is 16 bytes");

/* Payload bytes that share the slot's first cache line (the one the receiver polls) with
 * its header. Senders write the payload beyond them first and this line last. */
#define SMX_SLOT_FIRST_LINE_ROOM (SMX_CACHE_LINE - sizeof(struct smx_slot_header))

struct smx_ring {
    uint32_t slots;     /* number of slots, a power of two */
    uint32_t slot_size; /* bytes per slot, header included, a multiple of the cache line */
    uint8_t pad0[SMX_CACHE_LINE - 8];
    /* Messages the receiver is done with: written by the receiver only, read by the
     * sender only when its private count says the ring is full. Its own cache line, so
     * the receiver's stores stay local until the sender actually looks. */
    uint64_t consumed;
    uint8_t pad1[SMX_CACHE_LINE - 8];
};

/* Bytes of one slot holding fragments of frag_size bytes: header and payload, in whole
 * cache lines. */
static inline uint64_t smx_slot_bytes(uint64_t frag_size)
{
    return (sizeof(struct smx_slot_header) + frag_size + SMX_CACHE_LINE - 1)
           & ~(uint64_t) (SMX_CACHE_LINE - 1);
}

struct smx_segment_header {
    uint64_t magic;
    uint32_t num_local;
    uint32_t ring_bytes; /* one ring, header and slots */
    uint8_t pad0[SMX_CACHE_LINE - 16];
    /* Peers that have mapped this segment; the one that completes the count unlinks the
     * file, so nothing of ours stays in /dev/shm once the job is wired up. */
    uint32_t attached;
    uint8_t pad1[SMX_CACHE_LINE - 4];
    /* Node-wide count of large transfers in flight: used in local rank 0's segment only,
     * every process of the job updates that one (load awareness, btl_smx_get.c). */
    uint32_t transfers_in_flight;
    uint8_t pad2[SMX_CACHE_LINE - 4];
    /* What a single copy costs here, in memcpys, as local rank 0 measured it at init
     * (btl_smx_policy.c): one measurement per node, the same decisions everywhere.
     * cost_measured 0: local rank 0 did not measure (nothing it runs depends on it). */
    uint32_t cost_measured;
    uint32_t pad3;
    double single_copy_cost;
    uint8_t pad4[SMX_CACHE_LINE - 16];
};

/* Payload of SMX_SLOT_GET_REQ. */
struct smx_get_request {
    uint64_t op;             /* the requester's operation, returned in every piece */
    uint64_t remote_address; /* in the address space of the process that serves it */
    uint64_t size;
    uint64_t destination;    /* the requester's buffer, for a server that pushes it whole */
};

/* Header of the payload of SMX_SLOT_GET_DATA; the data follows, on a cache-line boundary
 * of the slot (slot header + this = 64 bytes), where copies into and out of it run
 * fastest. */
#define SMX_PIECE_PUSHED UINT64_MAX /* offset of a piece saying: all of it was pushed */
struct smx_get_piece {
    uint64_t op;
    uint64_t offset;
    uint8_t pad[SMX_CACHE_LINE - 16 - 16];
};
_Static_assert(16 + sizeof(struct smx_get_piece) == SMX_CACHE_LINE,
               "a piece's data starts a cache line");

#endif /* MCA_BTL_SMX_TYPES_H */
