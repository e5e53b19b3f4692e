/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx fragments: two opal_free_list_t of descriptors (LIFOs, so that the most
 * recently used, cache-warm buffer goes out next), private to the process. The count of
 * large fragments out, the cap, is kept beside them under the component's lock.
 *
 * Small descriptors (at most SMX_SMALL_FRAG_BYTES plus the smsc registration handle: any
 * message that carries an ob1 header and no user data, and the BTL's own get requests)
 * have small buffers and are never refused. Large ones (frag_size bytes) are counted,
 * and at btl_smx_max_frags no more are handed out: a sender without room would
 * otherwise buffer every message it is given (a burst of 10000 isends of 16 KiB held
 * 200 MB).
 *
 * Why the cap cannot deadlock a job (the argument a reviewer checks):
 *  1. A receiver takes every message that has arrived whenever it progresses (marking its
 *     chunk done, its ring lines consumed, its queue entry free), whatever its
 *     own resources: handling a message may queue outgoing fragments, never wait for
 *     them (btl_smx_recv.c, mca_btl_smx_progress). Every process waiting in MPI
 *     progresses, so every posted message is taken.
 *  2. A queued fragment is posted as soon as there is room (a chunk of my area, an entry
 *     of the peer's queue, lines of my ring to it), which (1) provides; it
 *     then completes from progress and comes back. So every large descriptor that is out
 *     comes back, and the count falls, without any process needing anything first.
 *  3. A refusal therefore only delays. It must also be retried: ob1 (5.0.x) retries a
 *     refused send (a request's first fragment, a rendezvous's further fragments) from its
 *     own progress function on every opal_progress call, so these may be refused; they
 *     are the only descriptors large enough to be.
 *  4. ob1 retries a refused control message (ACK, FIN, PUT) only from a later fragment's
 *     completion callback, and in 5.0.7 retries an ACK with a header size it never set:
 *     a zero-byte ACK that the peer drops (Open MPI pull request 13408, 2025), or a FIN
 *     that waits for ever once nothing else completes (pull request 13939, 2026). Jobs
 *     hung on the first at 4 ranks with 8 fragments (the sender waiting for that ACK).
 *     Control messages are small descriptors, and small descriptors are never refused,
 *     so ob1 never parks one.
 *  5. Gets take a small descriptor (their request) and nothing else; so does an eager
 *     message whose data stays in the user's buffer (prepare_src where peers map my
 *     memory: in place, or copied at post), which completes once its receiver has taken
 *     it, as (2) makes every message.
 * No process ever waits for a descriptor that only another waiting process can return.
 * What small descriptors cost: one per message that ob1 has handed over without room,
 * a few hundred bytes, less than ob1's own request for that message. Like the large
 * ones, they stay in their list until finalize once made.
 */
#include "opal_config.h"

#include "btl_smx.h"
#include "btl_smx_frag.h"
#include "btl_smx_types.h"

#include <stdlib.h>

OBJ_CLASS_INSTANCE(mca_btl_smx_frag_t, mca_btl_base_descriptor_t, NULL, NULL);

size_t mca_btl_smx_small_frag_bytes(void)
{
    return SMX_SMALL_FRAG_BYTES + mca_btl_smx_module_template.btl_registration_handle_size;
}

/* A new item of either list: its buffer is the item's payload. */
static int smx_frag_item_init(opal_free_list_item_t *item, void *ctx)
{
    mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) item;

    frag->data = item->ptr;
    frag->big = NULL;
    frag->small = (&mca_btl_smx_component.small_frags == ctx);
    return OPAL_SUCCESS;
}

int mca_btl_smx_frag_lists_init(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int rc;

    /* grown 8 (large) or 64 (small) at a time, without a limit of the list's own: the cap
     * counts what is out (mca_btl_smx_frag_alloc) */
    rc = opal_free_list_init(&c->frags, sizeof(mca_btl_smx_frag_t), SMX_CACHE_LINE,
                             OBJ_CLASS(mca_btl_smx_frag_t), (size_t) c->frag_size, SMX_CACHE_LINE,
                             0, -1, 8, NULL, 0, NULL, smx_frag_item_init, &c->frags);
    if (OPAL_SUCCESS == rc) {
        rc = opal_free_list_init(&c->small_frags, sizeof(mca_btl_smx_frag_t), SMX_CACHE_LINE,
                                 OBJ_CLASS(mca_btl_smx_frag_t), mca_btl_smx_small_frag_bytes(),
                                 SMX_CACHE_LINE, 0, -1, 64, NULL, 0, NULL, smx_frag_item_init,
                                 &c->small_frags);
    }
    return rc;
}

void mca_btl_smx_frag_lists_fini(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OBJ_DESTRUCT(&c->frags);
    OBJ_DESTRUCT(&c->small_frags);
    OBJ_CONSTRUCT(&c->frags, opal_free_list_t);
    OBJ_CONSTRUCT(&c->small_frags, opal_free_list_t);
}

mca_btl_smx_frag_t *mca_btl_smx_frag_alloc(struct mca_btl_base_endpoint_t *endpoint, size_t size)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const bool small = size <= mca_btl_smx_small_frag_bytes();
    mca_btl_smx_frag_t *frag;

    if (!small) {
        OPAL_THREAD_LOCK(&c->lock);
        if (c->frags_out >= c->max_frags
            || (size > (size_t) c->frag_size && c->big_out >= SMX_BIG_FRAGS_MAX)) {
            OPAL_THREAD_UNLOCK(&c->lock);
            return NULL; /* a send: ob1 retries it from its progress function */
        }
        c->frags_out++;
        c->big_out += size > (size_t) c->frag_size;
        /* (MPI_T reads the peak without the lock; a failure below leaves it one high) */
        if ((unsigned long long) c->frags_out > c->stats.frags_peak) {
            __atomic_store_n(&c->stats.frags_peak, (unsigned long long) c->frags_out,
                             __ATOMIC_RELAXED);
        }
        OPAL_THREAD_UNLOCK(&c->lock);
    }
    frag = (mca_btl_smx_frag_t *) opal_free_list_get(small ? &c->small_frags : &c->frags);
    if (NULL != frag && size > (size_t) c->frag_size
        && NULL == (frag->big = malloc(size))) {
        opal_free_list_return(&c->frags, &frag->base.super);
        frag = NULL;
    }
    if (NULL == frag) {
        if (!small) {
            OPAL_THREAD_LOCK(&c->lock);
            c->frags_out--;
            c->big_out -= size > (size_t) c->frag_size;
            OPAL_THREAD_UNLOCK(&c->lock);
        }
        return NULL;
    }
    frag->counted = !small;
    frag->endpoint = endpoint;
    frag->kind = SMX_KIND_AM;
    frag->user = NULL;
    frag->user_len = 0;
    frag->stamp = 0;
    if (size <= (size_t) c->frag_size) {
        frag->big = NULL;
    }
    frag->segments[0].seg_addr.pval = NULL != frag->big ? frag->big : frag->data;
    frag->segments[0].seg_len = 0;
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->base.des_context = NULL;
    frag->base.des_flags = 0;
    frag->base.order = MCA_BTL_NO_ORDER;
    return frag;
}

void mca_btl_smx_frag_uncount(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    if (frag->counted) {
        OPAL_THREAD_LOCK(&c->lock);
        c->frags_out--;
        OPAL_THREAD_UNLOCK(&c->lock);
        frag->counted = false;
    }
}

void mca_btl_smx_frag_release(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    mca_btl_smx_frag_uncount(frag);
    if (NULL != frag->big) {
        OPAL_THREAD_LOCK(&c->lock);
        c->big_out--;
        OPAL_THREAD_UNLOCK(&c->lock);
        free(frag->big);
        frag->big = NULL;
    }
    opal_free_list_return(frag->small ? &c->small_frags : &c->frags, &frag->base.super);
}
