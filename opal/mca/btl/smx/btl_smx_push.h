/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx push (btl_smx_push.c): rendezvous pushed ahead of the asking; ob1's
 * registrations, which name them.
 */
#ifndef MCA_BTL_SMX_PUSH_H
#define MCA_BTL_SMX_PUSH_H

#include "btl_smx.h"
#include "btl_smx_rndv.h"
#include "btl_smx_types.h"

#include <stdbool.h>

BEGIN_C_DECLS

struct mca_btl_base_registration_handle_t *
mca_btl_smx_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *base, size_t size, uint32_t flags);
int mca_btl_smx_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);
/* Sender: ob1's rendezvous header for ep is on its way: the push of the buffer it
 * registered is queued to be served (true), if one is armed. */
bool mca_btl_smx_push_start(mca_btl_smx_endpoint_t *ep);
/* Finalize: what a peer pushed that no get took. */
void mca_btl_smx_push_fini(mca_btl_smx_endpoint_t *ep);
/* Receiver side: a piece of a peer's push (SMX_PUSH_TOKEN in its op): the get it
 * completed, if any (the caller completes it). */
smx_get_op_t *mca_btl_smx_push_piece(mca_btl_smx_endpoint_t *ep,
                                     const struct smx_get_piece *piece, size_t chunk);
/* Receiver side, in btl_get: op (filled in and counted) is the whole range of a push;
 * true if all of it had come already (the caller completes op). */
bool mca_btl_smx_push_get(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op, uint64_t token);

END_C_DECLS

#endif /* MCA_BTL_SMX_PUSH_H */
