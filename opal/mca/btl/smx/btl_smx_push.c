/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx push: rendezvous pushed ahead of the asking (btl_smx_get.c has the asked kind).
 *
 * A double-copy get costs a round trip before its first byte moves (ob1's header reaches
 * the receiver, which matches it and asks; only then does the sender copy). So a
 * rendezvous of at most btl_smx_push_max bytes to a peer whose word says double copy for
 * its size (btl_smx_policy.h, mca_btl_smx_push_wanted) does not wait for the asking. ob1 registers the send buffer with the endpoint
 * (btl_register_mem) right before it sends that header; the registration handle, which
 * the header carries, names a push, and from the header's btl_send on the sender copies
 * the buffer to the peer in pieces, as if asked. The receiver's get of that range takes
 * the pieces as they come, straight into its buffer; pieces that come before the get (a
 * receive not posted yet) wait in a buffer of the receiver's. One push per peer at a
 * time, until ob1 deregisters the buffer (after the receiver's FIN): a receiver holds at
 * most one push's bytes of each peer.
 */
#include "opal_config.h"

#include "opal/mca/smsc/base/base.h"
#include "opal/mca/smsc/smsc.h"

#include "btl_smx.h"
#include "btl_smx_endpoint.h"
#include "btl_smx_policy.h"
#include "btl_smx_push.h"
#include "btl_smx_send.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Receiver side, push_in_lock held: the peer's next push begins (what a get never took
 * of its last one goes). */
static void smx_push_in_begin(mca_btl_smx_endpoint_t *ep, uint64_t token, size_t size)
{
    free(ep->push_in_parked);
    ep->push_in_parked = NULL;
    ep->push_in = token;
    ep->push_in_size = size;
    ep->push_in_arrived = 0;
}

/* Receiver side: a piece of a peer's push: into the get waiting for it (returned once
 * complete), else kept until the get comes. Pieces come in order: what is kept is a
 * prefix. */
smx_get_op_t *mca_btl_smx_push_piece(mca_btl_smx_endpoint_t *ep,
                                     const struct smx_get_piece *piece, size_t chunk)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint64_t total = piece->total, offset = piece->offset;
    smx_get_op_t *op, *done = NULL;

    if (total > SMX_PUSH_MOST || offset > total || chunk > total - offset) {
        mca_btl_smx_fatal(ep, "a malformed piece");
    }
    OPAL_THREAD_LOCK(&ep->push_in_lock);
    if (ep->push_in != piece->op) { /* the first piece of the peer's next push */
        if (NULL != ep->push_in_op || offset != 0) {
            OPAL_THREAD_UNLOCK(&ep->push_in_lock);
            mca_btl_smx_fatal(ep, "a piece of an unknown push");
        }
        smx_push_in_begin(ep, piece->op, (size_t) total);
    } else if (total != ep->push_in_size || offset != ep->push_in_arrived) {
        OPAL_THREAD_UNLOCK(&ep->push_in_lock);
        mca_btl_smx_fatal(ep, "a piece out of its place");
    }
    op = ep->push_in_op;
    if (NULL != op) {
        memcpy(op->local + offset, piece + 1, chunk);
        op->received += chunk;
        if (op->received == op->size) {
            done = op;
            ep->push_in_op = NULL;
            ep->push_in = 0;
        }
    } else {
        if (NULL == ep->push_in_parked) {
            ep->push_in_parked = malloc(total > 0 ? (size_t) total : 1);
            if (NULL == ep->push_in_parked) {
                OPAL_THREAD_UNLOCK(&ep->push_in_lock);
                mca_btl_smx_fatal(ep, "no memory for a message that came before its receive");
            }
            mca_btl_smx_count(&c->stats.pushes_parked);
        }
        memcpy(ep->push_in_parked + offset, piece + 1, chunk);
    }
    ep->push_in_arrived += chunk;
    OPAL_THREAD_UNLOCK(&ep->push_in_lock);
    return done;
}

/* Receiver side, in btl_get: the range of a push (with an op filled in and counted).
 * Takes what came before it; returns true if that was all of it (the caller completes
 * the op), else leaves the op waiting for the rest. */
bool mca_btl_smx_push_get(mca_btl_smx_endpoint_t *ep, smx_get_op_t *op, uint64_t token)
{
    bool all = false;

    OPAL_THREAD_LOCK(&ep->push_in_lock);
    if (ep->push_in == token) { /* some came first */
        if (ep->push_in_size != op->size) {
            OPAL_THREAD_UNLOCK(&ep->push_in_lock);
            mca_btl_smx_fatal(ep, "a push of another size than its registration");
        }
        memcpy(op->local, ep->push_in_parked, ep->push_in_arrived);
        op->received = ep->push_in_arrived;
        free(ep->push_in_parked);
        ep->push_in_parked = NULL;
        all = op->received == op->size;
        if (all) {
            ep->push_in = 0;
        } else {
            ep->push_in_op = op;
        }
    } else { /* none yet: its first piece finds the op */
        if (NULL != ep->push_in_op) {
            OPAL_THREAD_UNLOCK(&ep->push_in_lock);
            mca_btl_smx_fatal(ep, "a push begun before the last one ended");
        }
        smx_push_in_begin(ep, token, op->size);
        ep->push_in_op = op;
    }
    OPAL_THREAD_UNLOCK(&ep->push_in_lock);
    return all;
}

/* A registration of mine: ob1 holds &handle, carries handle's bytes to the peer. */
struct smx_registration {
    mca_btl_smx_endpoint_t *ep; /* the peer it is pushed to; NULL: none */
    void *smsc_reg;             /* the smsc component's registration; NULL: none */
    struct mca_btl_base_registration_handle_t handle; /* last: its smsc data follows */
};
/* Where there is neither a push nor smsc data, every registration is this one. */
static struct smx_registration smx_no_registration;

struct mca_btl_base_registration_handle_t *
mca_btl_smx_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *base, size_t size, uint32_t flags)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const size_t data = c->smsc_data_size;
    const bool remote = NULL != ep && 0 != (flags & MCA_BTL_REG_FLAG_REMOTE_READ);
    /* Where peers map my memory, what they only read needs no registration: no system
     * call for a buffer new to the cache, nothing pinned (btl_smx_get.c maps it). */
    const bool mapped = 0 != data && remote && 0 == (flags & MCA_BTL_REG_FLAG_REMOTE_WRITE)
                        && mca_smsc_base_has_feature(MCA_SMSC_FEATURE_CAN_MAP);
    const bool push = remote && 0 != c->push_max && 0 != size && size <= (size_t) c->push_max
                      && 0 == ep->push_token && mca_btl_smx_push_wanted(ep, size);
    /* a rendezvous's header follows: its time is measured from here (btl_smx_choice.h) */
    const uint32_t stamp = remote ? mca_btl_smx_stamp(ep, true) : 0;
    struct smx_registration *r;
    smx_serve_t *serve;

    (void) btl;
    if (remote) {
        mca_btl_smx_eager_follow(ep, size);
    }
    if (!push && 0 == data) {
        /* one handle for all: ob1 copies its bytes into its header at once (threads that
         * register at the same moment may swap their stamps: a measurement's noise) */
        smx_no_registration.handle.base = (uint64_t) (uintptr_t) base;
        smx_no_registration.handle.size = size;
        smx_no_registration.handle.stamp = stamp;
        return &smx_no_registration.handle;
    }
    r = malloc(sizeof(*r) + data);
    if (NULL == r) {
        return NULL;
    }
    r->ep = NULL;
    r->smsc_reg = NULL;
    r->handle.token = 0;
    r->handle.base = (uint64_t) (uintptr_t) base;
    r->handle.size = size;
    r->handle.stamp = stamp;
    r->handle.flags = mapped ? SMX_HANDLE_MAPPED : 0;
    if (mapped) {
        memset(r->handle.smsc, 0, data);
    } else if (0 != data) {
        r->smsc_reg = MCA_SMSC_CALL(register_region, base, size);
        if (NULL == r->smsc_reg) {
            free(r);
            return NULL;
        }
        memcpy(r->handle.smsc, r->smsc_reg, data);
    }
    /* The serve is taken now: once a handle names a push, its pieces must come. */
    if (push && NULL != (serve = (smx_serve_t *) opal_free_list_get(&c->serves))) {
        OPAL_THREAD_LOCK(&ep->lock);
        if (0 == ep->push_token) { /* (another thread's may have come first) */
            r->ep = ep;
            r->handle.token = ep->push_token =
                SMX_PUSH_TOKEN | __atomic_add_fetch(&c->push_seq, 1, __ATOMIC_RELAXED);
            ep->push_armed = true;
            ep->push_serve = serve;
            serve->op = r->handle.token;
            serve->src = base;
            serve->size = size;
            serve->sent = 0;
        } else {
            opal_free_list_return(&c->serves, &serve->super);
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
    return &r->handle;
}

int mca_btl_smx_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_registration *r =
        (struct smx_registration *) ((char *) handle - offsetof(struct smx_registration, handle));
    mca_btl_smx_endpoint_t *ep = r->ep;

    (void) btl;
    if (r == &smx_no_registration) {
        return OPAL_SUCCESS;
    }
    if (NULL != ep) {
        OPAL_THREAD_LOCK(&ep->lock);
        if (ep->push_token == r->handle.token) {
            /* Normally sent whole long ago (the FIN came after the peer had it all); a
             * serve not started or not finished (ob1 took another protocol) must not read
             * the buffer any more. */
            if (ep->push_armed) {
                opal_free_list_return(&c->serves, &ep->push_serve->super);
            } else {
                opal_list_item_t *item;
                OPAL_LIST_FOREACH (item, &ep->serving, opal_list_item_t) {
                    if (((smx_serve_t *) item)->op == r->handle.token) {
                        opal_list_remove_item(&ep->serving, item);
                        opal_free_list_return(&c->serves, (opal_free_list_item_t *) item);
                        break;
                    }
                }
            }
            ep->push_serve = NULL;
            ep->push_armed = false;
            ep->push_token = 0;
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
    if (NULL != r->smsc_reg) {
        MCA_SMSC_CALL(deregister_region, r->smsc_reg);
    }
    free(r);
    return OPAL_SUCCESS;
}

bool mca_btl_smx_push_start(mca_btl_smx_endpoint_t *ep)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OPAL_THREAD_LOCK(&ep->lock);
    if (!ep->push_armed) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return false;
    }
    ep->push_armed = false;
    opal_list_append(&ep->serving, &ep->push_serve->super.super);
    ep->push_serve = NULL;
    mca_btl_smx_activate(ep);
    mca_btl_smx_count(&c->stats.pushes_ahead);
    OPAL_THREAD_UNLOCK(&ep->lock);
    return true;
}

void mca_btl_smx_push_fini(mca_btl_smx_endpoint_t *ep)
{
    if (ep->push_armed && NULL != ep->push_serve) {
        opal_free_list_return(&mca_btl_smx_component.serves, &ep->push_serve->super);
    }
    ep->push_serve = NULL;
    ep->push_armed = false;
    free(ep->push_in_parked);
    ep->push_in_parked = NULL;
}
