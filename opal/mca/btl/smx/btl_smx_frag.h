/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx fragments: the descriptor ob1 fills (alloc, prepare_src) before btl_send, and
 * the staging buffer behind it. The shared-memory side of a fragment is a chunk or ring
 * lines of the sender's segment, which its receiver hands back (btl_smx_fifo.h); this
 * private part is recycled by the sender alone.
 */
#ifndef MCA_BTL_SMX_FRAG_H
#define MCA_BTL_SMX_FRAG_H

#include "opal_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/mca/btl/btl.h"

BEGIN_C_DECLS

struct mca_btl_base_endpoint_t;

/* An opal_free_list_t item (its base descriptor's super); the buffer is the item's
 * payload: btl_smx_frag_size bytes, or mca_btl_smx_small_frag_bytes(). */
struct mca_btl_smx_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[2]; /* the buffer's; the user's data left in place */
    struct mca_btl_base_endpoint_t *endpoint;
    unsigned char *data;
    unsigned char *big; /* a message above a fragment: its own buffer (skew), or NULL */
    mca_btl_base_tag_t tag;
    uint8_t kind; /* enum smx_kind */
    bool counted; /* counted in the component's frags_out */
    bool small;   /* from the list of small descriptors (never refused, btl_smx_frag.c) */
    struct mca_btl_smx_frag_t *done_next; /* on the component's stack of completed ones */
    uint64_t taken_at; /* its callback waits for the reader's count of a ring's lines to
                          reach this (0: none; mca_btl_smx_posted) */
    /* The payload left in the user's buffer by prepare_src (contiguous data, where the
     * module sends in place): copied at post (SMX_KIND_AM), or not at all, the receiver
     * copying through its mapping (SMX_KIND_IN_PLACE). NULL: all of it in the buffer. */
    const unsigned char *user;
    size_t user_len;
    uint32_t stamp; /* the sender's clock for the receiver (btl_smx_policy.h); 0: none */
};
typedef struct mca_btl_smx_frag_t mca_btl_smx_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_smx_frag_t);

/* Bytes a small descriptor holds: an ob1 header (at most about 100 bytes) and the smsc
 * component's registration handle, with room to spare. */
#define SMX_SMALL_FRAG_BYTES 256
size_t mca_btl_smx_small_frag_bytes(void);
/* The two free lists, once the sizes are known (init); their end (finalize). */
int mca_btl_smx_frag_lists_init(void);
void mca_btl_smx_frag_lists_fini(void);
/* A descriptor that holds 'size' bytes (above btl_smx_frag_size: in a buffer of its
 * own, at most SMX_BIG_FRAGS_MAX of those out); NULL at btl_smx_max_frags (large ones
 * only). */
#define SMX_BIG_FRAGS_MAX 16
mca_btl_smx_frag_t *mca_btl_smx_frag_alloc(struct mca_btl_base_endpoint_t *endpoint, size_t size);
void mca_btl_smx_frag_release(mca_btl_smx_frag_t *frag);
/* Off the count of fragments out, ahead of its release (see btl_smx_frag.c). */
void mca_btl_smx_frag_uncount(mca_btl_smx_frag_t *frag);

END_C_DECLS

#endif /* MCA_BTL_SMX_FRAG_H */
