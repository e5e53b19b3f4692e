/*
 * btl/smx module: the segment, peers (add_procs / del_procs), fragments, progress.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void smx_endpoint_construct(mca_btl_smx_endpoint_t *ep)
{
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    ep->peer_segment = NULL;
    ep->smsc_endpoint = NULL;
    ep->out_head = ep->in_tail = 0;
}

static void smx_endpoint_destruct(mca_btl_smx_endpoint_t *ep)
{
    OBJ_DESTRUCT(&ep->pending);
    if (ep->smsc_endpoint) {
        MCA_SMSC_CALL(return_endpoint, ep->smsc_endpoint);
    }
    if (ep->peer_segment) {
        munmap(ep->peer_segment, ep->peer_segment_size);
    }
}

OBJ_CLASS_INSTANCE(mca_btl_smx_endpoint_t, opal_list_item_t, smx_endpoint_construct,
                   smx_endpoint_destruct);
OBJ_CLASS_INSTANCE(mca_btl_smx_frag_t, mca_btl_base_descriptor_t, NULL, NULL);

static size_t smx_ring_bytes(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    size_t slot = (sizeof(struct smx_slot_header) + (size_t) c->frag_size + SMX_CACHE_LINE - 1)
                  & ~(size_t) (SMX_CACHE_LINE - 1);
    return sizeof(struct smx_ring) + slot * (size_t) c->ring_slots;
}

/* My segment: a file in /dev/shm named after the job and my rank, so concurrent jobs never
 * collide; PMIx removes it at job end even if this process is killed. */
int mca_btl_smx_segment_create(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    size_t ring_bytes = smx_ring_bytes();
    int fd, rc;

    c->local_rank = opal_process_info.my_local_rank;
    c->num_local = (int) opal_process_info.num_local_peers + 1;
    c->segment_size = sizeof(struct smx_segment_header) + ring_bytes * (size_t) c->num_local;
    /* No shell-pattern characters in the name: PMIx's cleanup matches it as a pattern. */
    snprintf(c->segment_name, sizeof(c->segment_name), "/dev/shm/smx.%x.%u.%d",
             (unsigned) OPAL_PROC_MY_NAME.jobid, OPAL_PROC_MY_NAME.vpid, (int) getpid());
    fd = open(c->segment_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        opal_output_verbose(1, c->output, "btl:smx: cannot create %s: %s", c->segment_name,
                            strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (0 != ftruncate(fd, (off_t) c->segment_size)) {
        close(fd);
        unlink(c->segment_name);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    c->segment = mmap(NULL, c->segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (MAP_FAILED == c->segment) {
        unlink(c->segment_name);
        c->segment = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    opal_pmix_register_cleanup(c->segment_name, false, false, false);

    struct smx_segment_header *h = c->segment;
    h->magic = SMX_SEGMENT_MAGIC;
    h->num_local = (uint32_t) c->num_local;
    h->ring_bytes = (uint32_t) ring_bytes;
    for (int s = 0; s < c->num_local; ++s) {
        struct smx_ring *ring = smx_segment_ring(c->segment, s);
        ring->slots = (uint32_t) c->ring_slots;
        ring->slot_size = (uint32_t) ((ring_bytes - sizeof(*ring)) / (size_t) c->ring_slots);
    }

    c->peers = calloc((size_t) c->num_local, sizeof(*c->peers));
    if (NULL == c->peers) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    OPAL_MODEX_SEND(rc, PMIX_LOCAL, &c->super.btl_version, c->segment_name,
                    strlen(c->segment_name) + 1);
    return rc;
}

static int smx_attach(mca_btl_smx_endpoint_t *ep, opal_proc_t *proc)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    uint16_t peer_local_rank, *rank_ptr = &peer_local_rank;
    char *name = NULL;
    size_t name_size = 0;
    struct stat st;
    int rc, fd;

    OPAL_MODEX_RECV_VALUE(rc, PMIX_LOCAL_RANK, &proc->proc_name, &rank_ptr, PMIX_UINT16);
    if (OPAL_SUCCESS != rc || peer_local_rank >= c->num_local) {
        return OPAL_ERR_UNREACH;
    }
    OPAL_MODEX_RECV_IMMEDIATE(rc, &c->super.btl_version, &proc->proc_name, (void **) &name,
                              &name_size);
    if (OPAL_SUCCESS != rc || NULL == name) {
        return OPAL_ERR_UNREACH;
    }
    fd = open(name, O_RDWR);
    if (fd < 0 || 0 != fstat(fd, &st)) {
        opal_output_verbose(1, c->output, "btl:smx: cannot open peer segment %s: %s", name,
                            strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        free(name);
        return OPAL_ERR_UNREACH;
    }
    free(name);
    ep->peer_segment_size = (size_t) st.st_size;
    ep->peer_segment = mmap(NULL, ep->peer_segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                            0);
    close(fd);
    if (MAP_FAILED == ep->peer_segment) {
        ep->peer_segment = NULL;
        return OPAL_ERR_UNREACH;
    }
    if (SMX_SEGMENT_MAGIC != ((struct smx_segment_header *) ep->peer_segment)->magic) {
        return OPAL_ERR_UNREACH;
    }
    ep->proc = proc;
    ep->peer_local_rank = peer_local_rank;
    ep->out = smx_segment_ring(ep->peer_segment, c->local_rank);
    ep->in = smx_segment_ring(c->segment, peer_local_rank);
    if (NULL != mca_smsc) {
        ep->smsc_endpoint = MCA_SMSC_CALL(get_endpoint, proc);
    }
    return OPAL_SUCCESS;
}

static int smx_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                         opal_bitmap_t *reachability)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    for (size_t i = 0; i < nprocs; ++i) {
        peers[i] = NULL;
        if (procs[i] == opal_proc_local_get() || !OPAL_PROC_ON_LOCAL_NODE(procs[i]->proc_flags)) {
            continue; /* btl/self carries messages to myself */
        }
        mca_btl_smx_endpoint_t *ep = OBJ_NEW(mca_btl_smx_endpoint_t);
        if (NULL == ep) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        if (OPAL_SUCCESS != smx_attach(ep, procs[i])) {
            OBJ_RELEASE(ep);
            continue;
        }
        if (NULL == ep->smsc_endpoint && NULL != mca_smsc) {
            /* single copy unusable with this peer: ob1 must not ask for get/put */
            OBJ_RELEASE(ep);
            continue;
        }
        c->peers[ep->peer_local_rank] = ep;
        peers[i] = ep;
        if (NULL != reachability) {
            opal_bitmap_set_bit(reachability, (int) i);
        }
        opal_output_verbose(10, c->output, "btl:smx: peer %s is local rank %d",
                            OPAL_NAME_PRINT(procs[i]->proc_name), ep->peer_local_rank);
    }
    return OPAL_SUCCESS;
}

static int smx_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    for (size_t i = 0; i < nprocs; ++i) {
        if (peers[i]) {
            c->peers[peers[i]->peer_local_rank] = NULL;
            OBJ_RELEASE(peers[i]);
        }
    }
    return OPAL_SUCCESS;
}

static int smx_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    for (int p = 0; c->peers && p < c->num_local; ++p) {
        if (c->peers[p]) {
            OBJ_RELEASE(c->peers[p]);
            c->peers[p] = NULL;
        }
    }
    free(c->peers);
    c->peers = NULL;
    if (c->segment) {
        munmap(c->segment, c->segment_size);
        unlink(c->segment_name);
        c->segment = NULL;
    }
    while (c->free_frags) {
        mca_btl_smx_frag_t *f = c->free_frags;
        c->free_frags = f->next_free;
        OBJ_DESTRUCT(f);
        free(f);
    }
    return OPAL_SUCCESS;
}

mca_btl_smx_frag_t *mca_btl_smx_frag_alloc(mca_btl_smx_endpoint_t *endpoint)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_frag_t *frag;

    OPAL_THREAD_LOCK(&c->lock);
    frag = c->free_frags;
    if (frag) {
        c->free_frags = frag->next_free;
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL == frag) {
        frag = malloc(sizeof(*frag) + (size_t) c->frag_size);
        if (NULL == frag) {
            return NULL;
        }
        OBJ_CONSTRUCT(frag, mca_btl_smx_frag_t);
    }
    frag->endpoint = endpoint;
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

void mca_btl_smx_frag_release(mca_btl_smx_frag_t *frag)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    OPAL_THREAD_LOCK(&c->lock);
    frag->next_free = c->free_frags;
    c->free_frags = frag;
    OPAL_THREAD_UNLOCK(&c->lock);
}

static mca_btl_base_descriptor_t *smx_alloc(struct mca_btl_base_module_t *btl,
                                            struct mca_btl_base_endpoint_t *endpoint,
                                            uint8_t order, size_t size, uint32_t flags)
{
    if (size > btl->btl_max_send_size) {
        return NULL;
    }
    mca_btl_smx_frag_t *frag = mca_btl_smx_frag_alloc(endpoint);
    if (NULL == frag) {
        return NULL;
    }
    frag->segment.seg_len = size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    return &frag->base;
}

static int smx_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_smx_frag_release((mca_btl_smx_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Pack up to max_send_size - reserve bytes after 'reserve' bytes of header room. */
static mca_btl_base_descriptor_t *smx_prepare_src(struct mca_btl_base_module_t *btl,
                                                  struct mca_btl_base_endpoint_t *endpoint,
                                                  struct opal_convertor_t *convertor,
                                                  uint8_t order, size_t reserve, size_t *size,
                                                  uint32_t flags)
{
    if (reserve > btl->btl_max_send_size) {
        return NULL;
    }
    if (*size > btl->btl_max_send_size - reserve) {
        *size = btl->btl_max_send_size - reserve;
    }
    mca_btl_smx_frag_t *frag = mca_btl_smx_frag_alloc(endpoint);
    if (NULL == frag) {
        return NULL;
    }
    struct iovec iov = {.iov_base = frag->data + reserve, .iov_len = *size};
    uint32_t iov_count = 1;
    if (opal_convertor_pack(convertor, &iov, &iov_count, size) < 0) {
        mca_btl_smx_frag_release(frag);
        return NULL;
    }
    frag->segment.seg_len = reserve + *size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    return &frag->base;
}

static struct mca_btl_base_registration_handle_t *
smx_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                 void *base, size_t size, uint32_t flags)
{
    return (struct mca_btl_base_registration_handle_t *) MCA_SMSC_CALL(register_region, base,
                                                                       size);
}

static int smx_deregister_mem(struct mca_btl_base_module_t *btl,
                              struct mca_btl_base_registration_handle_t *handle)
{
    MCA_SMSC_CALL(deregister_region, (void *) handle);
    return OPAL_SUCCESS;
}

/* Deliver what my rings hold, retry fragments waiting for a slot, then complete the
 * fragments already sent. */
int mca_btl_smx_progress(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int events = 0;

    if (NULL == c->peers) {
        return 0;
    }
    /* One reader per ring: another thread already polling is enough. */
    if (opal_using_threads() && opal_mutex_trylock(&c->poll_lock)) {
        return 0;
    }
    for (int p = 0; p < c->num_local; ++p) {
        mca_btl_smx_endpoint_t *ep = c->peers[p];
        if (NULL == ep) {
            continue;
        }
        for (int n = 0; n < 8; ++n) { /* a few per peer: fairness between peers */
            struct smx_slot_header *slot = smx_ring_slot(ep->in, ep->in_tail);
            if (!smx_slot_is_full(slot)) {
                break;
            }
            const mca_btl_active_message_callback_t *reg =
                mca_btl_base_active_message_trigger + slot->tag;
            mca_btl_base_segment_t seg = {.seg_addr.pval = slot + 1, .seg_len = slot->len};
            mca_btl_base_receive_descriptor_t desc = {.endpoint = ep, .des_segments = &seg,
                                                      .des_segment_count = 1,
                                                      .tag = slot->tag, .cbdata = reg->cbdata};
            ep->in_tail++;
            reg->cbfunc(&mca_btl_smx_module, &desc);
            smx_slot_set(slot, 0);
            events++;
        }
    }
    if (opal_using_threads()) {
        opal_mutex_unlock(&c->poll_lock);
    }
    for (int p = 0; p < c->num_local; ++p) {
        mca_btl_smx_endpoint_t *ep = c->peers[p];
        if (NULL == ep) {
            continue;
        }
        OPAL_THREAD_LOCK(&c->lock);
        while (!opal_list_is_empty(&ep->pending)) {
            mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) opal_list_get_first(&ep->pending);
            if (!mca_btl_smx_try_post(frag)) {
                break;
            }
            opal_list_remove_first(&ep->pending);
            opal_list_append(&c->completed, &frag->base.super.super);
        }
        OPAL_THREAD_UNLOCK(&c->lock);
    }
    for (;;) {
        OPAL_THREAD_LOCK(&c->lock);
        mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) opal_list_remove_first(&c->completed);
        OPAL_THREAD_UNLOCK(&c->lock);
        if (NULL == frag) {
            break;
        }
        if (frag->base.des_cbfunc) {
            frag->base.des_cbfunc(&mca_btl_smx_module, frag->endpoint, &frag->base, OPAL_SUCCESS);
        }
        if (frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
            mca_btl_smx_frag_release(frag);
        }
        events++;
    }
    return events;
}

mca_btl_base_module_t mca_btl_smx_module = {
    .btl_component = &mca_btl_smx_component.super,
    .btl_add_procs = smx_add_procs,
    .btl_del_procs = smx_del_procs,
    .btl_finalize = smx_finalize,
    .btl_alloc = smx_alloc,
    .btl_free = smx_free,
    .btl_prepare_src = smx_prepare_src,
    .btl_send = mca_btl_smx_send,
    .btl_register_mem = smx_register_mem,
    .btl_deregister_mem = smx_deregister_mem,
};
