/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx send: copy the fragment into the next slot of my ring in the receiver's
 * segment. The fragment is then complete; its callback runs from progress (never from
 * inside btl_send, which ob1 may call from its own callbacks). A full ring queues the
 * fragment on the endpoint, in order, for progress to post.
 */
#include "opal_config.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"

#include <string.h>

/* Call with the component lock held: one writer per ring. */
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag)
{
    const size_t first = SMX_SLOT_FIRST_LINE_ROOM;
    mca_btl_smx_endpoint_t *ep = frag->endpoint;
    struct smx_slot_header *slot;
    size_t len;

    if (!smx_ring_has_room(ep->out, ep->out_head, &ep->out_seen)) {
        return false;
    }
    slot = smx_ring_slot(ep->out, ep->out_head);
    /* What lies beyond the slot's first cache line first, the line the receiver polls
     * last and in one burst (see btl_smx_sendi.c). */
    len = frag->segment.seg_len;
    if (len > first) {
        memcpy((unsigned char *) (slot + 1) + first, frag->data + first, len - first);
    }
    memcpy(slot + 1, frag->data, len < first ? len : first);
    slot->len = (uint32_t) len;
    slot->tag = frag->tag;
    slot->kind = frag->kind;
    smx_slot_publish(slot, ep->out_head++);
    return true;
}

/* Post now if nothing of this peer's is waiting (per-peer order), else queue. */
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_endpoint_t *ep = frag->endpoint;

    OPAL_THREAD_LOCK(&c->lock);
    if (opal_list_is_empty(&ep->pending) && mca_btl_smx_try_post(frag)) {
        opal_list_append(&c->completed, &frag->base.super.super);
    } else {
        opal_list_append(&ep->pending, &frag->base.super.super);
        mca_btl_smx_count(&c->stats.sends_queued);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    return OPAL_SUCCESS;
}

int mca_btl_smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag)
{
    mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) descriptor;

    frag->tag = tag;
    frag->endpoint = endpoint;
    /* The callback (if any) always comes from progress. */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    return mca_btl_smx_send_internal(frag);
}
