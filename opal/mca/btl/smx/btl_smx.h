/*
 * btl/smx: Open MPI shared-memory BTL.
 *
 * Each process owns one shared-memory segment holding, for every local sender, a
 * single-producer / single-consumer ring of fixed-size slots (btl_smx_fifo.h). A sender
 * copies a fragment into a free slot of its ring in the receiver's segment and raises
 * the slot's flag; the receiver polls its rings, hands the payload to the upper layer
 * and lowers the flag. One writer and one reader per ring: no locks, no atomics beyond
 * ordered loads and stores (paper 004). Large messages go through the selected SMSC
 * component (btl_get / btl_put) when there is one, else through the rings in
 * max_send_size pieces (ob1's send pipeline).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_BTL_SMX_H
#define MCA_BTL_SMX_H

#include "opal_config.h"

#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/threads/mutex.h"

BEGIN_C_DECLS

struct smx_ring;
struct smx_segment_header;

/* A fragment: a descriptor and the local buffer ob1 fills before btl_send. */
struct mca_btl_smx_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segment;
    struct mca_btl_base_endpoint_t *endpoint;
    mca_btl_base_tag_t tag;
    struct mca_btl_smx_frag_t *next_free;
    unsigned char data[]; /* max_send_size bytes */
};
typedef struct mca_btl_smx_frag_t mca_btl_smx_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_smx_frag_t);

struct mca_btl_base_endpoint_t {
    opal_list_item_t super;          /* in the component's list of endpoints */
    opal_proc_t *proc;
    int peer_local_rank;
    void *peer_segment;              /* the peer's segment, mapped here */
    size_t peer_segment_size;
    struct smx_ring *out;            /* my ring in the peer's segment */
    uint32_t out_head;               /* next slot I write (only I touch it) */
    struct smx_ring *in;             /* the peer's ring in my segment */
    uint32_t in_tail;                /* next slot I read (only I touch it) */
    opal_list_t pending;             /* fragments waiting for a free slot */
    struct mca_smsc_endpoint_t *smsc_endpoint;
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_smx_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_smx_endpoint_t);

struct mca_btl_smx_component_t {
    mca_btl_base_component_3_0_0_t super;
    int verbose;            /* btl_smx_verbose */
    int output;             /* opal_output stream at that verbosity */
    int ring_slots;         /* btl_smx_ring_slots */
    int frag_size;          /* btl_smx_frag_size: payload of one slot */

    char segment_name[256]; /* /dev/shm file of my segment */
    void *segment;
    size_t segment_size;
    int local_rank, num_local;
    mca_btl_smx_endpoint_t **peers; /* by local rank */
    opal_list_t completed;  /* sent fragments whose callback is due */
    mca_btl_smx_frag_t *free_frags;
    opal_mutex_t lock;      /* fragments, lists, posting: for MPI_THREAD_MULTIPLE */
    opal_mutex_t poll_lock; /* one reader per ring when threads are in use */
};
typedef struct mca_btl_smx_component_t mca_btl_smx_component_t;

OPAL_DECLSPEC extern mca_btl_smx_component_t mca_btl_smx_component;
extern mca_btl_base_module_t mca_btl_smx_module;

/* btl_smx_module.c */
int mca_btl_smx_segment_create(void);
int mca_btl_smx_progress(void);
mca_btl_smx_frag_t *mca_btl_smx_frag_alloc(mca_btl_smx_endpoint_t *endpoint);
void mca_btl_smx_frag_release(mca_btl_smx_frag_t *frag);

/* btl_smx_send.c */
int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag);
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag);

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

END_C_DECLS

#endif /* MCA_BTL_SMX_H */
