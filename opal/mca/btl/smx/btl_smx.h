/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: Open MPI shared-memory BTL with a topology-aware eager/rendezvous switch.
 *
 * Each process owns one shared-memory segment holding its receive queue, shared by all
 * its local senders, and the buffers of the messages it sends (btl_smx_types.h). A
 * sender copies a message into a chunk of its own segment and hands it over through the
 * receiver's queue; to a peer it sends to often, it writes through a ring of its own
 * instead, which only that peer reads (btl_smx_fifo.h). The receiver polls its queue and
 * the rings of its frequent senders, hands the payload to the upper layer and marks the
 * chunk or the ring's lines done.
 *
 * Peers are sorted into locality classes (btl_smx_locality.h); the component creates one
 * BTL module per class that can occur here, each reaching only the peers of its class and
 * carrying that class's eager and rendezvous limits, which is how ob1 (reading limits
 * from the module) honours per-peer thresholds. Large contiguous messages reach btl_get,
 * which pulls them by single copy (SMSC) or by a pipelined double copy through shared
 * memory (btl_smx_get.c). Which way a peer's messages go is measured per size range
 * (btl_smx_choice.h, btl_smx_policy.h). docs/design.md has the whole design, and
 * docs/using-smx.md ("How btl/smx decides") the switch.
 */
#ifndef MCA_BTL_SMX_H
#define MCA_BTL_SMX_H

#include "opal_config.h"

#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/shmem/shmem.h"
#include "opal/mca/threads/mutex.h"

#include "btl_smx_choice.h"
#include "btl_smx_store.h"
#include "btl_smx_locality.h"
#include "btl_smx_frag.h"

#include <string.h>

BEGIN_C_DECLS

struct smx_pair_ring;
struct smx_chunk_slot;
struct smx_record;
/* Chunk sizes: small (ob1 headers, get requests), eager, whole fragments. */
#define SMX_CHUNK_CLASSES 3

/* A fragment: 32 KiB of data plus room for ob1's headers, so that a 32 KiB message still
 * fits one eager fragment. */
#define SMX_FRAG_DEFAULT (32 * 1024 + 2048)
/* The smallest eager limit accepted: ob1 refuses a BTL whose eager limit cannot hold its
 * largest header (80 bytes in 5.0.x), with room for a later version's. */
#define SMX_EAGER_LIMIT_MIN 128
/* Named values of integer parameters, none a count could be taken for (btl_smx_params.c
 * turns a user's 0 = never or auto into these); push_max's off is a count: 0. */
#define SMX_MEASURED (-1)   /* eager_limit_<class>, single_copy_min_<class>: measured */
#define SMX_NEVER (-2)      /* single_copy_min_<class>: no single copy */
#define SMX_AUTO (-3)       /* budget_kb, pair_ring_size: sized by btl/smx */
/* btl_smx_nontemporal: how payloads are written into shared memory (btl_smx_store.h). */
enum smx_nontemporal_mode {
    SMX_NT_AUTO = 0, /* per peer, whichever the sender measures cheaper */
    SMX_NT_NEVER,    /* memcpy */
    SMX_NT_ALWAYS,   /* non-temporal stores from SMX_STORE_MIN bytes */
};
/* btl_smx_skew: what a late receiver changes (btl_smx_skew.c). */
enum smx_skew_mode {
    SMX_SKEW_OFF = 0, /* nothing */
    SMX_SKEW_ON,      /* receivers found late get their larger messages eagerly */
    SMX_SKEW_ALWAYS,  /* every receiver taken for late (for tests) */
};

/* One module per locality class. */
struct mca_btl_smx_module_t {
    mca_btl_base_module_t super;
    int cls;         /* enum smx_locality_class */
};
typedef struct mca_btl_smx_module_t mca_btl_smx_module_t;

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
    mca_btl_smx_module_t *module; /* the module of this peer's class: the only one reaching it */
    int cls;
    opal_proc_t *proc;
    int peer_local_rank;  /* SMX_GUEST: a process of another job */
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

struct mca_btl_smx_component_t {
    mca_btl_base_component_3_0_0_t super;
    /* parameters (btl_smx_params.c) */
    int budget_kb, frag_size, max_frags;
    int pair_ring_size, pair_rings_max, pair_ring_after;
    int eager_limit[SMX_CLASS_COUNT];     /* bytes; SMX_MEASURED */
    int single_copy_min[SMX_CLASS_COUNT]; /* bytes; SMX_NEVER, SMX_MEASURED */
    char *policy_text;                    /* btl_smx_policy (read-only, for MPI_T) */
    int skew;                             /* enum smx_skew_mode */
    int nontemporal;                      /* enum smx_nontemporal_mode */
    int skew_late_us;                     /* a get waiting longer for me: I am late */
    int push_max;                         /* rendezvous pushed ahead up to (bytes); 0: off */
    size_t smsc_data_size;                /* the smsc component's registration data; 0: none */
    uint64_t push_seq;                    /* pushes numbered (atomic) */
    int skew_eager_limit;                 /* eager limit (bytes) to a late receiver */

    /* the node, as init found it */
    uint64_t area_max;  /* bytes of my chunk area: btl_smx_budget_kb, or as 'auto' says */
    bool area_fixed;    /* btl_smx_budget_kb set by the user: area_max stays */
    uint32_t ring_size; /* bytes of my first SMX_RINGS_LARGE rings: btl_smx_pair_ring_size, */
    uint32_t ring_size_rest; /* ... and of later ones (both as 'auto' says if not set) */
    int hw_threads;     /* hardware threads this job may use here; 0: unknown */
    unsigned long long l2_bytes; /* the largest L2 cache here; 0: unknown */
    size_t skew_eager_max;  /* the eager limit to late receivers here; 0: none (skew.c) */
    uint64_t skew_late_ns;  /* btl_smx_skew_late_us */
    int skew_late_count;    /* senders I am late to */
    uint64_t skew_idle;     /* while any: progress calls that found no message */
    mca_btl_smx_endpoint_t *delivering; /* whose message the upper layer is handed now */
    unsigned char *gather;  /* a message in several chunks, gathered (one poller: poll_lock) */
    size_t gather_size;
    int big_out;            /* descriptors of messages above a fragment out (component lock) */

    char *backing_directory; /* btl_smx_backing_directory */
    opal_shmem_ds_t seg_ds;  /* my segment (its file exists until every peer mapped it) */
    int segment_fd;          /* kept open: other jobs map it as /proc/<pid>/fd/<fd> */
    void *segment;
    /* my queue's next entry and its index mask, kept here beside the segment's address:
     * an idle poll reads this line and the entry's, not two lines of the header (the
     * header's queue_head, mine alone, is written for the senders) */
    uint64_t queue_head, queue_mask;
    size_t segment_size;
    int local_rank, num_local;
    /* by local rank, shared by all modules; then the processes of other jobs I reached */
    mca_btl_smx_endpoint_t **peers;
    int num_peers;                  /* num_local + those */
    mca_btl_smx_endpoint_t **guests; /* by the slot they claimed in my header */
    mca_btl_smx_endpoint_t **hot;   /* peers whose pair ring to me I read */
    int num_hot;
    mca_btl_smx_endpoint_t **ringed; /* peers I write to through a ring of mine */
    int num_ringed;                  /* (component lock) */
    mca_btl_smx_endpoint_t **active; /* peers with fragments pending or gets to serve */
    int num_active;
    uint64_t area_used;              /* bytes of my chunk area carved so far */
    uint64_t area_ready;             /* my segment up to here is reserved whole (init) */
    bool area_full;                  /* a reservation failed: no more pages taken */
    uint64_t area_carved[SMX_CHUNK_CLASSES]; /* ... for each size (btl_smx_chunks.c) */
    uint64_t rings_used;             /* bytes of my ring area carved so far */
    int pair_rings;                  /* pair rings I made */
    struct smx_chunk_slot *chunk_free[SMX_CHUNK_CLASSES]; /* my chunks ready for use, */
    struct smx_chunk_slot *chunk_free_last[SMX_CHUNK_CLASSES]; /* oldest first */
    struct smx_chunk_slot *chunk_busy[SMX_CHUNK_CLASSES]; /* ... sent through queues */
    int chunks_busy[SMX_CHUNK_CLASSES];                   /* ... out, however sent */
    void *my_cpuset;                /* hwloc_bitmap_t of my binding */

    mca_btl_smx_module_t *modules[SMX_CLASS_COUNT]; /* NULL: class absent here */
    int num_modules, modules_finalized;
    bool progress_registered;
    bool smsc_forbidden; /* cma selected where the kernel forbids it: no single copy */

    /* What this process's transfers did: MPI_T performance variables (btl_smx_<name>),
     * printed at finalize at btl_base_verbose info. Raised with relaxed atomics. */
    struct {
        unsigned long long gets_single_copy; /* rendezvous data pulled by one copy (SMSC) */
        unsigned long long gets_double_copy; /* ... through the rings */
        unsigned long long pushes_ahead;     /* rendezvous copied before their get came */
        unsigned long long pushes_parked;    /* ... whose pieces came before my get */
        unsigned long long copy_switches;    /* a peer's size range changed its way */
        unsigned long long sends_queued;     /* sends that found no room and waited */
        unsigned long long pair_rings;       /* peers I write to through a pair ring */
        unsigned long long frags_peak;       /* most descriptors out at once (max_frags) */
        unsigned long long skew_late;        /* senders I found myself late to */
        unsigned long long skew_caught_up;   /* ... and then caught up with */
        unsigned long long skew_eager_sends; /* messages above a fragment sent eagerly */
        unsigned long long streamed_copies;  /* payloads written with non-temporal stores */
        unsigned long long store_switches;   /* a peer's way of writing changed */
    } stats;

    mca_btl_base_module_error_cb_fn_t error_cb; /* the upper layer's (btl_register_error) */
    /* sent fragments whose callback is due: a stack (by done_next), pushed without a lock
     * and taken whole by progress (mca_btl_smx_completed_push) */
    mca_btl_smx_frag_t *completed;
    opal_free_list_t frags;       /* frag_size buffers */
    opal_free_list_t small_frags; /* mca_btl_smx_small_frag_bytes() buffers */
    opal_free_list_t get_ops, serves; /* double-copy gets pulled and served (btl_smx_get.c) */
    int frags_out; /* large fragments handed to the upper layer and not yet back (max_frags) */
    opal_mutex_t lock;      /* what all peers share (at mca_btl_base_endpoint_t) */
    opal_mutex_t poll_lock; /* one reader of my queue and rings when threads are in use */
};
typedef struct mca_btl_smx_component_t mca_btl_smx_component_t;

/* The largest push a receiver takes (btl_smx_push_max is at most this). */
#define SMX_PUSH_MOST (64 * 1024 * 1024)

/* What btl/smx prints goes to the btl framework's stream (btl_base_verbose): component
 * for why it is not used, info for its policy and its counters at finalize, trace for
 * each peer's class. */
#define SMX_OUTPUT opal_btl_base_framework.framework_output

OPAL_DECLSPEC extern mca_btl_smx_component_t mca_btl_smx_component;
extern mca_btl_base_module_t mca_btl_smx_module_template;

static inline void mca_btl_smx_count(unsigned long long *counter)
{
    (void) __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* btl_smx_params.c */
int mca_btl_smx_params_register(void);
bool mca_btl_smx_params_valid(void);

/* What a process publishes of its segment (its btl's modex entry): the file descriptor
 * the process keeps open to it, which a process of another job opens through /proc once
 * the file is gone (-1: none); then the part in use of the descriptor a peer maps the
 * segment by (ds_size bytes: opal_shmem_sizeof_shmem_ds, the name without the rest of its
 * OPAL_PATH_MAX bytes), and its cpuset as a list, "" if unknown, NUL-terminated. About 100
 * bytes, where the whole descriptor took 4.2 KiB: every process of a node fetches every
 * other's entry at MPI_Init (N x N of them, through the PMIx server). */
struct smx_modex {
    int32_t fd;
    uint32_t ds_size;
    char data[];
};

/* btl_smx_segment.c: my segment; map every page of [addr, addr + len) now, writable or
 * for reading (not to fault them one by one during the first transfers); take the pages
 * of [offset, offset + len) of my segment from the file system and map them for writing
 * (0, or an errno: none taken). */
int mca_btl_smx_segment_create(void);
int mca_btl_smx_segment_publish(void);
void mca_btl_smx_segment_destroy(void);
void mca_btl_smx_prefault(void *addr, size_t len, bool write);
int mca_btl_smx_reserve(uint64_t offset, uint64_t len);
/* Say that 'bytes' could not be reserved at init (errno rc): btl/smx is not used. Bytes
 * of my segment reserved so far. */
void mca_btl_smx_reserve_refused(uint64_t bytes, int rc);
uint64_t mca_btl_smx_reserved_bytes(void);

/* btl_smx_endpoint.c: the local rank of a peer of this job on this node other than me,
 * SMX_GUEST for a process of another job on this node, SMX_NO_PEER if none; the endpoint of a
 * peer (local rank, or SMX_GUEST), attached on first sight, NULL if it cannot be reached;
 * the peer of another job that took slot k of my queue (NULL: none that can be
 * reached). */
#define SMX_GUEST (-2)
#define SMX_NO_PEER (-1)
int mca_btl_smx_local_rank_of(opal_proc_t *proc);
mca_btl_smx_endpoint_t *mca_btl_smx_endpoint_of(opal_proc_t *proc, int local_rank);
mca_btl_smx_endpoint_t *mca_btl_smx_guest(uint32_t k);

/* btl_smx_recv.c */
int mca_btl_smx_progress(void);

/* btl_smx_module.c */
void mca_btl_smx_fatal(mca_btl_smx_endpoint_t *ep, const char *what) __opal_attribute_noreturn__;

/* btl_smx_send.c: the one place a message enters shared memory */
struct smx_post {
    void *data;                  /* where the payload goes */
    uint32_t stamp;              /* the sender's clock, for the receiver (0: not timed) */
    struct smx_record *rec;      /* in my pair ring to the peer, or NULL */
    struct smx_chunk_slot *slot; /* a chunk of mine, or NULL */
    uint32_t skip;               /* ring lines skipped to its end first */
    uint32_t lines;              /* ring lines of the record */
};
/* Room for a message of 'len' payload bytes to ep (ep's lock held); false: none
 * now. Commit or abandon what it reserved. 'stream': one of many pieces, which go in
 * chunks even where a ring could hold them (more of them in flight at once). */
bool mca_btl_smx_post_begin(mca_btl_smx_endpoint_t *ep, size_t len, bool stream,
                            struct smx_post *p);
void mca_btl_smx_post_commit(mca_btl_smx_endpoint_t *ep, struct smx_post *p, size_t len,
                             uint8_t kind, uint8_t tag);
void mca_btl_smx_post_abandon(mca_btl_smx_endpoint_t *ep, struct smx_post *p);
/* Write a payload of n bytes for ep into shared memory (btl_smx_store.h): from
 * SMX_STORE_MIN bytes the way btl_smx_nontemporal and ep's measurements choose, below by
 * memcpy. Anything published after it sees its bytes (a streamed copy ends with a fence). */
void mca_btl_smx_copy_in_measured(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                  size_t n);
static inline void mca_btl_smx_copy_in(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                       size_t n)
{
    if (n < SMX_STORE_MIN || SMX_NT_NEVER == mca_btl_smx_component.nontemporal) {
        memcpy(to, from, n);
    } else {
        mca_btl_smx_copy_in_measured(ep, to, from, n);
    }
}
/* Chunks of mine that receivers are through with go back to use (takes the component
 * lock). */
void mca_btl_smx_chunks_reclaim(void);
void mca_btl_smx_chunks_fini(void);
/* The chunks my area must always have, their pages reserved at init (after
 * mca_btl_smx_skew_init: one of each size, and as many whole fragments as a message to a
 * late receiver takes), or the whole area where btl_smx_budget_kb is set: 0, or the errno
 * of the reservation that failed (btl/smx is then not used). */
int mca_btl_smx_chunks_start(void);
/* The smallest chunk area that holds enough of each size of message to stream. */
uint64_t mca_btl_smx_area_min(void);
/* 'auto' rings: the first SMX_RINGS_LARGE a process makes are 512 KiB, later ones 128 KiB
 * (mca_btl_smx_segment_create says why). */
#define SMX_RINGS_LARGE 4
/* Bytes of the first n pair rings I make, headers included. */
uint64_t mca_btl_smx_rings_bytes(int n);
/* ep (its lock held) has pending fragments or gets to serve: on the active list. */
void mca_btl_smx_activate(mca_btl_smx_endpoint_t *ep);
/* A posted fragment, for progress to run its callback: onto the component's stack of
 * completed fragments with a compare-and-swap, no lock. With the component's lock here,
 * and taken by progress on every call, MPI_THREAD_MULTIPLE threads slept on that lock
 * (futex waits in mca_btl_smx_send_internal and progress, 40-70 in a run of MPICH's
 * mt_ssendrecv) whenever the scheduler took the CPU from a thread holding it: threads
 * share cores there. Progress takes the whole stack at once, so no fragment pushed can
 * be taken from between (no ABA). */
static inline void mca_btl_smx_completed_push(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_frag_t *top = __atomic_load_n(&mca_btl_smx_component.completed, __ATOMIC_RELAXED);

    do {
        frag->done_next = top;
    } while (!__atomic_compare_exchange_n(&mca_btl_smx_component.completed, &top, frag, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}
/* frag is posted to ep (its lock held): its callback is due (mca_btl_smx_completed_push),
 * once its receiver has taken it where that matters (btl_smx_send.c says where). */
void mca_btl_smx_posted(mca_btl_smx_endpoint_t *ep, mca_btl_smx_frag_t *frag);
/* Send the message waiting for the peer's queue, if any (ep's lock held); true: none
 * waits any more. */
bool mca_btl_smx_unstall(mca_btl_smx_endpoint_t *ep);
int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag);
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag);
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag);

/* Post a message of header_size + payload_size bytes (the payload from the convertor; or,
 * with none, all of it at 'header') in several chunks (SMX_KIND_MULTI), all taken at once
 * or none (ep's lock held); false: no room now. */
bool mca_btl_smx_post_multi(mca_btl_smx_endpoint_t *ep, const void *header, size_t header_size,
                            struct opal_convertor_t *convertor, size_t payload_size,
                            mca_btl_base_tag_t tag);
/* Payload bytes of a whole-fragment chunk; how many of them my area may carve. */
size_t mca_btl_smx_chunk_room_max(void);
uint64_t mca_btl_smx_frag_chunks_max(void);

/* btl_smx_skew.c: a late receiver (docs/using-smx.md, "A late receiver") */
/* The eager limit to late receivers this area allows (init, after the segment). */
void mca_btl_smx_skew_init(void);
/* Receiver: a get from ep starts (now: its clock, ns), or ended. */
void mca_btl_smx_skew_get_start(mca_btl_smx_endpoint_t *ep, uint32_t stamp);
/* Receiver: a message from ep, a sender I am late to, is handed over. */
void mca_btl_smx_skew_heard(mca_btl_smx_endpoint_t *ep);

/* btl_smx_sendi.c */
int mca_btl_smx_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor);

/* btl_smx_get.c / btl_smx_put.c */
int mca_btl_smx_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                    void *cbcontext, void *cbdata);
int mca_btl_smx_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                    void *cbcontext, void *cbdata);
/* Called by progress for the internal slot kinds; and to feed the gets being served. */
void mca_btl_smx_get_request_arrived(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len);
void mca_btl_smx_get_piece_arrived(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len);
int mca_btl_smx_get_serve(mca_btl_smx_endpoint_t *ep);
int mca_btl_smx_get_serve_locked(mca_btl_smx_endpoint_t *ep); /* ep's lock held */
int mca_btl_smx_get_lists_init(void);
void mca_btl_smx_get_lists_fini(void);
/* Give back a serve item the endpoint still held (finalize). */
void mca_btl_smx_serve_drop(opal_list_item_t *serve);
/* The registration handle btl/smx hands ob1 (btl_register_mem), the bytes ob1 carries to
 * the peer in its rendezvous header: the push of the buffer, if any, and the smsc
 * component's own registration data where it needs one. */
struct mca_btl_base_registration_handle_t {
    uint64_t token; /* the push of this buffer (SMX_PUSH_TOKEN | n); 0: none */
    uint64_t base, size;
    uint32_t stamp; /* my clock as ob1 registered it for a rendezvous (btl_smx_policy.h) */
    uint32_t flags; /* SMX_HANDLE_* */
    unsigned char smsc[]; /* mca_smsc_base_registration_data_size() bytes, if it needs them */
};
/* No smsc registration: the reader maps the buffer (map_peer_region: the smsc component
 * can map its owner's memory, MCA_SMSC_FEATURE_CAN_MAP). */
#define SMX_HANDLE_MAPPED 1u
/* The handle's smsc data, for the smsc component's calls (NULL: none registered). */
static inline void *mca_btl_smx_smsc_data(struct mca_btl_base_registration_handle_t *handle)
{
    return NULL != handle && 0 != mca_btl_smx_component.smsc_data_size ? handle->smsc : NULL;
}
struct mca_btl_base_registration_handle_t *
mca_btl_smx_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *base, size_t size, uint32_t flags);
int mca_btl_smx_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);
/* Sender: ob1's rendezvous header for ep is on its way; copy the buffer it registered. */
void mca_btl_smx_push_start(mca_btl_smx_endpoint_t *ep);
/* Finalize: what a peer pushed that no get took. */
void mca_btl_smx_push_fini(mca_btl_smx_endpoint_t *ep);
END_C_DECLS

#endif /* MCA_BTL_SMX_H */
