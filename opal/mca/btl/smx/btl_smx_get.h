/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx gets (btl_smx_get.c, btl_smx_put.c): btl_get by single copy or by a pipelined
 * double copy, asked of the peer or taken from its push.
 */
#ifndef MCA_BTL_SMX_GET_H
#define MCA_BTL_SMX_GET_H

#include "btl_smx.h"
#include "btl_smx_rndv.h"

BEGIN_C_DECLS

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
/* Receiver side: a double-copy get has all its bytes: its callback, and its measures. */
void mca_btl_smx_get_done(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op);

END_C_DECLS

#endif /* MCA_BTL_SMX_GET_H */
