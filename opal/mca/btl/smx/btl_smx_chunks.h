/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx chunks: my segment's chunk area, carved as first needed and reused, and its
 * ring area (the layout in btl_smx_types.h). btl_smx_send.c alone takes and gives back
 * chunks; the others size the areas and reclaim what receivers are through with.
 */
#ifndef MCA_BTL_SMX_CHUNKS_H
#define MCA_BTL_SMX_CHUNKS_H

#include "btl_smx.h"
#include "btl_smx_frag.h"
#include "btl_smx_types.h"

#include <stddef.h>
#include <stdint.h>

/* Chunks of mine that receivers are through with go back to use (takes the component
 * lock). */
void mca_btl_smx_chunks_reclaim(void);
void mca_btl_smx_chunks_fini(void);
/* The chunks my area must always have, their pages reserved at init (after
 * mca_btl_smx_skew_init: one of each size, and as many whole fragments as a message to a
 * late receiver takes), or the whole area where btl_smx_budget_kb is set: 0, or the errno
 * of the reservation that failed (btl/smx is then not used). */
int mca_btl_smx_chunks_start(void);
/* The smallest chunk area that holds enough chunks of each size to keep messages flowing. */
uint64_t mca_btl_smx_area_min(void);
/* 'auto' rings: the first SMX_RINGS_LARGE a process makes are 512 KiB, later ones 128 KiB
 * (mca_btl_smx_segment_create says why). */
#define SMX_RINGS_LARGE 4
/* Bytes of the first n pair rings I make, headers included. */
uint64_t mca_btl_smx_rings_bytes(int n);
/* Payload bytes of a whole-fragment chunk; how many of them my area may carve. */
size_t mca_btl_smx_chunk_room_max(void);
uint64_t mca_btl_smx_frag_chunks_max(void);

/* Private record of one chunk of my area. */
struct smx_chunk_slot {
    struct smx_chunk_slot *next;
    struct smx_chunk *chunk;
    uint64_t offset;                /* in my segment */
    mca_btl_smx_endpoint_t *ep;     /* whose message it holds while busy */
    struct smx_chunk_slot *parts;   /* the chunks of the message it lists (SMX_KIND_MULTI) */
    uint64_t release;               /* ring records: free once 'consumed' reaches this */
    uint32_t rot;                   /* where a ring record's payload goes in it next */
    uint32_t reserved;              /* its bytes (from its header) whose pages are reserved */
    int cls;
};

/* Payload bytes of a chunk of each class: ob1 headers and get requests; an eager
 * message at btl/sm's eager limit with its header; a whole fragment. */
static inline size_t smx_chunk_room(int cls)
{
    static const size_t room[SMX_CHUNK_CLASSES - 1] = {256, 4096 + 256};
    const size_t frag = (size_t) mca_btl_smx_component.frag_size;
    return cls < SMX_CHUNK_CLASSES - 1 && room[cls] < frag ? room[cls] : frag;
}

/* Bytes of the lines of the k-th ring I make (from 0). */
static inline uint32_t smx_ring_size(int k)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    return k < SMX_RINGS_LARGE ? c->ring_size : c->ring_size_rest;
}

/* Carve 'bytes' (whole cache lines) from my chunk area for a chunk of class 'cls', or
 * from my ring area for a ring (cls SMX_CHUNK_CLASSES); NULL when that has had its
 * share. */
void *mca_btl_smx_area_carve(int cls, size_t bytes, uint64_t *offset);
/* A chunk of class 'cls' to ep: a ready one, one back from a receiver, or a new one; or
 * for 'len' payload bytes, of the smallest class that holds them (component lock held);
 * the same, taking the component lock. NULL: none now. */
struct smx_chunk_slot *mca_btl_smx_chunk_take(mca_btl_smx_endpoint_t *ep, int cls);
struct smx_chunk_slot *mca_btl_smx_chunk_take_for(mca_btl_smx_endpoint_t *ep, size_t len);
struct smx_chunk_slot *mca_btl_smx_chunk_get(mca_btl_smx_endpoint_t *ep, size_t len);
/* A chunk back from its receiver, with the chunks it listed (component lock held). */
void mca_btl_smx_chunk_unget(struct smx_chunk_slot *s);
/* Chunks taken for one message and not sent, chained by 'next', back at once: with the
 * component lock held, or taking it. */
void mca_btl_smx_chunks_give_back(struct smx_chunk_slot *s);
void mca_btl_smx_chunks_unget(struct smx_chunk_slot *s);
/* The chunks of ep's ring records the reader is through with, its count of lines consumed
 * being 'seen' (component lock held). */
void mca_btl_smx_ring_chunks_reclaim(mca_btl_smx_endpoint_t *ep, uint64_t seen);

#endif /* MCA_BTL_SMX_CHUNKS_H */
