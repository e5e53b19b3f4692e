/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: a peer as this process sees it (Open MPI's endpoint), as its writer and as its
 * reader. The functions that attach and find peers are in btl_smx_endpoint.h.
 */
#ifndef MCA_BTL_SMX_PEER_H
#define MCA_BTL_SMX_PEER_H

#include "opal_config.h"

#include "opal/class/opal_list.h"
#include "opal/mca/shmem/shmem.h"
#include "opal/mca/threads/mutex.h"
#include "opal/util/proc.h"

#include "btl_smx_choice.h"
#include "btl_smx_store.h"

#include <stdbool.h>
#include <stdint.h>

BEGIN_C_DECLS

struct mca_btl_smx_module_t;
struct mca_smsc_endpoint_t;
struct smx_pair_ring;
struct smx_chunk_slot;
struct smx_serve_t;

/* Locks (MPI_THREAD_MULTIPLE; no-ops otherwise). A peer's lock: what I keep as its
 * writer (queue_seen to out_lines, pending, serving, active, store) and my pushes, so
 * that threads sending to different peers do not wait for each other. The component's
 * lock: what all peers share (fragment counts, my chunk area and its lists, the chunks
 * my rings' records point to, the lists of active peers and of completed fragments, the
 * modules' limits). Where both are held the peer's is taken first; never a peer's under
 * the component's. A peer's reader state is the poller's (poll_lock). */
struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    opal_mutex_t lock;
    struct mca_btl_smx_module_t *module; /* its class's module: the only one reaching it */
    int cls;
    opal_proc_t *proc;
    int peer_local_rank;  /* -1: a process of another job */
    uint32_t slot_there;  /* my slot in its queue (SMX_CHUNK_ID, btl_smx_types.h) */
    void *peer_segment; /* the peer's segment, mapped here */
    opal_shmem_ds_t *peer_ds; /* opal_shmem's descriptor of it */
    uint64_t queue_seen;  /* the head of the peer's queue as I last read it */
    uint32_t queued;      /* messages I sent it through its queue */
    struct smx_chunk_slot *stalled; /* written, waiting for room in its queue */
    struct smx_pair_ring *out; /* my ring to the peer, in my segment; NULL: its queue */
    uint64_t out_head;     /* next line I write (only I touch it) */
    uint64_t out_seen;     /* the peer's 'consumed' as I last read it */
    uint64_t out_key;      /* my ring's key (btl_smx_types.h) */
    uint32_t out_lines;    /* its size */
    struct smx_pair_ring *in; /* the peer's ring to me, in its segment; NULL: none yet */
    uint64_t in_tail;      /* next line I read (only I touch it) */
    uint64_t in_key;       /* its ring's key and size, from its offer */
    uint32_t in_lines;
    int chunks_out;        /* my chunks holding messages to it, not yet back (component
                              lock; read without it as a hint) */
    struct smx_chunk_slot *ref_first, *ref_last; /* ... of my ring's records, in order
                                                    (component lock) */
    opal_list_t pending;   /* fragments waiting for room, in send order */
    opal_list_t serving;   /* the peer's double-copy gets I am feeding (btl_smx_get.c) */
    bool active;           /* on the component's list of peers with the two above to do
                              (the list: component lock) */
    int pulling;           /* my double-copy gets from this peer not yet complete */
    /* the way of its messages to me, as measured (btl_smx_choice.h; the poller's), and
     * the word it was last told */
    struct smx_choice choice;
    uint32_t want_sent;
    /* the way it wants my messages to it (its word), and how many of my next messages to
     * it are timed whatever (a try may be under way) */
    uint32_t want;
    uint32_t stamp_tick, stamp_all;
    struct smx_store store; /* how I write payloads to it: memcpy or streamed (measured) */
    /* skew (btl_smx_skew.c): as its receiver, */
    bool skew_late;        /* I am late to this sender (and told it so) */
    int skew_late_gets;    /* gets in a row that waited for me */
    uint64_t skew_idle_seen; /* while late: the component's skew_idle at its last message */
    int skew_waited;       /* ... its messages in a row I had waited for (none there) */
    /* pushed ahead (btl_smx_get.c): as the sender, the buffer ob1 registered for its next
     * rendezvous to this peer, copied to it from my next btl_send on; */
    uint64_t push_token;        /* SMX_PUSH_TOKEN | n until deregistered; 0: none */
    bool push_armed;            /* ... not yet started */
    struct smx_serve_t *push_serve; /* its serve (btl_smx_get.c), while armed */
    /* as the receiver, the peer's latest push (under push_in_lock, not the peer's lock:
     * the poller never waits for a sender's copies to that peer): */
    opal_mutex_t push_in_lock;
    uint64_t push_in;           /* its token; 0: none */
    size_t push_in_size, push_in_arrived;
    unsigned char *push_in_parked; /* its pieces that came before my get (malloc'd) */
    void *push_in_op;           /* the get waiting for the rest of them */
    struct mca_smsc_endpoint_t *smsc_endpoint;
    bool described; /* printed at btl_base_verbose trace */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_smx_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_smx_endpoint_t);

END_C_DECLS

#endif /* MCA_BTL_SMX_PEER_H */
