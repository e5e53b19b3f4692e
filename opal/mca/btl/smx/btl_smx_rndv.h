/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx rendezvous: what a get and a push share (btl_smx_get.c asks for a range,
 * btl_smx_push.c sends one ahead of the asking): the registration handle ob1 carries to
 * the peer, the receiver's operation and the sender's serve.
 */
#ifndef MCA_BTL_SMX_RNDV_H
#define MCA_BTL_SMX_RNDV_H

#include "btl_smx.h"

#include "opal/class/opal_free_list.h"

#include <stdbool.h>
#include <stdint.h>

BEGIN_C_DECLS

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

/* Receiver side of a double-copy get (an item of the component's get_ops list). */
struct smx_get_op {
    opal_free_list_item_t super;
    mca_btl_smx_endpoint_t *ep;
    unsigned char *local;
    size_t size, received;
    uint32_t stamp; /* the sender's clock as it sent the rendezvous (0: not measured) */
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
};
typedef struct smx_get_op smx_get_op_t;

/* Sender side: a range of my memory a peer asked for or I push (an item of the serves
 * list, queued on the endpoint's serving list). */
struct smx_serve_t {
    opal_free_list_item_t super;
    uint64_t op;
    const unsigned char *src;
    size_t size, sent;
};
typedef struct smx_serve_t smx_serve_t;

END_C_DECLS

#endif /* MCA_BTL_SMX_RNDV_H */
