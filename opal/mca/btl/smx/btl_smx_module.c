/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx module: peers (add_procs / del_procs), descriptors, finalize, and the module's
 * table. The segment is in btl_smx_segment.c, endpoints in btl_smx_endpoint.c, progress
 * in btl_smx_recv.c.
 */
#include "opal_config.h"

#include "opal/runtime/opal_progress.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_endpoint.h"
#include "btl_smx_frag.h"
#include "btl_smx_get.h"
#include "btl_smx_pages.h"
#include "btl_smx_policy.h"
#include "btl_smx_push.h"
#include "btl_smx_recv.h"
#include "btl_smx_segment.h"
#include "btl_smx_send.h"
#include "btl_smx_sendi.h"
#include "btl_smx_types.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bml/r2 offers every peer to every module; each module takes only its class's peers
 * (NULL endpoint, reachable bit clear for the others), so a peer is reached by exactly
 * one smx module, whose limits ob1 then uses. reachability is NULL on the single-peer
 * path (add_proc), where the NULL endpoint alone says "not mine". */
static int smx_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                         opal_bitmap_t *reachability)
{
    mca_btl_smx_module_t *module = (mca_btl_smx_module_t *) btl;

    /* The first add_procs builds the policy before any peer is attached (each peer
     * starts from it: mca_btl_smx_policy_start). */
    if (!mca_btl_smx_policy.built) {
        mca_btl_smx_policy_setup();
    }
    for (size_t i = 0; i < nprocs; ++i) {
        const int local_rank = mca_btl_smx_local_rank_of(procs[i]);
        mca_btl_smx_endpoint_t *ep = SMX_NO_PEER == local_rank
                                         ? NULL
                                         : mca_btl_smx_endpoint_of(procs[i], local_rank);

        peers[i] = NULL;
        if (NULL == ep) {
            continue;
        }
        if (!ep->described) {
            ep->described = true;
            opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT,
                                "btl:smx: peer %s (local rank %d): class %s%s",
                                OPAL_NAME_PRINT(ep->proc->proc_name), local_rank,
                                smx_locality_class_name(ep->cls),
                                NULL == ep->smsc_endpoint ? ", no single-copy endpoint" : "");
        }
        if (ep->module != module) {
            continue;
        }
        peers[i] = ep;
        if (NULL != reachability) {
            int rc = opal_bitmap_set_bit(reachability, (int) i);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
        }
    }
    mca_btl_smx_policy_publish();
    return OPAL_SUCCESS;
}

/* Endpoints stay until finalize: del_procs comes when another BTL won the peer or while
 * MPI shuts down, with progress still to run (queued fragments still go out, due
 * completions name a live endpoint, local rank 0's segment stays mapped, and no peer is
 * mapped, or counted in 'attached', twice). */
static int smx_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    (void) btl;
    (void) nprocs;
    (void) procs;
    (void) peers;
    return OPAL_SUCCESS;
}

/* Finalize: what a peer still held of gets and pushes goes, then the peer. */
static void smx_peer_release(mca_btl_smx_endpoint_t *ep)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(&ep->serving))) {
        mca_btl_smx_serve_drop(item);
    }
    mca_btl_smx_push_fini(ep);
    OBJ_RELEASE(ep);
}

/* The peers and the modules share state (an endpoint names its module, a queued
 * completion its endpoint, and progress serves them all): the last module's finalize
 * releases everything at once, after progress is unregistered. */
static int smx_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    (void) btl;
    if (++c->modules_finalized < c->num_modules) {
        return OPAL_SUCCESS;
    }
    if (c->progress_registered) {
        opal_progress_unregister(mca_btl_smx_progress);
        c->progress_registered = false;
    }
    mca_btl_smx_policy_publish(); /* (each peer's ways as measured last) */
    opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                        "btl:smx: %s: %llu gets by single copy, %llu by double copy, %llu "
                        "pushed ahead (%llu of peers' came before their receive), %llu "
                        "eager messages received in place, %llu "
                        "changes of a peer's way as measured, %llu sends queued for room, at "
                        "most %llu of btl_smx_max_frags %d descriptors out at once; %llu pair "
                        "rings, %.0f KiB of chunks made, %.0f KiB of the segment reserved",
                        OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), c->stats.gets_single_copy,
                        c->stats.gets_double_copy, c->stats.pushes_ahead,
                        c->stats.pushes_parked, c->stats.in_place, c->stats.copy_switches,
                        c->stats.sends_queued, c->stats.frags_peak, c->max_frags,
                        c->stats.pair_rings, (double) c->area_used / 1024.0,
                        (double) mca_btl_smx_reserved_bytes() / 1024.0);
    /* Completions nobody progressed any more: their fragments are ours to free. */
    for (mca_btl_smx_frag_t *frag = c->completed, *next; NULL != frag; frag = next) {
        next = frag->done_next;
        mca_btl_smx_frag_release(frag);
    }
    c->completed = NULL;
    mca_btl_smx_chunks_fini(); /* the endpoints hold some */
    for (int p = 0; NULL != c->peers && p < c->num_peers; ++p) {
        if (NULL != c->peers[p]) {
            smx_peer_release(c->peers[p]);
            c->peers[p] = NULL;
        }
    }
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        free(c->modules[cls]);
        c->modules[cls] = NULL;
    }
    mca_btl_smx_segment_destroy();
    free(c->gather);
    c->gather = NULL;
    c->gather_size = 0;
    mca_btl_smx_frag_lists_fini();
    mca_btl_smx_get_lists_fini();
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *smx_alloc(struct mca_btl_base_module_t *btl,
                                            struct mca_btl_base_endpoint_t *endpoint,
                                            uint8_t order, size_t size, uint32_t flags)
{
    mca_btl_smx_frag_t *frag;

    /* (above a fragment: an eager message to a late receiver, btl_smx_skew.c) */
    if (size > btl->btl_max_send_size && size > btl->btl_eager_limit) {
        return NULL;
    }
    frag = mca_btl_smx_frag_alloc(endpoint, size);
    if (NULL == frag) {
        return NULL;
    }
    frag->segments[0].seg_len = size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    return &frag->base;
}

static int smx_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_smx_frag_release((mca_btl_smx_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Up to max_send_size - reserve bytes (more where the eager limit is higher) after
 * 'reserve' bytes of header room: packed, or,
 * where ob1 sends eagerly through here (the module sends in place: peers map my memory)
 * and the data is contiguous, left in the user's buffer, which ob1 keeps until the
 * fragment completes. From there smx_send copies it straight into shared memory (no
 * staging copy), or the receiver copies it through its mapping (SMX_KIND_IN_PLACE, where
 * the peer's word says single copy for its size: btl_smx_policy.h). */
static mca_btl_base_descriptor_t *smx_prepare_src(struct mca_btl_base_module_t *btl,
                                                  struct mca_btl_base_endpoint_t *endpoint,
                                                  struct opal_convertor_t *convertor,
                                                  uint8_t order, size_t reserve, size_t *size,
                                                  uint32_t flags)
{
    mca_btl_smx_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;

    /* ob1 sends an eager message through here whole, whatever size comes back: up to
     * the eager limit, above a fragment to a late receiver (btl_smx_skew.c) */
    const size_t most = btl->btl_eager_limit > btl->btl_max_send_size ? btl->btl_eager_limit
                                                                       : btl->btl_max_send_size;

    if (reserve > most) {
        return NULL;
    }
    if (*size > most - reserve) {
        *size = most - reserve;
    }
    const size_t total = reserve + *size;
    const bool contiguous = mca_btl_smx_component.in_place && 0 != *size
                            && !opal_convertor_need_buffers(convertor)
                            && !opal_convertor_on_device(convertor);
    uint32_t stamp = 0;
    bool place = false;
    if (contiguous && total >= SMX_CHOICE_MIN) { /* as btl_sendi does (btl_smx_policy.h) */
        stamp = mca_btl_smx_stamp(endpoint, false);
        mca_btl_smx_eager_follow(endpoint, total);
        place = mca_btl_smx_in_place(endpoint, total);
    }
    if (place || (contiguous && total <= mca_btl_smx_chunk_room_max())) {
        void *data;

        /* (the buffer holds ob1's header only) */
        frag = mca_btl_smx_frag_alloc(endpoint, reserve + sizeof(struct smx_in_place));
        if (NULL == frag) {
            return NULL;
        }
        frag->base.des_flags = flags;
        frag->base.order = order;
        opal_convertor_get_current_pointer(convertor, &data);
        size_t position = convertor->bConverted + *size; /* (as a pack would leave it: ob1
                                                           sends what follows from there) */
        opal_convertor_set_position(convertor, &position);
        frag->kind = place ? SMX_KIND_IN_PLACE : SMX_KIND_AM;
        frag->stamp = stamp;
        frag->user = data;
        frag->user_len = *size;
        frag->segments[0].seg_len = reserve; /* (ob1 writes its header there) */
        /* (ob1 counts what a fragment delivered by its segments) */
        frag->segments[1].seg_addr.pval = data;
        frag->segments[1].seg_len = *size;
        frag->base.des_segment_count = 2;
        return &frag->base;
    }
    frag = mca_btl_smx_frag_alloc(endpoint, total);
    if (NULL == frag) {
        return NULL;
    }
    frag->base.des_flags = flags;
    frag->base.order = order;
    iov.iov_base = (unsigned char *) frag->segments[0].seg_addr.pval + reserve;
    iov.iov_len = *size;
    if (opal_convertor_pack(convertor, &iov, &iov_count, size) < 0) {
        mca_btl_smx_frag_release(frag);
        return NULL;
    }
    frag->segments[0].seg_len = reserve + *size;
    return &frag->base;
}

/* ob1's mca_pml_ob1_dump (a debugger's or a hung job's "where is my message?") calls
 * this for every peer without checking for NULL: what stands between us and the peer. */
static void smx_dump(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     int verbose)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    (void) btl;
    (void) verbose;
    if (NULL == ep) {
        return;
    }
    opal_output(0,
                "btl:smx: %s -> local rank %d (class %s): %" PRIu32 " messages through its "
                "queue, %s; %s; %d chunks of mine in flight to it; %zu fragments waiting for "
                "room, %zu gets being served, %d pulled; %d of btl_smx_max_frags %d "
                "descriptors out",
                OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), ep->peer_local_rank,
                smx_locality_class_name(ep->cls), ep->queued,
                NULL != ep->out ? "then a ring of mine" : "no ring of mine",
                NULL != ep->in ? "a ring of its own to me" : "no ring of its own to me",
                ep->chunks_out, opal_list_get_size(&ep->pending), opal_list_get_size(&ep->serving),
                __atomic_load_n(&ep->pulling, __ATOMIC_RELAXED), c->frags_out, c->max_frags);
}

static int smx_register_error(struct mca_btl_base_module_t *btl,
                              mca_btl_base_module_error_cb_fn_t cbfunc)
{
    (void) btl;
    mca_btl_smx_component.error_cb = cbfunc; /* ob1 registers the same one on every module */
    return OPAL_SUCCESS;
}

/* btl_send: post the fragment; ob1's rendezvous header after a registration that names a
 * push starts the push (btl_smx_push.c), served now: this process has nothing else to
 * do. */
static int smx_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag)
{
    mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) descriptor;

    (void) btl;
    frag->tag = tag;
    frag->endpoint = endpoint;
    /* A payload that prepare_src left in the user's buffer, copied into shared memory now,
     * with no callback asked for: complete at once (ob1 completes its send request now,
     * as after btl_sendi). Under threads its callback runs from progress, as any other's
     * (mca_btl_smx_posted says why). */
    const uint32_t asked = frag->base.des_flags;
    if (NULL != frag->user && SMX_KIND_AM == frag->kind && !opal_using_threads()
        && 0 == (asked & MCA_BTL_DES_SEND_ALWAYS_CALLBACK)
        && 0 != (asked & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) && mca_btl_smx_send_now(frag)) {
        mca_btl_smx_frag_release(frag);
        return 1;
    }
    /* The callback (if any) always comes from progress. */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    int rc = mca_btl_smx_send_internal(frag);
    if (OPAL_UNLIKELY(endpoint->push_armed) && mca_btl_smx_push_start(endpoint)) {
        (void) mca_btl_smx_get_serve(endpoint);
    }
    return rc;
}

mca_btl_base_module_t mca_btl_smx_module_template = {
    .btl_component = &mca_btl_smx_component.super,
    .btl_add_procs = smx_add_procs,
    .btl_del_procs = smx_del_procs,
    .btl_finalize = smx_finalize,
    .btl_alloc = smx_alloc,
    .btl_free = smx_free,
    .btl_prepare_src = smx_prepare_src,
    .btl_send = smx_send,
    .btl_sendi = mca_btl_smx_sendi,
    .btl_get = mca_btl_smx_get,
    .btl_put = NULL, /* set at init where an smsc component is selected */
    .btl_register_mem = mca_btl_smx_register_mem,
    .btl_deregister_mem = mca_btl_smx_deregister_mem,
    .btl_dump = smx_dump,
    .btl_register_error = smx_register_error,
};
