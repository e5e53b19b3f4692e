/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx get: where single copy and double copy part ways.
 *
 * ob1 sends every contiguous message above the module's eager limit as a "get": the
 * receiver calls btl_get for the sender's buffer. Here, at that moment, the transfer is
 * given to
 *   - the selected SMSC component (single copy), where the policy says so for this peer,
 *     this size, the node's load and what this peer's gets cost lately
 *     (mca_btl_smx_single_copy, btl_smx_policy.h), or
 *   - a pipelined double copy through shared memory: the receiver asks the sender's BTL
 *     for the range (SMX_KIND_GET_REQ); the sender's progress copies it piece by piece
 *     into messages (SMX_KIND_GET_DATA, at most a fragment each), the receiver copies
 *     each out as it arrives. Both copies stream, and at most SMX_PIECES_IN_FLIGHT
 *     fragments per peer sit in shared memory.
 * Deciding here rather than through ob1's limits is what lets the threshold depend on the
 * class, the load at this very moment, and be any size (ob1 itself only knows "above the
 * eager limit: get"). A double copy the sender begins before it is asked: btl_smx_push.c.
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"
#include "btl_smx_policy.h"
#include "smx_memcheck.h"

#include <stdlib.h>
#include <string.h>

#include "btl_smx_get.h"

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

/* The node's count of large transfers in flight (local rank 0's segment; NULL: none),
 * which the busy rule reads (btl_smx_policy.h, mca_btl_smx_node_busy). */
static inline void smx_transfers_add(uint32_t *counter, int delta)
{
    if (NULL != counter) {
        (void) __atomic_add_fetch(counter, (uint32_t) delta, __ATOMIC_RELAXED);
    }
}

int mca_btl_smx_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                    void *cbcontext, void *cbdata)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    uint32_t *counter = c->transfers_in_flight;
    struct smx_get_request *req;
    smx_get_op_t *op;
    mca_btl_smx_frag_t *frag;

    const bool skew = SMX_SKEW_ON == c->skew;
    const uint64_t start = skew || mca_btl_smx_policy.adaptive ? mca_btl_smx_now_ns() : 0;
    /* the whole buffer of a push: its pieces are on their way, whatever I would pick */
    const uint64_t token = NULL != remote_handle ? remote_handle->token : 0;
    const bool pushed = 0 != (token & SMX_PUSH_TOKEN) && remote_handle->base == remote_address
                        && remote_handle->size == size;

    if (skew) { /* did this get wait for me? (btl_smx_skew.c) */
        mca_btl_smx_skew_get_start(endpoint, start);
    }
    if (!pushed && mca_btl_smx_single_copy(endpoint, size, false)) {
        uint64_t end;
        int rc;

        smx_transfers_add(counter, 1);
        rc = MCA_SMSC_CALL(copy_from, endpoint->smsc_endpoint, local_address,
                           (void *) (uintptr_t) remote_address, size,
                           mca_btl_smx_smsc_data(remote_handle));
        smx_transfers_add(counter, -1);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        end = skew || mca_btl_smx_policy.adaptive ? mca_btl_smx_now_ns() : 0;
        if (skew) {
            mca_btl_smx_skew_get_end(endpoint, end);
        }
        mca_btl_smx_copy_measured(endpoint, size, SMX_COPY_SINGLE, size, end - start);
        mca_btl_smx_count(&c->stats.gets_single_copy);
        cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }

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
    op->counter = counter;
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
    smx_transfers_add(counter, 1);
    mca_btl_smx_count(&c->stats.gets_double_copy);
    /* Double copies are timed from the first of a run of gets to the last one's end: with
     * several in flight, none of them alone says what the pipeline delivers. The clock is
     * read once at each end where it can be: a read costs about 20 ns in the development
     * VM, a fifth of a 0-byte message's time. */
    if (1 == __atomic_add_fetch(&endpoint->pulling, 1, __ATOMIC_RELAXED)) {
        endpoint->pull_since = 0 != start ? start : mca_btl_smx_now_ns();
        endpoint->pull_bytes = 0;
        endpoint->pull_size = size;
        endpoint->pull_work = 0;
    }
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
    req->destination = (uint64_t) (uintptr_t) local_address;
    frag->kind = SMX_KIND_GET_REQ;
    frag->tag = 0;
    frag->segment.seg_len = sizeof(*req);
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
    serve->destination = req->destination;
    serve->size = (size_t) req->size;
    serve->sent = 0;
    serve->pushed = false;
    OPAL_THREAD_LOCK(&ep->lock);
    opal_list_append(&ep->serving, &serve->super.super);
    mca_btl_smx_activate(ep);
    OPAL_THREAD_UNLOCK(&ep->lock);
}

/* Sender side, the peer's lock held: one GET_DATA piece of at most 'chunk' bytes from
 * 'src' (none for SMX_PIECE_PUSHED) at 'offset' of the requester's range, if there is
 * room. Returns the bytes posted, or -1 for none. */
static ssize_t smx_post_piece(mca_btl_smx_endpoint_t *ep, uint64_t op, uint64_t offset,
                              const unsigned char *src, size_t chunk, size_t total)
{
    struct smx_get_piece *piece;
    struct smx_post p;

    if (!mca_btl_smx_post_begin(ep, sizeof(*piece) + chunk, 0 != chunk, &p)) {
        return -1;
    }
    /* The data first, the piece's header (on the record's first line) last. */
    piece = p.data;
    if (0 != chunk) {
        mca_btl_smx_copy_in(ep, piece + 1, src, chunk);
    }
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
        /* An exchange: the peer pulls from me while I pull from it, so double copy would
         * cost each of us two copies. Push its data whole with one single copy (into
         * memory the peer is not touching until this piece says so), then tell it. */
        if (0 == serve->sent && 0 == (serve->op & SMX_PUSH_TOKEN)
            && mca_btl_smx_single_copy(ep, serve->size, true)
            && OPAL_SUCCESS == MCA_SMSC_CALL(copy_to, ep->smsc_endpoint, (void *) serve->src,
                                             (void *) (uintptr_t) serve->destination,
                                             serve->size, NULL)) {
            serve->pushed = true;
            serve->sent = serve->size;
            mca_btl_smx_count(&c->stats.exchange_pushes);
        }
        if (serve->pushed) {
            if (smx_post_piece(ep, serve->op, SMX_PIECE_PUSHED, NULL, 0, serve->size) < 0) {
                goto out; /* no room to say so yet; next progress */
            }
            pieces++;
        }
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
    ep->pull_bytes += op->size;
    const bool skew = SMX_SKEW_ON == mca_btl_smx_component.skew;
    const bool last = 0 == __atomic_sub_fetch(&ep->pulling, 1, __ATOMIC_RELAXED);
    const uint64_t now = skew || last ? mca_btl_smx_now_ns() : 0;
    if (skew) {
        mca_btl_smx_skew_get_end(ep, now);
    }
    if (last && !(mca_btl_smx_policy.by_work && UINT64_MAX == ep->pull_work)) {
        mca_btl_smx_copy_measured(ep, ep->pull_size, SMX_COPY_DOUBLE, ep->pull_bytes,
                                  mca_btl_smx_policy.by_work ? ep->pull_work
                                                             : now - ep->pull_since);
    }
    smx_transfers_add(op->counter, -1);
    op->cbfunc(&ep->module->super, ep, op->local, op->local_handle, op->cbcontext, op->cbdata,
               OPAL_SUCCESS);
    opal_free_list_return(&mca_btl_smx_component.get_ops, &op->super);
}

/* Receiver side: one piece of a double-copy get; the last one completes it. */
void mca_btl_smx_get_piece_arrived(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    const struct smx_get_piece *piece = payload;
    smx_get_op_t *op = (smx_get_op_t *) (uintptr_t) piece->op;
    size_t chunk = len - sizeof(*piece);

    if (0 != (piece->op & SMX_PUSH_TOKEN)) {
        mca_btl_smx_push_piece(ep, piece, chunk);
        return;
    }
    if (SMX_PIECE_PUSHED == piece->offset) {
        op->received = op->size; /* the server copied it all into op->local already */
        ep->pull_work = UINT64_MAX; /* by a single copy, which only the server timed */
        SMX_MEMCHECK_WRITTEN(op->local, op->size);
    } else {
        mca_btl_smx_copy_out(ep, op->local + piece->offset, piece + 1, chunk, 2);
        op->received += chunk;
    }
    if (op->received >= op->size) {
        mca_btl_smx_get_done(ep, op);
    }
}
