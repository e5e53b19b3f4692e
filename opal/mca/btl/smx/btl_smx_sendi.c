/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx sendi: the fast path for small messages. The header and the packed payload go
 * straight where the receiver reads them (a pair ring's record, or a chunk behind the
 * queue: btl_smx_send.c), without a descriptor, a staging copy or a completion to run
 * later. If there is no room or anything of this peer's is queued (order!), hand back a
 * descriptor instead: ob1 then packs into it and calls btl_send, whose completion
 * callback is what makes ob1 retry its own queued requests. Only at btl_smx_max_frags is
 * there none to hand back; ob1 then queues the send itself and retries it from its
 * progress function (see btl_smx_frag.c).
 */
#include "opal_config.h"

#include "opal/datatype/opal_convertor.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"

#include <stdbool.h>
#include <string.h>

/* The header and the payload into 'data'; false if the convertor cannot pack it all.
 * Contiguous host data goes in one plain copy, without the convertor's generic pack (a
 * send-immediate is complete once it returns: nobody reads the convertor's position
 * afterwards), and before the header: the copy's loads from the user's buffer, which
 * may be cold in memory, then come before any store to the line the receiver polls. (A
 * header stored first would take that line from the receiver while the loads wait, and
 * the receiver's next poll would take it back: the likely reason why off-cache
 * ping-pongs took less time with the payload first; README, "At scale".) Gathering the
 * first line on the stack and writing it last took more time at most sizes (1.02-1.10x
 * in ping-pongs of 8-512 B, 1.3-1.45x in windows of 320-384 B Isends). */
static inline __opal_attribute_always_inline__ bool
smx_sendi_fill(unsigned char *data, const void *header, size_t header_size,
               struct opal_convertor_t *convertor, size_t payload_size)
{
    struct iovec iov = {.iov_base = data + header_size, .iov_len = payload_size};
    uint32_t iov_count = 1;
    size_t packed = payload_size;
    const void *src;

    if (0 != payload_size && !opal_convertor_need_buffers(convertor)
        && !opal_convertor_on_device(convertor)) {
        opal_convertor_get_current_pointer(convertor, (void **) &src);
        memcpy(data + header_size, src, payload_size);
        memcpy(data, header, header_size);
        return true;
    }
    memcpy(data, header, header_size);
    if (0 == payload_size) {
        return true;
    }
    return opal_convertor_pack(convertor, &iov, &iov_count, &packed) >= 0
           && packed == payload_size;
}

int mca_btl_smx_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    size_t total = header_size + payload_size;
    int rc = OPAL_ERR_OUT_OF_RESOURCE;
    struct smx_post p;

    if (NULL != descriptor) {
        *descriptor = NULL;
    }
    if (OPAL_UNLIKELY(total > btl->btl_eager_limit)) {
        goto fallback;
    }
    OPAL_THREAD_LOCK(&c->lock);
    if (!opal_list_is_empty(&endpoint->pending)) {
        goto out;
    }
    /* A peer with a ring of mine: the record written here, without a call (callgrind:
     * 1,559 instructions a round trip of a 64 B ping-pong against 1,638 through
     * mca_btl_smx_post_begin and _commit). */
    if (NULL != endpoint->out && NULL == endpoint->stalled) {
        uint32_t lines = smx_record_lines(total);
        struct smx_record *rec = smx_ring_quick(endpoint->out, endpoint->out_lines,
                                                endpoint->out_head, &endpoint->out_seen, &lines);
        if (NULL != rec) {
            if (smx_sendi_fill((unsigned char *) (rec + 1), header, header_size, convertor,
                               payload_size)) {
                smx_ring_post(rec, endpoint->out_head, endpoint->out_key, total, SMX_KIND_AM,
                              tag, lines);
                endpoint->out_head += lines;
                rc = OPAL_SUCCESS;
            }
            goto out;
        }
    }
    if (mca_btl_smx_post_begin(endpoint, total, false, &p)) {
        if (!smx_sendi_fill(p.data, header, header_size, convertor, payload_size)) {
            mca_btl_smx_post_abandon(endpoint, &p);
            goto out;
        }
        mca_btl_smx_post_commit(endpoint, &p, total, SMX_KIND_AM, tag);
        rc = OPAL_SUCCESS;
    }
out:
    OPAL_THREAD_UNLOCK(&c->lock);
    if (OPAL_SUCCESS == rc) {
        return OPAL_SUCCESS;
    }
fallback:
    if (NULL != descriptor) {
        *descriptor = btl->btl_alloc(btl, endpoint, order, total, flags);
    }
    return OPAL_ERR_OUT_OF_RESOURCE;
}
