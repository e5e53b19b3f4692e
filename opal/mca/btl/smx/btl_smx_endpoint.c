/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx endpoints: a peer's endpoint, made when it is first seen (add_procs, or the
 * first message of a process of another job), with its segment mapped and its class
 * found.
 */
#include "opal_config.h"

#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/shmem/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_endpoint.h"
#include "btl_smx_frag.h"
#include "btl_smx_policy.h"
#include "btl_smx_segment.h"
#include "btl_smx_types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void smx_endpoint_construct(mca_btl_smx_endpoint_t *ep)
{
    /* everything after the list item's header starts at 0, NULL or false */
    memset((char *) ep + sizeof(ep->super), 0, sizeof(*ep) - sizeof(ep->super));
    OBJ_CONSTRUCT(&ep->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->push_in_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    OBJ_CONSTRUCT(&ep->serving, opal_list_t);
    smx_store_init(&ep->store);
}

static void smx_endpoint_destruct(mca_btl_smx_endpoint_t *ep)
{
    opal_list_item_t *item;

    /* (its serves and pushes went at finalize: smx_peer_release, btl_smx_module.c) */
    OBJ_DESTRUCT(&ep->serving);
    /* Fragments never posted (finalize with no room at the peer): back to the pool. */
    while (NULL != (item = opal_list_remove_first(&ep->pending))) {
        mca_btl_smx_frag_release((mca_btl_smx_frag_t *) item);
    }
    OBJ_DESTRUCT(&ep->pending);
    if (NULL != ep->smsc_endpoint) {
        MCA_SMSC_CALL(return_endpoint, ep->smsc_endpoint);
    }
    if (NULL != ep->peer_segment) {
        (void) opal_shmem_segment_detach(ep->peer_ds);
    }
    free(ep->peer_ds);
    OBJ_DESTRUCT(&ep->lock);
    OBJ_DESTRUCT(&ep->push_in_lock);
}

OBJ_CLASS_INSTANCE(mca_btl_smx_endpoint_t, opal_list_item_t, smx_endpoint_construct,
                   smx_endpoint_destruct);

/* The locality class of a peer with this cpuset (btl_smx_locality.c). Not the runtime's
 * locality flags (OPAL_PROC_ON_L2CACHE...): init creates a module per class that can
 * occur here from my binding and hwloc alone, before any peer is known, and a pair's
 * class must come from the same rule applied to the same two cpusets. */
static int smx_peer_class(const char *peer_cpuset)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int cls = SMX_CLASS_REMOTE;

    if (NULL != opal_hwloc_topology) {
        hwloc_bitmap_t peer = hwloc_bitmap_alloc();
        if (NULL != peer) {
            if (NULL == peer_cpuset || '\0' == *peer_cpuset
                || 0 != hwloc_bitmap_list_sscanf(peer, peer_cpuset)) {
                hwloc_bitmap_zero(peer);
            }
            cls = smx_locality_class(opal_hwloc_topology, (hwloc_bitmap_t) c->my_cpuset, peer);
            hwloc_bitmap_free(peer);
        }
    }
    return cls;
}

/* Present classes cover every peer (btl_smx_locality.h); should a topology ever
 * disagree, the nearest class that has a module takes the peer, a wider one first. */
static int smx_module_class(int cls)
{
    for (int d = 0; d < 2 * SMX_CLASS_COUNT; ++d) {
        int k = d < SMX_CLASS_COUNT ? cls + d : cls - (d - SMX_CLASS_COUNT) - 1;
        if (k >= 0 && k < SMX_CLASS_COUNT && NULL != mca_btl_smx_component.modules[k]) {
            return k;
        }
    }
    return 0; /* init creates at least one module */
}

/* Map the segment of a peer (SMX_GUEST: a process of another job on this node) and
 * take a slot in its queue. */
static int smx_attach(mca_btl_smx_endpoint_t *ep, opal_proc_t *proc, int peer_local_rank)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const bool guest = SMX_GUEST == peer_local_rank;
    const size_t fixed = offsetof(struct smx_modex, data);
    const size_t name_at = offsetof(opal_shmem_ds_t, seg_name);
    uint32_t ds_size = 0;
    char *blob = NULL, *cpuset;
    size_t blob_size = 0;
    int32_t fd;
    int probe = -1, rc;

    if (peer_local_rank == c->local_rank) {
        return OPAL_ERR_UNREACH;
    }
    /* Another job's values are not in my job's local store: PMIx fetches them. */
    if (guest) {
        OPAL_MODEX_RECV(rc, &c->super.btl_version, &proc->proc_name, (void **) &blob,
                        &blob_size);
    } else {
        OPAL_MODEX_RECV_IMMEDIATE(rc, &c->super.btl_version, &proc->proc_name,
                                  (void **) &blob, &blob_size);
    }
    if (OPAL_SUCCESS == rc && NULL != blob && blob_size > fixed) {
        memcpy(&ds_size, blob + offsetof(struct smx_modex, ds_size), sizeof(ds_size));
    }
    /* (a descriptor with at least a name's NUL, then a cpuset string, NUL-terminated) */
    if (OPAL_SUCCESS != rc || NULL == blob || ds_size <= name_at
        || ds_size > sizeof(opal_shmem_ds_t) || blob_size <= fixed + ds_size
        || '\0' != blob[blob_size - 1]
        || NULL == (ep->peer_ds = calloc(1, sizeof(opal_shmem_ds_t)))) {
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    /* (copied out: the buffer PMIx hands back need not be aligned for the struct) */
    memcpy(ep->peer_ds, blob + fixed, ds_size);
    memcpy(&fd, blob + offsetof(struct smx_modex, fd), sizeof(fd));
    cpuset = blob + fixed + ds_size;
    ep->peer_ds->seg_name[sizeof(ep->peer_ds->seg_name) - 1] = '\0';
    if (guest) {
        /* Its file went once its own job had mapped it: the descriptor its creator keeps
         * open reaches the same memory (for a process of the same user, as CMA); kept open
         * until I have reserved the page of its header I write my name to. */
        if (fd >= 0) {
            snprintf(ep->peer_ds->seg_name, sizeof(ep->peer_ds->seg_name), "/proc/%d/fd/%d",
                     (int) ep->peer_ds->seg_cpid, (int) fd);
            probe = open(ep->peer_ds->seg_name, O_RDWR | O_CLOEXEC);
        }
        if (probe < 0) {
            opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                                "btl:smx: cannot open the segment of %s, of "
                                "another job, as %s: %s", OPAL_NAME_PRINT(proc->proc_name),
                                fd >= 0 ? ep->peer_ds->seg_name : "(none kept open)",
                                fd >= 0 ? strerror(errno) : "");
            free(blob);
            return OPAL_ERR_UNREACH;
        }
    }
    ep->peer_segment = opal_shmem_segment_attach(ep->peer_ds);
    if (NULL == ep->peer_segment) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                            "btl:smx: cannot map the segment of %s (%s)",
                            OPAL_NAME_PRINT(proc->proc_name), ep->peer_ds->seg_name);
        if (probe >= 0) {
            close(probe);
        }
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    struct smx_segment_header *h = ep->peer_segment;
    if (SMX_SEGMENT_MAGIC != __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE)
        || (!guest && h->num_local != (uint32_t) c->num_local) || h->num_local < 1
        || h->num_local > (1u << 20) || h->size > ep->peer_ds->seg_size
        || h->queue_entries < 2 || 0 != (h->queue_entries & (h->queue_entries - 1))
        || h->area_offset < sizeof(*h) + (uint64_t) h->queue_entries * sizeof(struct smx_queue_entry)
        || h->area_offset > h->rings_offset || h->rings_offset > h->size) {
        if (probe >= 0) {
            close(probe);
        }
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    if (guest) {
        /* A slot in its queue, my name in it before any message of mine names the slot. Its
         * owner reserved its header's first page only: the page my name goes to is taken
         * from the file system first (a full one is no SIGBUS, just no slot). */
        const uint32_t k = __atomic_fetch_add(&h->guests, 1, __ATOMIC_RELAXED);
        const off_t at = (off_t) (offsetof(struct smx_segment_header, guest_name)
                                  + (size_t) k * sizeof(h->guest_name[0]));
        uint64_t name;
        rc = k < SMX_GUESTS_MAX ? posix_fallocate(probe, at, sizeof(h->guest_name[0])) : 0;
        close(probe);
        if (k >= SMX_GUESTS_MAX || 0 != rc) {
            opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                                k >= SMX_GUESTS_MAX ? "btl:smx: %s has taken %d processes of "
                                                      "other jobs already, the most it can%s"
                                                    : "btl:smx: no room for my name in the "
                                                      "segment of %s (%d: %s)",
                                OPAL_NAME_PRINT(proc->proc_name),
                                k >= SMX_GUESTS_MAX ? SMX_GUESTS_MAX : rc,
                                k >= SMX_GUESTS_MAX ? "" : strerror(rc));
            free(blob);
            return OPAL_ERR_UNREACH;
        }
        memcpy(&name, &OPAL_PROC_MY_NAME, sizeof(name));
        __atomic_store_n(&h->guest_name[k], name, __ATOMIC_RELEASE);
        ep->slot_there = h->num_local + k;
    } else {
        ep->slot_there = (uint32_t) c->local_rank;
        /* Every other local process of the job maps this file once; the last one unlinks
         * it. */
        if (__atomic_add_fetch(&h->attached, 1, __ATOMIC_ACQ_REL) == (uint32_t) c->num_local - 1) {
            (void) opal_shmem_unlink(ep->peer_ds);
        }
    }
    ep->cls = smx_module_class(smx_peer_class(cpuset));
    ep->module = c->modules[ep->cls];
    free(blob);
    /* Nothing of its chunk area is mapped here before I read it: its owner reserves and
     * writes a chunk's pages as it first uses them, and a read of a page it has not (a
     * hole in a tmpfs file) would take memory for it. A first read maps the pages around
     * it that are there (the kernel's fault-around: 16 of them with its defaults). */

    ep->proc = proc;
    ep->peer_local_rank = peer_local_rank;
    if (NULL != mca_smsc && !c->smsc_forbidden) {
        /* NULL is fine: this peer then gets double copy only (btl_smx_get.c) */
        ep->smsc_endpoint = MCA_SMSC_CALL(get_endpoint, proc);
    }
    mca_btl_smx_policy_start(ep);
    return OPAL_SUCCESS;
}

int mca_btl_smx_local_rank_of(opal_proc_t *proc)
{
    uint16_t peer_local_rank, *rank_ptr = &peer_local_rank;
    int rc;

    /* btl/self carries messages to myself */
    if (proc == opal_proc_local_get() || !OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) {
        return SMX_NO_PEER;
    }
    if (proc->proc_name.jobid != OPAL_PROC_MY_NAME.jobid) {
        return SMX_GUEST;
    }
    OPAL_MODEX_RECV_VALUE(rc, PMIX_LOCAL_RANK, &proc->proc_name, &rank_ptr, PMIX_UINT16);
    if (OPAL_SUCCESS != rc || peer_local_rank >= mca_btl_smx_component.num_local) {
        return SMX_NO_PEER;
    }
    return peer_local_rank;
}

/* The endpoint of a peer (local rank, or SMX_GUEST), attached on first sight (for every
 * module); NULL if it cannot be reached. A process of another job may be attached from
 * add_procs and from progress (its first message) at once: under the lock. */
mca_btl_smx_endpoint_t *mca_btl_smx_endpoint_of(opal_proc_t *proc, int local_rank)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_endpoint_t *ep = NULL;

    if (SMX_GUEST != local_rank) {
        if (NULL == c->peers[local_rank]) {
            ep = OBJ_NEW(mca_btl_smx_endpoint_t);
            if (NULL != ep && OPAL_SUCCESS != smx_attach(ep, proc, local_rank)) {
                OBJ_RELEASE(ep);
                ep = NULL;
            }
            c->peers[local_rank] = ep;
        }
        return c->peers[local_rank];
    }
    OPAL_THREAD_LOCK(&c->lock);
    for (int at = c->num_local; NULL == ep && at < c->num_peers; ++at) {
        if (0 == opal_compare_proc(c->peers[at]->proc->proc_name, proc->proc_name)) {
            ep = c->peers[at];
        }
    }
    if (NULL == ep && c->num_peers < c->num_local + SMX_GUESTS_MAX
        && NULL != (ep = OBJ_NEW(mca_btl_smx_endpoint_t))) {
        if (OPAL_SUCCESS != smx_attach(ep, proc, SMX_GUEST)) {
            OBJ_RELEASE(ep);
            ep = NULL;
        } else {
            c->peers[c->num_peers++] = ep;
        }
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    return ep;
}

/* The peer of another job that took slot k of my queue, from the name it left in my
 * header: the first message of a spawned process may arrive before my own add_procs
 * for it. NULL if it cannot be reached. */
mca_btl_smx_endpoint_t *mca_btl_smx_guest(uint32_t k)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_segment_header *h = c->segment;
    opal_process_name_t name;
    opal_proc_t *proc;
    uint64_t raw;

    if (k >= SMX_GUESTS_MAX) {
        return NULL;
    }
    if (NULL == c->guests[k]) {
        raw = __atomic_load_n(&h->guest_name[k], __ATOMIC_ACQUIRE);
        memcpy(&name, &raw, sizeof(name));
        /* (on this node, as it wrote here; of another job, or it would not use a slot) */
        proc = 0 == raw || name.jobid == OPAL_PROC_MY_NAME.jobid ? NULL : opal_proc_for_name(name);
        if (NULL == proc) {
            return NULL;
        }
        c->guests[k] = mca_btl_smx_endpoint_of(proc, SMX_GUEST);
    }
    return c->guests[k];
}

/* An error that leaves a peer waiting for ever: the upper layer's error callback ends
 * the job (ob1's aborts it), naming the peer and what went wrong. */
void mca_btl_smx_fatal(mca_btl_smx_endpoint_t *ep, const char *what)
{
    mca_btl_base_module_error_cb_fn_t cb = mca_btl_smx_component.error_cb;
    char info[160];

    snprintf(info, sizeof(info), "btl/smx on %s: %s from %s", opal_process_info.nodename, what,
             OPAL_NAME_PRINT(ep->proc->proc_name));
    if (NULL != cb) {
        cb(&ep->module->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, info);
    }
    opal_output(0, "%s: no error handler to end the job, aborting", info);
    abort();
}
