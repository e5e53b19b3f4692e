/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx get: where single copy and double copy part ways.
 *
 * ob1 sends every contiguous message above the module's eager limit as a "get": the
 * receiver calls btl_get for the sender's buffer. Here, at that moment, the transfer is
 * given to
 *   - the selected SMSC component (single copy), where this peer's messages of this size
 *     were measured to come fastest so (mca_btl_smx_single_copy, btl_smx_policy.h): a
 *     memcpy from a mapping of the sender's buffer where the component maps peers'
 *     memory (CAN_MAP: the sender registered nothing), else the component's copy, or
 *   - a pipelined double copy through shared memory: the receiver asks the sender's BTL
 *     for the range (SMX_KIND_GET_REQ); the sender's progress copies it piece by piece
 *     into messages (SMX_KIND_GET_DATA, at most a fragment each), the receiver copies
 *     each out as it arrives. The two copies overlap, and at most the policy's
 *     pieces_max fragments per peer sit in shared memory (btl_smx_policy.c).
 * Deciding here rather than through ob1's limits is what lets the choice be per peer and
 * any size (ob1 itself only knows "above the eager limit: get"). Either way, the get's
 * time from its sender's registration to its end is measured (btl_smx_choice.h). A double
 * copy the sender begins before it is asked: btl_smx_push.c.
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_endpoint.h"
#include "btl_smx_fifo.h"
#include "btl_smx_frag.h"
#include "btl_smx_get.h"
#include "btl_smx_policy.h"
#include "btl_smx_push.h"
#include "btl_smx_send.h"
#include "btl_smx_skew.h"
#include "btl_smx_types.h"

#include <stdlib.h>
#include <string.h>

static OBJ_CLASS_INSTANCE(smx_get_op_t, opal_free_list_item_t, NULL, NULL);
static OBJ_CLASS_INSTANCE(smx_serve_t, opal_free_list_item_t, NULL, NULL);

int mca_btl_smx_get_lists_init(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int rc = opal_free_list_init(&c->get_ops, sizeof(smx_get_op_t), SMX_CACHE_LINE,
                                 OBJ_CLASS(smx_get_op_t), 0, 0, 0, -1, 16, NULL, 0, NULL, NULL,
                                 NULL);

    if (OPAL_SUCCESS == rc) {
        rc = opal_free_list_init(&c->serves, sizeof(smx_serve_t), SMX_CACHE_LINE,
                                 OBJ_CLASS(smx_serve_t), 0, 0, 0, -1, 16, NULL, 0, NULL, NULL,
                                 NULL);
    }
    return rc;
}

void mca_btl_smx_get_lists_fini(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OBJ_DESTRUCT(&c->get_ops);
    OBJ_DESTRUCT(&c->serves);
    OBJ_CONSTRUCT(&c->get_ops, opal_free_list_t);
    OBJ_CONSTRUCT(&c->serves, opal_free_list_t);
}

void mca_btl_smx_serve_drop(opal_list_item_t *serve)
{
    opal_free_list_return(&mca_btl_smx_component.serves, (opal_free_list_item_t *) serve);
}

/* A single copy of the peer's buffer into mine: through a mapping of the peer's memory
 * where its handle says so (cached by the smsc component: a memcpy, no system call once
 * mapped), else by the smsc component's copy. OPAL_ERR_NOT_AVAILABLE: not mapped (the
 * get then copies twice). */
static int smx_get_single(mca_btl_smx_endpoint_t *ep, void *local, uint64_t remote, size_t size,
                          struct mca_btl_base_registration_handle_t *handle)
{
    void *ctx, *mapping = NULL;

    if (NULL == handle || 0 == (handle->flags & SMX_HANDLE_MAPPED)) {
        return MCA_SMSC_CALL(copy_from, ep->smsc_endpoint, local, (void *) (uintptr_t) remote,
                             size, mca_btl_smx_smsc_data(handle));
    }
    ctx = MCA_SMSC_CALL(map_peer_region, ep->smsc_endpoint, 0, (void *) (uintptr_t) remote, size,
                        &mapping);
    if (NULL == ctx) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    memcpy(local, mapping, size);
    MCA_SMSC_CALL(unmap_peer_region, ctx);
    return OPAL_SUCCESS;
}

int mca_btl_smx_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                    void *cbcontext, void *cbdata)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_get_request *req;
    smx_get_op_t *op;
    mca_btl_smx_frag_t *frag;

    const bool skew = SMX_SKEW_ON == c->skew;
    /* the whole buffer of a push: its pieces are on their way, whatever I would pick */
    const uint64_t token = NULL != remote_handle ? remote_handle->token : 0;
    const bool pushed = 0 != (token & SMX_PUSH_TOKEN) && remote_handle->base == remote_address
                        && remote_handle->size == size;
    const uint32_t sent = NULL != remote_handle && remote_handle->size == size
                          ? remote_handle->stamp : 0;
    /* measured only where the receive was there first: a get that waited in ob1's
     * unexpected queue measures how late I was, not the way */
    const uint32_t stamp = c->delivering == endpoint ? sent : 0;

    if (skew) { /* did this get wait for me? (btl_smx_skew.c) */
        mca_btl_smx_skew_get_start(endpoint, sent);
    }
    if (!pushed && mca_btl_smx_single_copy(endpoint, size)) {
        int rc = smx_get_single(endpoint, local_address, remote_address, size, remote_handle);
        if (OPAL_ERR_NOT_AVAILABLE == rc) {
            goto double_copy;
        }
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        mca_btl_smx_count(&c->stats.gets_single_copy);
        cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        /* measured once ob1 is through with it (its receive completed, its FIN sent), as an
         * eager message is once ob1's callback returns */
        mca_btl_smx_measured(endpoint, size, SMX_WAY_SINGLE, stamp);
        return OPAL_SUCCESS;
    }

double_copy:
    op = (smx_get_op_t *) opal_free_list_get(&c->get_ops);
    frag = pushed ? NULL : mca_btl_smx_frag_alloc(endpoint, sizeof(*req));
    if (NULL == op || (NULL == frag && !pushed)) {
        if (NULL != op) {
            opal_free_list_return(&c->get_ops, &op->super);
        }
        if (NULL != frag) {
            mca_btl_smx_frag_release(frag);
        }
        return OPAL_ERR_OUT_OF_RESOURCE; /* ob1 retries later */
    }
    op->ep = endpoint;
    op->local = local_address;
    op->size = size;
    op->received = 0;
    op->stamp = stamp;
    op->local_handle = local_handle;
    op->cbfunc = cbfunc;
    op->cbcontext = cbcontext;
    op->cbdata = cbdata;
    if (0 == size) { /* nothing to fetch; complete from here like a single copy would */
        opal_free_list_return(&c->get_ops, &op->super);
        if (NULL != frag) {
            mca_btl_smx_frag_release(frag);
        }
        cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    mca_btl_smx_count(&c->stats.gets_double_copy);
    (void) __atomic_add_fetch(&endpoint->pulling, 1, __ATOMIC_RELAXED);
    if (pushed) {
        if (mca_btl_smx_push_get(endpoint, op, token)) { /* it had all come before me */
            mca_btl_smx_get_done(endpoint, op);
        }
        return OPAL_SUCCESS;
    }
    req = (struct smx_get_request *) frag->data;
    req->op = (uint64_t) (uintptr_t) op;
    req->remote_address = remote_address;
    req->size = size;
    frag->kind = SMX_KIND_GET_REQ;
    frag->tag = 0;
    frag->segments[0].seg_len = sizeof(*req);
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    return mca_btl_smx_send_internal(frag);
}

/* Sender side: a peer asks for a range of my memory (an ob1 send buffer it was told of). */
void mca_btl_smx_get_request_arrived(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_get_request *req = payload;
    smx_serve_t *serve;

    if (len < sizeof(*req)
        || NULL == (serve = (smx_serve_t *) opal_free_list_get(&c->serves))) {
        /* The peer would wait for this data for ever: better a clear end than a hang. */
        mca_btl_smx_fatal(ep, len < sizeof(*req) ? "a malformed get request"
                                                 : "no memory to serve a get request");
        return;
    }
    serve->op = req->op;
    serve->src = (const unsigned char *) (uintptr_t) req->remote_address;
    serve->size = (size_t) req->size;
    serve->sent = 0;
    OPAL_THREAD_LOCK(&ep->lock);
    opal_list_append(&ep->serving, &serve->super.super);
    mca_btl_smx_activate(ep);
    OPAL_THREAD_UNLOCK(&ep->lock);
}

/* Sender side, the peer's lock held: one GET_DATA piece of 'chunk' bytes from 'src' at
 * 'offset' of the requester's range, if there is room. Returns the bytes posted, or -1
 * for none. */
static ssize_t smx_post_piece(mca_btl_smx_endpoint_t *ep, uint64_t op, uint64_t offset,
                              const unsigned char *src, size_t chunk, size_t total)
{
    struct smx_get_piece *piece;
    struct smx_post p;

    if (!mca_btl_smx_post_begin(ep, sizeof(*piece) + chunk, true, &p)) {
        return -1;
    }
    /* The data first, the piece's header (on the record's first line) last. */
    piece = p.data;
    mca_btl_smx_copy_in(ep, piece + 1, src, chunk);
    piece->op = op;
    piece->offset = offset;
    piece->total = total;
    mca_btl_smx_post_commit(ep, &p, sizeof(*piece) + chunk, SMX_KIND_GET_DATA, 0);
    return (ssize_t) chunk;
}

/* As many pieces out to ep as the policy lets me have (btl_smx_policy.c,
 * smx_footprint)? */
static bool smx_pieces_full(mca_btl_smx_endpoint_t *ep)
{
    return __atomic_load_n(&ep->chunks_out, __ATOMIC_RELAXED) >= mca_btl_smx_policy.pieces_max;
}

/* Sender side, the peer's lock held: copy as much of the requested ranges as there is
 * room for. */
int mca_btl_smx_get_serve_locked(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    /* A whole number of cache lines, so that in an aligned buffer every piece starts on
     * a line as the first one does (otherwise every vector load and store of the copies
     * straddles two lines). */
    const size_t room = ((size_t) c->frag_size - sizeof(struct smx_get_piece))
                        & ~(size_t) (SMX_CACHE_LINE - 1);
    int pieces = 0;
    smx_serve_t *serve;

    while (NULL != (serve = (smx_serve_t *) opal_list_get_first(&ep->serving))
           && &serve->super.super != opal_list_get_end(&ep->serving)) {
        while (serve->sent < serve->size) {
            size_t chunk = serve->size - serve->sent;
            ssize_t posted;

            if (smx_pieces_full(ep)) {
                mca_btl_smx_chunks_reclaim();
                if (smx_pieces_full(ep)) {
                    goto out; /* the receiver has not caught up; next progress */
                }
            }
            posted = smx_post_piece(ep, serve->op, serve->sent, serve->src + serve->sent,
                                    chunk > room ? room : chunk, serve->size);
            if (posted < 0) {
                goto out;
            }
            serve->sent += (size_t) posted;
            pieces++;
        }
        opal_list_remove_first(&ep->serving);
        opal_free_list_return(&c->serves, &serve->super);
    }
out:
    return pieces;
}

int mca_btl_smx_get_serve(mca_btl_smx_endpoint_t *ep)
{
    int pieces;

    OPAL_THREAD_LOCK(&ep->lock);
    pieces = mca_btl_smx_get_serve_locked(ep);
    OPAL_THREAD_UNLOCK(&ep->lock);
    return pieces;
}

/* Receiver side: a double-copy get has all its bytes. */
void mca_btl_smx_get_done(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op)
{
    (void) __atomic_sub_fetch(&ep->pulling, 1, __ATOMIC_RELAXED);
    const size_t size = op->size;
    const uint32_t stamp = op->stamp;
    op->cbfunc(&ep->module->super, ep, op->local, op->local_handle, op->cbcontext, op->cbdata,
               OPAL_SUCCESS);
    opal_free_list_return(&mca_btl_smx_component.get_ops, &op->super);
    mca_btl_smx_measured(ep, size, SMX_WAY_DOUBLE, stamp); /* (as a single copy is) */
}

/* Receiver side: one piece of a double-copy get; the last one completes it. */
void mca_btl_smx_get_piece_arrived(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    const struct smx_get_piece *piece = payload;
    smx_get_op_t *op = (smx_get_op_t *) (uintptr_t) piece->op;
    size_t chunk = len - sizeof(*piece);

    if (0 != (piece->op & SMX_PUSH_TOKEN)) {
        op = mca_btl_smx_push_piece(ep, piece, chunk);
        if (NULL != op) {
            mca_btl_smx_get_done(ep, op);
        }
        return;
    }
    if (piece->offset > op->size || chunk > op->size - piece->offset) {
        mca_btl_smx_fatal(ep, "a piece out of its get's range");
    }
    memcpy(op->local + piece->offset, piece + 1, chunk);
    op->received += chunk;
    if (op->received >= op->size) {
        mca_btl_smx_get_done(ep, op);
    }
}
