/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx fragment pool: a LIFO of descriptors, so the most recently used (cache-warm)
 * buffer goes out next. Private to the process; the lock only matters with threads.
 *
 * Descriptors handed to ob1 are counted, and at btl_smx_max_frags no more are handed out:
 * a sender whose rings are full would otherwise buffer every message it is given, without
 * bound (a burst of 10000 isends of 16 KiB held 200 MB). ob1 keeps a send it cannot start
 * on its own list and retries it from progress, at no cost but the request (a control
 * message, FIN or ACK, waits on another list that ob1 retries when one of its fragments
 * completes: progress takes a completed fragment off the count before its callback, so
 * that retry finds room). Fragments the BTL uses itself (a get's request, one per get in
 * flight, i.e. per receive the application posted) are not counted.
 */
#include "opal_config.h"

#include "btl_smx.h"
#include "btl_smx_types.h"

#include <stdlib.h>

OBJ_CLASS_INSTANCE(mca_btl_smx_frag_t, mca_btl_base_descriptor_t, NULL, NULL);

mca_btl_smx_frag_t *mca_btl_smx_frag_alloc(struct mca_btl_base_endpoint_t *endpoint, bool counted)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_frag_t *frag;

    OPAL_THREAD_LOCK(&c->lock);
    if (counted && c->frags_out >= c->max_frags) {
        OPAL_THREAD_UNLOCK(&c->lock);
        return NULL;
    }
    frag = c->free_frags;
    if (NULL != frag) {
        c->free_frags = frag->next_free;
    }
    c->frags_out += counted;
    /* (MPI_T reads the peak without the lock; a malloc failure below leaves it one high) */
    if ((unsigned long long) c->frags_out > c->stats.frags_peak) {
        __atomic_store_n(&c->stats.frags_peak, (unsigned long long) c->frags_out,
                         __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL == frag) {
        frag = malloc(sizeof(*frag) + (size_t) c->frag_size);
        if (NULL == frag) {
            if (counted) {
                OPAL_THREAD_LOCK(&c->lock);
                c->frags_out--;
                OPAL_THREAD_UNLOCK(&c->lock);
            }
            return NULL;
        }
        OBJ_CONSTRUCT(frag, mca_btl_smx_frag_t);
    }
    frag->counted = counted;
    frag->endpoint = endpoint;
    frag->kind = SMX_SLOT_AM;
    frag->segment.seg_addr.pval = frag->data;
    frag->segment.seg_len = 0;
    frag->base.des_segments = &frag->segment;
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

    OPAL_THREAD_LOCK(&c->lock);
    c->frags_out -= frag->counted;
    frag->counted = false;
    OPAL_THREAD_UNLOCK(&c->lock);
}

void mca_btl_smx_frag_release(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OPAL_THREAD_LOCK(&c->lock);
    c->frags_out -= frag->counted;
    frag->counted = false;
    frag->next_free = c->free_frags;
    c->free_frags = frag;
    OPAL_THREAD_UNLOCK(&c->lock);
}

void mca_btl_smx_frag_pool_fini(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    while (NULL != c->free_frags) {
        mca_btl_smx_frag_t *frag = c->free_frags;
        c->free_frags = frag->next_free;
        OBJ_DESTRUCT(frag);
        free(frag);
    }
}
