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
#include "btl_smx_policy.h"
#include "btl_smx_send.h"
#include "btl_smx_sendi.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* 16 bytes, unaligned, through a load of their own wherever this is inlined. */
static inline __opal_attribute_always_inline__ void smx_copy16(unsigned char *to,
                                                               const unsigned char *from)
{
    uint64_t w[2];

    memcpy(w, from, sizeof(w));
    memcpy(to, w, sizeof(w));
}

static inline __opal_attribute_always_inline__ void smx_copy64(unsigned char *to,
                                                               const unsigned char *from)
{
    smx_copy16(to, from);
    smx_copy16(to + 16, from + 16);
    smx_copy16(to + 32, from + 32);
    smx_copy16(to + 48, from + 48);
}

/* A payload out of the user's buffer. Up to 512 bytes its lines are read by loads of
 * their own, which a stride prefetcher (tracking loads by their address in the code) sees
 * step through the buffers a process sends from; through glibc's memcpy, shared with
 * every other copy, it sees no step (docs/performance.md, "At scale"). Up to 96 bytes two
 * loads only touch the first and last byte and memcpy copies; from 97 to 512 bytes the
 * loads copy, line by line; beyond, memcpy alone, or from 2 KiB the way measured cheaper
 * for this peer (mca_btl_smx_copy_in). */
static __opal_attribute_noinline__ void smx_copy_payload(mca_btl_smx_endpoint_t *ep,
                                                         unsigned char *to,
                                                         const unsigned char *from, size_t n)
{
    if (n > 512) {
        mca_btl_smx_copy_in(ep, to, from, n);
    } else if (n > 96) {
        /* Unrolled: in a loop, one load would serve every line. */
        const size_t lines = (n - 1) / 64; /* whole lines before the last 64 bytes */
        smx_copy64(to, from);
        if (lines > 1) {
            smx_copy64(to + 64, from + 64);
        }
        if (lines > 2) {
            smx_copy64(to + 128, from + 128);
        }
        if (lines > 3) {
            smx_copy64(to + 192, from + 192);
        }
        if (lines > 4) {
            smx_copy64(to + 256, from + 256);
        }
        if (lines > 5) {
            smx_copy64(to + 320, from + 320);
        }
        if (lines > 6) {
            smx_copy64(to + 384, from + 384);
        }
        smx_copy64(to + n - 64, from + n - 64);
    } else if (n > 0) {
        const unsigned char first = from[0], last = from[n - 1];
        __asm__ __volatile__("" : : "r"(first), "r"(last)); /* keeps the two loads */
        memcpy(to, from, n);
    }
}

/* The header and the payload into 'data'; false if the convertor cannot pack it all.
 * Contiguous host data goes in one plain copy (smx_copy_payload), without the
 * convertor's generic pack (a send-immediate is complete once it returns: nobody reads
 * the convertor's position afterwards), and before the header: the copy's loads from the
 * user's buffer, which may be cold in memory, then come before any store to the line
 * the receiver polls. (A header stored first would take that line from the receiver
 * while the loads wait, and the receiver's next poll would take it back.) */
static inline __opal_attribute_always_inline__ bool
smx_sendi_fill(mca_btl_smx_endpoint_t *ep, unsigned char *data, const void *header,
               size_t header_size, struct opal_convertor_t *convertor, size_t payload_size)
{
    struct iovec iov = {.iov_base = data + header_size, .iov_len = payload_size};
    uint32_t iov_count = 1;
    size_t packed = payload_size;
    const unsigned char *src;

    if (0 != payload_size && !opal_convertor_need_buffers(convertor)
        && !opal_convertor_on_device(convertor)) {
        opal_convertor_get_current_pointer(convertor, (void **) &src);
        smx_copy_payload(ep, data + header_size, src, payload_size);
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
    size_t total = header_size + payload_size;
    int rc = OPAL_ERR_OUT_OF_RESOURCE;
    struct smx_post p;

    if (NULL != descriptor) {
        *descriptor = NULL;
    }
    if (OPAL_UNLIKELY(total > btl->btl_eager_limit)) {
        goto fallback;
    }
    /* a message the choice is about: the next one's limit, and maybe its time
     * (btl_smx_policy.h) */
    const uint32_t stamp = total >= SMX_CHOICE_MIN ? mca_btl_smx_stamp(endpoint, false) : 0;
    mca_btl_smx_eager_follow(endpoint, total);
    if (OPAL_UNLIKELY(total > btl->btl_max_send_size)) {
        /* above a fragment, under a late receiver's eager limit (btl_smx_skew.c): in
         * several chunks, written here */
        OPAL_THREAD_LOCK(&endpoint->lock);
        if (opal_list_is_empty(&endpoint->pending)
            && mca_btl_smx_post_multi(endpoint, header, header_size, convertor, payload_size,
                                      tag)) {
            rc = OPAL_SUCCESS;
        }
        goto out;
    }
    OPAL_THREAD_LOCK(&endpoint->lock);
    if (!opal_list_is_empty(&endpoint->pending)) {
        goto out;
    }
    /* A peer with a ring of mine: the record written here, without a call (fewer
     * instructions than mca_btl_smx_post_begin and _commit). */
    if (NULL != endpoint->out && NULL == endpoint->stalled) {
        uint32_t lines = smx_record_lines(total);
        struct smx_record *rec = smx_ring_quick(endpoint->out, endpoint->out_lines,
                                                endpoint->out_head, &endpoint->out_seen, &lines);
        if (NULL != rec) {
            if (smx_sendi_fill(endpoint, (unsigned char *) (rec + 1), header, header_size,
                               convertor, payload_size)) {
                smx_ring_post(rec, endpoint->out_head, endpoint->out_key, total, SMX_KIND_AM,
                              tag, lines);
                endpoint->out_head += lines;
                rc = OPAL_SUCCESS;
            }
            goto out;
        }
    }
    if (mca_btl_smx_post_begin(endpoint, total, false, &p)) {
        p.stamp = stamp;
        if (!smx_sendi_fill(endpoint, p.data, header, header_size, convertor, payload_size)) {
            mca_btl_smx_post_abandon(endpoint, &p);
            goto out;
        }
        mca_btl_smx_post_commit(endpoint, &p, total, SMX_KIND_AM, tag);
        rc = OPAL_SUCCESS;
    }
out:
    OPAL_THREAD_UNLOCK(&endpoint->lock);
    if (OPAL_SUCCESS == rc) {
        return OPAL_SUCCESS;
    }
fallback:
    if (NULL != descriptor) {
        *descriptor = btl->btl_alloc(btl, endpoint, order, total, flags);
    }
    return OPAL_ERR_OUT_OF_RESOURCE;
}
