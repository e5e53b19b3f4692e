/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: Open MPI shared-memory BTL with a topology-aware eager/rendezvous switch.
 *
 * Each process owns one shared-memory segment holding, for every local sender, a
 * single-producer / single-consumer ring of fixed-size slots (btl_smx_fifo.h). A sender
 * copies a fragment into a free slot of its ring in the receiver's segment and raises the
 * slot's flag; the receiver polls its rings, hands the payload to the upper layer and
 * lowers the flag.
 *
 * Peers are sorted into locality classes (btl_smx_locality.h); the component creates one
 * BTL module per class that can occur here, each reaching only the peers of its class and
 * carrying that class's eager and rendezvous limits, which is how ob1 (reading limits
 * from the module) honours per-peer thresholds. Large contiguous messages reach btl_get,
 * which picks single copy (SMSC) or a pipelined double copy through the rings by size,
 * class and node load (btl_smx_get.c). README.md has the whole design.
 */
#ifndef MCA_BTL_SMX_H
#define MCA_BTL_SMX_H

#include "opal_config.h"

#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/threads/mutex.h"

#include "btl_smx_locality.h"
#include "btl_smx_frag.h"

BEGIN_C_DECLS

struct smx_ring;

/* Thresholds of one locality class, as registered (signed, so that a negative value is
 * seen and refused rather than wrapped). */
struct smx_class_limits {
    int64_t eager_limit;      /* btl_smx_eager_limit_<class> */
    int64_t rndv_eager_limit; /* btl_smx_rndv_eager_limit_<class> */
    int64_t single_copy_min;  /* btl_smx_single_copy_min_<class>; 0: never single copy */
};

/* One module per locality class. */
struct mca_btl_smx_module_t {
    mca_btl_base_module_t super;
    int cls; /* enum smx_locality_class */
};
typedef struct mca_btl_smx_module_t mca_btl_smx_module_t;

/* What ob1 reads from the module at each send (pml_ob1_sendreq.h): its eager limit, and
 * the RDMA pipeline lengths, which follow it (the pipeline itself is off). */
static inline void mca_btl_smx_module_set_eager_limit(mca_btl_smx_module_t *module, size_t limit)
{
    module->super.btl_eager_limit = limit;
    module->super.btl_rdma_pipeline_send_length = limit;
    module->super.btl_rdma_pipeline_frag_size = limit;
}

struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    mca_btl_smx_module_t *module; /* the module of this peer's class: the only one reaching it */
    int cls;
    opal_proc_t *proc;
    int peer_local_rank;
    void *peer_segment; /* the peer's segment, mapped here */
    size_t peer_segment_size;
    struct smx_ring *out;  /* my ring in the peer's segment */
    uint64_t out_head;     /* next message I write (only I touch it) */
    uint64_t out_seen;     /* the peer's 'consumed' as I last read it */
    struct smx_ring *in;   /* the peer's ring in my segment */
    uint64_t in_tail;      /* next message I read (only I touch it) */
    opal_list_t pending;   /* fragments waiting for a free slot, in send order */
    opal_list_t serving;   /* the peer's double-copy gets I am feeding (btl_smx_get.c) */
    int pulling;           /* my double-copy gets from this peer not yet complete */
    struct mca_smsc_endpoint_t *smsc_endpoint;
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_smx_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_smx_endpoint_t);

struct mca_btl_smx_component_t {
    mca_btl_base_component_3_0_0_t super;
    int verbose; /* btl_smx_verbose */
    int output;  /* opal_output stream at that verbosity */
    int ring_slots;      /* btl_smx_ring_slots */
    int segment_max_mb;  /* btl_smx_segment_max_mb */
    int slots;           /* slots per ring in my segment: ring_slots, or fewer on a full node */
    bool slots_fixed;    /* btl_smx_ring_slots set by the user: slots stays ring_slots */
    int frag_size;
    int max_frags; /* btl_smx_max_frags */
    struct smx_class_limits limits[SMX_CLASS_COUNT];
    int64_t single_copy_min_busy; /* btl_smx_single_copy_min_busy */
    int busy_transfers;           /* btl_smx_busy_transfers */
    int busy_ranks;               /* btl_smx_busy_ranks */
    int64_t eager_limit_busy;     /* btl_smx_eager_limit_busy */
    bool crowded;                 /* more than busy_ranks processes here: busy from the start */
    bool single_copy_oversubscribed; /* btl_smx_single_copy_oversubscribed */
    int hw_threads;               /* hardware threads this job may use here; 0: unknown */
    bool oversubscribed;          /* more processes here than hw_threads (and the rule on):
                                     single copy always */
    bool exchange_push;           /* btl_smx_exchange_push */
    bool can_push;                /* the selected smsc can copy into a peer without registration */
    double single_copy_cost_max;  /* btl_smx_single_copy_cost_max */
    double single_copy_cost;      /* measured at the first add_procs; < 0: not measured */
    bool single_copy_cost_known;  /* the measurement ran (or was not needed) */
    bool busy_single_copy;        /* a busy node lowers the single-copy threshold (unless
                                     single copy measured too dear) */
    int64_t eager_limit_window;   /* btl_smx_eager_limit_window */
    int64_t single_copy_window_max; /* btl_smx_single_copy_window_max; 0: no window */
    double single_copy_window_cost_max; /* btl_smx_single_copy_window_cost_max */
    bool window_open;             /* single copy measured cheap enough for the window: every
                                     rendezvous up to single_copy_window_max by single copy */

    char segment_name[64]; /* /dev/shm file of my segment until every peer has mapped it */
    void *segment;
    size_t segment_size;
    int local_rank, num_local;
    mca_btl_smx_endpoint_t **peers; /* by local rank, shared by all modules */
    uint32_t *transfers_in_flight;  /* in local rank 0's segment once attached */
    void *my_cpuset;                /* hwloc_bitmap_t of my binding */

    mca_btl_smx_module_t *modules[SMX_CLASS_COUNT]; /* NULL: class absent here */
    int num_modules, modules_finalized;
    bool progress_registered;

    /* What this process's transfers did: MPI_T performance variables (btl_smx_<name>),
     * printed at finalize with btl_smx_verbose >= 1. Raised with relaxed atomics. */
    struct {
        unsigned long long gets_single_copy; /* rendezvous data pulled by one copy (SMSC) */
        unsigned long long gets_double_copy; /* ... through the rings */
        unsigned long long exchange_pushes;  /* peers' gets served by one copy into them */
        unsigned long long sends_queued;     /* sends that met a full ring (or a queue) */
        unsigned long long frags_peak;       /* most descriptors out at once (max_frags) */
    } stats;

    opal_list_t completed; /* sent fragments whose callback is due */
    mca_btl_smx_frag_t *free_frags;       /* frag_size buffers */
    mca_btl_smx_frag_t *free_small_frags; /* mca_btl_smx_small_frag_bytes() buffers */
    int frags_out; /* large fragments handed to the upper layer and not yet back (max_frags) */
    opal_mutex_t lock;      /* fragments, lists, ring heads: for MPI_THREAD_MULTIPLE */
    opal_mutex_t poll_lock; /* one reader per ring when threads are in use */
};
typedef struct mca_btl_smx_component_t mca_btl_smx_component_t;

OPAL_DECLSPEC extern mca_btl_smx_component_t mca_btl_smx_component;
extern mca_btl_base_module_t mca_btl_smx_module_template;

/* Memory another process wrote into this one (an exchange push, btl_smx_get.c) is, to
 * valgrind's memcheck, never written: without this, the application's first read of data
 * it received that way is reported as a read of uninitialised memory. A few instructions
 * outside valgrind; nothing without valgrind's header (configure reports it). */
#ifdef SMX_HAVE_MEMCHECK_H
#    include <valgrind/memcheck.h>
#    define SMX_WRITTEN_BY_PEER(addr, len) ((void) VALGRIND_MAKE_MEM_DEFINED((addr), (len)))
#else
#    define SMX_WRITTEN_BY_PEER(addr, len) ((void) 0)
#endif

static inline void mca_btl_smx_count(unsigned long long *counter)
{
    (void) __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* btl_smx_module.c */
int mca_btl_smx_segment_create(void);
int mca_btl_smx_segment_publish(void);
void mca_btl_smx_segment_destroy(void);
int mca_btl_smx_progress(void);

/* btl_smx_send.c: the one place a fragment enters a ring */
int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag);
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag);
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag);

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
/* The single-copy threshold of this class while the node is busy (0: never). */
int64_t mca_btl_smx_single_copy_min_busy(int cls);
/* The single-copy threshold a transfer of this class sees now (0: never). */
size_t mca_btl_smx_single_copy_min_now(int cls, uint32_t *in_flight_out);
/* What one copy through the selected smsc component costs against a memcpy, measured on
 * this process's own memory; < 0 if it could not be measured. */
double mca_btl_smx_measure_single_copy_cost(void);

END_C_DECLS

#endif /* MCA_BTL_SMX_H */
