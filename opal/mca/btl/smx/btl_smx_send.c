/*
 * btl/smx send: copy the fragment into the next slot of my ring in the receiver's
 * segment. The fragment is then complete; its callback runs from progress (never from
 * inside btl_send, which ob1 may call from its own callbacks). A full ring queues the
 * fragment on the endpoint, in order, for progress to post.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"

#include <string.h>

/* Call with the component lock held: one writer per ring, fragments in order. */
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_endpoint_t *ep = frag->endpoint;
    struct smx_slot_header *slot = smx_ring_slot(ep->out, ep->out_head);

    if (smx_slot_is_full(slot)) {
        return false;
    }
    slot->len = (uint32_t) frag->segment.seg_len;
    slot->tag = frag->tag;
    memcpy(slot + 1, frag->data, frag->segment.seg_len);
    smx_slot_set(slot, 1);
    ep->out_head++;
    return true;
}

int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) descriptor;

    frag->tag = tag;
    frag->endpoint = endpoint;
    /* The callback (if any) always comes from progress. */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    OPAL_THREAD_LOCK(&c->lock);
    /* Keep per-peer order: nothing overtakes a fragment already waiting. */
    if (opal_list_is_empty(&endpoint->pending) && mca_btl_smx_try_post(frag)) {
        opal_list_append(&c->completed, &frag->base.super.super);
    } else {
        opal_list_append(&endpoint->pending, &frag->base.super.super);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    return OPAL_SUCCESS;
}
