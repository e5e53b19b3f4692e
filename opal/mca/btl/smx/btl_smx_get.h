/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx gets, asked (btl_smx_get.c) or pushed ahead (btl_smx_push.c): what the two
 * share.
 */
#ifndef MCA_BTL_SMX_GET_H
#define MCA_BTL_SMX_GET_H

#include "opal_config.h"

#include "opal/class/opal_free_list.h"

#include "btl_smx.h"
#include "btl_smx_policy.h"
#include "btl_smx_types.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

/* Sender side: a range of my memory a peer asked for (an item of the serves list, queued
 * on the endpoint's serving list). */
struct smx_serve_t {
    opal_free_list_item_t super;
    uint64_t op;
    const unsigned char *src;
    size_t size, sent;
};
typedef struct smx_serve_t smx_serve_t;

/* Receiver side: a double-copy get has all its bytes: its callback, and its measures. */
void mca_btl_smx_get_done(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op);
/* Receiver side: a piece of a peer's push (SMX_PUSH_TOKEN in its op). */
void mca_btl_smx_push_piece(mca_btl_smx_endpoint_t *ep, const struct smx_get_piece *piece,
                            size_t chunk);
/* Receiver side, in btl_get: op (filled in and counted) is the whole range of a push;
 * true if all of it had come already (the caller completes op). */
bool mca_btl_smx_push_get(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op, uint64_t token);

#endif /* MCA_BTL_SMX_GET_H */
