/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: layouts of what lives in shared memory. Everything here is read by another
 * process, so fields have fixed sizes and the hot ones sit alone on a cache line.
 *
 * A process's segment (a sparse file: a page takes memory only once written):
 *   struct smx_segment_header   my receive queue's indices,
 *                               the names of the processes of other jobs writing to me
 *   struct smx_queue_entry[q]   my receive queue: every local sender may add to it
 *   chunk area                  the buffers of my messages in flight (struct smx_chunk +
 *                               payload), carved as I need them and never given back,
 *                               within btl_smx_budget_kb
 *   ring area                   the rings I keep to the peers I send to most
 *                               (struct smx_pair_ring + lines), carved as made
 * So memory grows with the processes (one queue each) and with the messages in flight,
 * not with the pairs of processes.
 */
#ifndef MCA_BTL_SMX_TYPES_H
#define MCA_BTL_SMX_TYPES_H

#include <stdint.h>

#define SMX_CACHE_LINE 64
#define SMX_SEGMENT_MAGIC 0x736d7838717567ull /* bumped with every layout change */

/* What a message carries. */
enum smx_kind {
    SMX_KIND_AM = 0,  /* an upper-layer fragment, dispatched by its tag */
    SMX_KIND_GET_REQ, /* "send me this range of your memory" (emulated get, btl_smx_get.c) */
    SMX_KIND_GET_DATA, /* a piece of that range */
    SMX_KIND_RING,    /* "from now on, read my messages from this ring" (struct smx_ring_offer) */
    SMX_KIND_SKIP,    /* pair ring only: the lines up to the ring's end are unused */
    SMX_KIND_REF,     /* pair ring only: the message is in a chunk (struct smx_chunk_ref) */
    SMX_KIND_MULTI,   /* an upper-layer fragment larger than a chunk, in several (struct
                         smx_chunk_list), dispatched by its tag */
    SMX_KIND_WANT,    /* "send me your messages this way": a 32-bit word (btl_smx_choice.h) */
    SMX_KIND_IN_PLACE, /* an upper-layer fragment whose data stays in the sender's memory, for
                          the receiver to copy through its mapping (struct smx_in_place) */
};

/*
 * The receive queue: a bounded array of entries that any local sender claims (a
 * compare-and-swap on tail, only while there is room, so a sender never waits inside
 * the queue) and fills, then hands over by storing seq = index + 1 with release order.
 * Its owner reads entries in order and publishes head as it goes. An entry names a
 * chunk in the sender's segment; the owner marks the chunk done once it is through with
 * it, and the sender then reuses it.
 */
struct smx_queue_entry {
    uint64_t seq;   /* index + 1 once filled */
    uint64_t chunk; /* SMX_CHUNK_ID(sender's slot, offset in its segment) */
};
/* A sender's slot in a receiver's queue: its local rank if both are of one job; for a
 * process of another job on the node (MPI_Comm_spawn, connect/accept), the receiver's
 * num_local + the guest slot it claimed in the receiver's header (guest_name). */
#define SMX_CHUNK_ID(rank, offset) (((uint64_t) (rank) << 40) | (uint64_t) (offset))
#define SMX_CHUNK_RANK(id) ((uint32_t) ((id) >> 40))
#define SMX_CHUNK_OFFSET(id) ((id) & ((UINT64_C(1) << 40) - 1))

/* A message buffer in its sender's segment, on a cache-line boundary; the payload
 * follows the 16-byte header, so that a get's piece (48 bytes of header of its own)
 * carries its data from the second line on, where copies run fastest. */
struct smx_chunk {
    uint32_t len;  /* payload bytes */
    uint8_t tag;   /* upper-layer tag (SMX_KIND_AM) */
    uint8_t kind;  /* enum smx_kind */
    uint16_t pad0;
    uint32_t done; /* through a queue: set to 1 (release) by the receiver once through */
    uint32_t stamp; /* the sender's clock when it took the message (btl_smx_policy.h); 0: none */
};
_Static_assert(sizeof(struct smx_chunk) == 16, "a chunk header is 16 bytes");

/*
 * A pair ring: what a sender keeps for a peer it sends to often (btl/sm's fast boxes; the
 * per-pair buffers of Chai et al., "Designing High Performance and Scalable MPI
 * Intra-node Communication Support for Clusters"), in the sender's segment. One writer,
 * one reader, no read-modify-write atomics. Messages are records of whole 64-byte lines:
 * a 16-byte header and the payload. The writer fills a record, then stores the record's seq with
 * release order: its first line's index + 1, XORed with the ring's key (a random 64-bit
 * number with the top bit set, chosen when the ring is made and given to the reader only
 * in the offer). The reader polls the one line where the next record starts, delivers,
 * and publishes how many lines it is through with; the writer reads that count only when
 * the ring looks full. Where the next record starts, an earlier lap may have left
 * payload: the key is what keeps it from being taken for a header (it would have to hold
 * that exact 64-bit value), without a store to a second line per message (a zeroed guard
 * line after each record). A record never wraps: a
 * SKIP record fills the lines up to the end first. Its nlines may cover more than its
 * payload (alignment, and the gap after a larger one: btl_smx_fifo.h).
 */
struct smx_pair_ring {
    uint32_t lines; /* a power of two */
    uint8_t pad0[SMX_CACHE_LINE - 4];
    uint64_t consumed; /* lines the reader is through with: written by the reader only */
    uint8_t pad1[SMX_CACHE_LINE - 8];
};

struct smx_record {
    uint64_t seq;    /* (index of the record's first line + 1) ^ key, written last */
    uint32_t len;    /* payload bytes after this header */
    uint8_t tag;     /* upper-layer tag (SMX_KIND_AM) */
    uint8_t kind;    /* enum smx_kind */
    uint16_t nlines; /* lines the record spans */
};
_Static_assert(sizeof(struct smx_record) == 16, "a record header is 16 bytes");

/* Payload bytes that share a record's first line (the one the reader polls) with its
 * header. A fragment posted from btl_send fills the payload beyond them first and this
 * line last (mca_btl_smx_try_post); btl_sendi writes the payload, then the header
 * (btl_smx_sendi.c). */
#define SMX_FIRST_LINE_ROOM (SMX_CACHE_LINE - sizeof(struct smx_record))

/* SMX_KIND_REF payload: where the message is (the payload of a chunk of the writer's
 * segment), and its length and kind (the record carries its tag). The chunk is the
 * writer's again once the reader has consumed the record. */
struct smx_chunk_ref {
    uint64_t offset;
    uint32_t len;
    uint32_t stamp; /* as a chunk's (struct smx_chunk) */
    uint8_t kind;
    uint8_t pad[7];
};

/* SMX_KIND_MULTI payload: the chunks of the writer's segment that hold one message, in
 * order (a message above a fragment, sent eagerly to a late receiver: btl_smx_skew.c).
 * They come back with the record or the chunk that carries this list. */
#define SMX_MULTI_MAX 16 /* chunks; ob1 takes up to MCA_BTL_DES_MAX_SEGMENTS (16) */
struct smx_chunk_part {
    uint64_t offset; /* of the payload, in the writer's segment */
    uint32_t len;
    uint32_t pad;
};
struct smx_chunk_list {
    uint32_t count;
    uint32_t pad;
    struct smx_chunk_part part[];
};

/* SMX_KIND_RING payload, sent through the queue: where the ring is (writer's segment). */
struct smx_ring_offer {
    uint64_t offset;
    uint64_t key;
    uint32_t lines;
    uint32_t pad;
};

/* Processes of other jobs that may write to my queue (SMX_CHUNK_ID's slot). */
#define SMX_GUESTS_MAX 4096

struct smx_segment_header {
    uint64_t magic;
    uint32_t num_local;
    uint32_t queue_entries; /* a power of two */
    uint64_t area_offset;   /* where the chunk area starts */
    uint64_t rings_offset;  /* where the ring area starts */
    uint64_t size;          /* bytes of the whole segment */
    uint8_t pad0[SMX_CACHE_LINE - 40];
    /* Peers that have mapped this segment; the one that completes the count unlinks the
     * file, so nothing of ours stays in /dev/shm once the job is wired up. */
    uint32_t attached;
    uint8_t pad1[SMX_CACHE_LINE - 4];
    /* My receive queue: the next entry I read (written by me), the next one a sender
     * claims (senders' compare-and-swap). */
    uint64_t queue_head;
    uint8_t pad5[SMX_CACHE_LINE - 8];
    uint64_t queue_tail;
    uint8_t pad6[SMX_CACHE_LINE - 8];
    /* Processes of other jobs that write to me: each claims the next slot (fetch-and-add
     * on 'guests') and stores its process name there (opal_process_name_t's 64 bits,
     * release) before its first message names the slot; I map its segment then. */
    uint32_t guests;
    uint8_t pad7[SMX_CACHE_LINE - 4];
    uint64_t guest_name[SMX_GUESTS_MAX];
    /* The queue starts on a page of its own: its owner reserves its pages and the first
     * one of the header, not the guests' (btl_smx_segment.c); 4 KiB of queue entries then
     * take one page, not two. */
    uint8_t pad8[4096 - 5 * SMX_CACHE_LINE];
};
_Static_assert(0 == sizeof(struct smx_segment_header) % 4096,
               "the receive queue starts on a page boundary");

/* Payload of SMX_KIND_IN_PLACE: this, then the upper layer's header. The data: 'len' bytes
 * at 'addr' of the sender's address space, which the receiver maps through the smsc
 * component (MCA_SMSC_FEATURE_CAN_MAP) and hands the upper layer as a second segment; the
 * sender's fragment completes once the receiver is past the record (a pair ring's only). */
struct smx_in_place {
    uint64_t addr;
    uint64_t len;
    uint32_t stamp; /* the sender's clock (btl_smx_policy.h); 0: not timed */
    uint32_t pad;
};

/* Payload of SMX_KIND_GET_REQ. */
struct smx_get_request {
    uint64_t op;             /* the requester's operation, returned in every piece */
    uint64_t remote_address; /* in the address space of the process that serves it */
    uint64_t size;
};

/* Header of the payload of SMX_KIND_GET_DATA; the data follows. */
/* 'op' of a piece its sender sent before any get asked for it (btl_smx_get.c, "pushed
 * ahead"): this bit and the sender's number for the push, not the requester's op. */
#define SMX_PUSH_TOKEN (UINT64_C(1) << 63)
struct smx_get_piece {
    uint64_t op;
    uint64_t offset;
    uint64_t total; /* a pushed range's size (pieces of a get: unused) */
    uint8_t pad[SMX_CACHE_LINE - 16 - 24];
};
_Static_assert(16 + sizeof(struct smx_get_piece) == SMX_CACHE_LINE,
               "a piece's data starts a cache line of a record or a chunk");

#endif /* MCA_BTL_SMX_TYPES_H */
