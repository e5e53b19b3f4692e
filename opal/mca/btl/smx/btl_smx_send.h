/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx sending (btl_smx_send.c): the one place a message enters shared memory, into a
 * chunk named in the receiver's queue or a record of my pair ring to it.
 */
#ifndef MCA_BTL_SMX_SEND_H
#define MCA_BTL_SMX_SEND_H

#include "btl_smx.h"
#include "btl_smx_frag.h"
#include "btl_smx_types.h"

#include <string.h>

BEGIN_C_DECLS

struct smx_post {
    void *data;                  /* where the payload goes */
    uint32_t stamp;              /* the sender's clock, for the receiver (0: not timed) */
    struct smx_record *rec;      /* in my pair ring to the peer, or NULL */
    struct smx_chunk_slot *slot; /* a chunk of mine, or NULL */
    uint32_t skip;               /* ring lines skipped to its end first */
    uint32_t lines;              /* ring lines of the record */
};
/* Room for a message of 'len' payload bytes to ep (ep's lock held); false: none now.
 * Commit or abandon what it reserved. 'piece': one of many pieces of a get, which go in
 * chunks even where a ring could hold them (more of them in flight at once). */
bool mca_btl_smx_post_begin(mca_btl_smx_endpoint_t *ep, size_t len, bool piece,
                            struct smx_post *p);
void mca_btl_smx_post_commit(mca_btl_smx_endpoint_t *ep, struct smx_post *p, size_t len,
                             uint8_t kind, uint8_t tag);
void mca_btl_smx_post_abandon(mca_btl_smx_endpoint_t *ep, struct smx_post *p);
/* Write a payload of n bytes for ep into shared memory: from SMX_STORE_MIN bytes the way
 * btl_smx_nontemporal and ep's measurements choose (btl_smx_store.h), below by memcpy.
 * Anything published after it sees its bytes (non-temporal stores end with a fence). */
void mca_btl_smx_copy_in_measured(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                  size_t n);
static inline void mca_btl_smx_copy_in(mca_btl_smx_endpoint_t *ep, void *to, const void *from,
                                       size_t n)
{
    if (n < SMX_STORE_MIN || SMX_NT_NEVER == mca_btl_smx_component.nontemporal) {
        memcpy(to, from, n);
    } else {
        mca_btl_smx_copy_in_measured(ep, to, from, n);
    }
}
/* Post now if nothing of this peer's is waiting (per-peer order), else queue. */
int mca_btl_smx_send_internal(mca_btl_smx_frag_t *frag);
/* Post now if nothing of this peer's is waiting, without a completion to run; false: not
 * posted (nothing done). */
bool mca_btl_smx_send_now(mca_btl_smx_frag_t *frag);
/* Post frag now (the peer's lock held); false: no room. */
bool mca_btl_smx_try_post(mca_btl_smx_frag_t *frag);
/* Post a message of header_size + payload_size bytes (the payload from the convertor; or,
 * with none, all of it at 'header') in several chunks (SMX_KIND_MULTI), all taken at once
 * or none (ep's lock held); false: no room now. */
bool mca_btl_smx_post_multi(mca_btl_smx_endpoint_t *ep, const void *header, size_t header_size,
                            struct opal_convertor_t *convertor, size_t payload_size,
                            mca_btl_base_tag_t tag);
/* Send the message waiting for the peer's queue, if any (ep's lock held); true: none
 * waits any more. */
bool mca_btl_smx_unstall(mca_btl_smx_endpoint_t *ep);
/* ep (its lock held) has pending fragments or gets to serve: on the active list. */
void mca_btl_smx_activate(mca_btl_smx_endpoint_t *ep);
/* A posted fragment, for progress to run its callback: onto the component's stack of
 * completed fragments with a compare-and-swap, no lock (threads that share a core would
 * otherwise sleep on the component's lock, which progress takes on every call:
 * docs/design.md, "Threads: synchronous sends"). Progress takes the whole stack at once,
 * so no fragment pushed can be taken from between (no ABA). */
static inline void mca_btl_smx_completed_push(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_frag_t *top = __atomic_load_n(&mca_btl_smx_component.completed, __ATOMIC_RELAXED);

    do {
        frag->done_next = top;
    } while (!__atomic_compare_exchange_n(&mca_btl_smx_component.completed, &top, frag, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}
/* frag is posted to ep (its lock held): its callback is due (mca_btl_smx_completed_push),
 * once its receiver has taken it where that matters (btl_smx_send.c says where). */
void mca_btl_smx_posted(mca_btl_smx_endpoint_t *ep, mca_btl_smx_frag_t *frag);

END_C_DECLS

#endif /* MCA_BTL_SMX_SEND_H */
