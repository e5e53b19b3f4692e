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
 * (btl_smx_choice.h, btl_smx_policy.h). This header holds the component and its
 * constants, btl_smx_peer.h a peer; each .c file's functions are declared in the header
 * of its name. docs/design.md has the whole design and a table of the files, and
 * docs/using-smx.md ("How btl/smx decides") the switch.
 */
#ifndef MCA_BTL_SMX_H
#define MCA_BTL_SMX_H

#include "opal_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/shmem/shmem.h"
#include "opal/mca/threads/mutex.h"

#include "btl_smx_locality.h"
#include "btl_smx_peer.h"

BEGIN_C_DECLS

struct smx_chunk_slot;
struct mca_btl_smx_frag_t;

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
    int in_place_wanted;                  /* btl_smx_in_place: 1 on, 0 off */
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
    uint64_t chunk_cycle;   /* bytes of whole-fragment chunks written before one is again
                               (the policy sets it: btl_smx_policy.c, smx_footprint) */
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
    bool in_place;       /* the smsc component maps peers' memory: eager messages may stay in
                            their sender's buffer (SMX_KIND_IN_PLACE) */

    /* What this process's transfers did: MPI_T performance variables (btl_smx_<name>),
     * printed at finalize at btl_base_verbose info. Raised with relaxed atomics. */
    struct {
        unsigned long long gets_single_copy; /* rendezvous data pulled by one copy (SMSC) */
        unsigned long long gets_double_copy; /* ... in pieces through chunks */
        unsigned long long in_place;         /* eager messages copied from their sender's
                                                buffer through my mapping of it */
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
    struct mca_btl_smx_frag_t *completed;
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

END_C_DECLS

#endif /* MCA_BTL_SMX_H */
