/*
 * smsc/knemlike module: endpoints, registration through the cache, copies through the
 * device. With smsc_knemlike_map.c (exports and mappings of them) and the query's
 * self-test (smsc_knemlike_component.c), the only code in user space that talks to
 * /dev/knemlike.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/smsc/base/base.h"
#include "opal/util/output.h"

#include "smsc_knemlike.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/knemlike.h>

static int knemlike_region_create(void *ctx, uint64_t base, uint64_t len, int hold,
                                  uint64_t *cookie)
{
    struct knemlike_segment seg = {.addr = base, .len = len};
    /* Peers may read (they get) and write (they put) the registered buffer. */
    struct knemlike_create req = {.segments = (uintptr_t) &seg, .nr_segments = 1,
                                  .prot = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE,
                                  .flags = hold ? KNEMLIKE_FLAG_HOLD_PAGES : 0};
    (void) ctx;
    if (ioctl(mca_smsc_knemlike_component.fd, KNEMLIKE_IOC_CREATE, &req)) {
        return -errno;
    }
    *cookie = req.cookie;
    return 0;
}

static int knemlike_region_destroy(void *ctx, const struct smsc_knemlike_reg *reg)
{
    struct knemlike_destroy req = {.cookie = reg->cookie};
    (void) ctx;
    return ioctl(mca_smsc_knemlike_component.fd, KNEMLIKE_IOC_DESTROY, &req) ? -errno : 0;
}

/* Map a peer's region here, readable and writable (registrations allow both). */
static int knemlike_region_attach(void *ctx, uint64_t cookie, char **addr, void **map_addr,
                                  size_t *map_len)
{
    struct knemlike_attach req = {.cookie = cookie,
                                  .prot = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE};
    (void) ctx;
    if (ioctl(mca_smsc_knemlike_component.fd, KNEMLIKE_IOC_ATTACH, &req)) {
        return -errno;
    }
    *addr = (char *) (uintptr_t) req.addr;
    *map_addr = (void *) (uintptr_t) req.map_addr;
    *map_len = (size_t) req.map_len;
    return 0;
}

static void knemlike_region_detach(void *ctx, void *map_addr, size_t map_len)
{
    (void) ctx;
    (void) munmap(map_addr, map_len);
}

void mca_smsc_knemlike_cache_start(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct smsc_knemlike_cache_ops ops = {
        .create = knemlike_region_create, .destroy = knemlike_region_destroy, .ctx = NULL};
    struct smsc_knemlike_attach_ops attach_ops = {
        .attach = knemlike_region_attach, .detach = knemlike_region_detach, .ctx = NULL};
    smsc_knemlike_cache_init(&c->cache, &ops, (size_t) c->cache_max_entries,
                             c->cache_max_bytes, (uint64_t) getpagesize(), c->hold);
    if (c->attach
        && 0 != smsc_knemlike_attach_init(&c->attachments, &attach_ops, (size_t) c->attach_max)) {
        c->attach = 0;
    }
}

void mca_smsc_knemlike_cache_stop(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    if (c->attach) {
        smsc_knemlike_attach_fini(&c->attachments);
        c->attach = 0;
    }
    smsc_knemlike_cache_fini(&c->cache);
}

/* A copy through an attachment of the peer's region (made now if new): a memcpy. Returns
 * false when there is none (the module refused it, or every entry is in use): the caller
 * then copies through the ioctl. */
static bool knemlike_copy_attached(const struct smsc_knemlike_reg *reg, void *local_address,
                                   uint64_t offset, size_t size, uint32_t direction)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct smsc_knemlike_attachment *at;

    OPAL_THREAD_LOCK(&c->lock);
    at = smsc_knemlike_attach_acquire(&c->attachments, reg->cookie, reg->base, reg->len);
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL == at) {
        return false;
    }
    const bool mapped = NULL != at->addr;
    if (mapped) {
        if (KNEMLIKE_COPY_FROM_REGION == direction) {
            memcpy(local_address, at->addr + offset, size);
        } else {
            memcpy(at->addr + offset, local_address, size);
        }
    }
    OPAL_THREAD_LOCK(&c->lock);
    smsc_knemlike_attach_release(&c->attachments, at);
    OPAL_THREAD_UNLOCK(&c->lock);
    return mapped;
}

static void knemlike_endpoint_construct(struct smsc_knemlike_endpoint *endpoint)
{
    OBJ_CONSTRUCT(&endpoint->lock, opal_mutex_t);
    endpoint->mappable = false;
}

static void knemlike_endpoint_destruct(struct smsc_knemlike_endpoint *endpoint)
{
    mca_smsc_knemlike_map_endpoint_fini(endpoint);
    OBJ_DESTRUCT(&endpoint->lock);
}

typedef struct smsc_knemlike_endpoint smsc_knemlike_endpoint_t;
static OBJ_CLASS_INSTANCE(smsc_knemlike_endpoint_t, opal_object_t, knemlike_endpoint_construct,
                          knemlike_endpoint_destruct);

/* The cookie of a registration travels with it; what an endpoint adds is the peer's
 * export, for mapping (smsc_knemlike_map.c). */
static mca_smsc_endpoint_t *knemlike_get_endpoint(opal_proc_t *peer_proc)
{
    struct smsc_knemlike_endpoint *endpoint = OBJ_NEW(smsc_knemlike_endpoint_t);
    if (NULL == endpoint) {
        return NULL;
    }
    endpoint->super.proc = peer_proc;
    mca_smsc_knemlike_map_endpoint_init(endpoint);
    return &endpoint->super;
}

/* Unmaps every mapping of the peer's memory (the destructor). */
static void knemlike_return_endpoint(mca_smsc_endpoint_t *endpoint)
{
    OBJ_RELEASE(endpoint);
}

/* Copy between local memory and the peer's registered buffer named by reg_data. */
static int knemlike_copy(mca_smsc_endpoint_t *endpoint, void *local_address, void *remote_address,
                         size_t size, void *reg_data, uint32_t direction)
{
    const struct smsc_knemlike_reg *reg = reg_data;
    uint64_t remote = (uintptr_t) remote_address;
    struct knemlike_segment seg = {.addr = (uintptr_t) local_address, .len = size};
    struct knemlike_copy req = {.local_segments = (uintptr_t) &seg, .nr_local_segments = 1,
                                .direction = direction};

    if (NULL == reg || remote < reg->base || size > reg->len || remote - reg->base > reg->len - size) {
        opal_output_verbose(MCA_BASE_VERBOSE_ERROR, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: %zu bytes at %p lie outside the peer's registration",
                            size, remote_address);
        return OPAL_ERR_BAD_PARAM;
    }
    req.cookie = reg->cookie;
    req.offset = remote - reg->base;
    if (mca_smsc_knemlike_component.attach
        && knemlike_copy_attached(reg, local_address, req.offset, size, direction)) {
        return OPAL_SUCCESS;
    }
    if (KNEMLIKE_COPY_TO_REGION == direction) {
        /* what the kernel will read here, checked as valgrind checks a write() */
        knemlike_memcheck_sending(local_address, size);
    }
    /* The module moves at most KNEMLIKE_MAX_COPY_BYTES a call, and stops early for a
     * signal (EINTR, with what it moved): go on from there. */
    for (size_t done = 0;; seg.addr += req.bytes, req.offset += req.bytes) {
        seg.len = size - done;
        req.bytes = 0;
        int rc = ioctl(mca_smsc_knemlike_component.fd, KNEMLIKE_IOC_COPY, &req);
        if ((0 == rc || EINTR == errno) && req.bytes <= seg.len) {
            done += req.bytes;
            if (done == size) {
                break;
            }
            if (0 == rc && 0 == req.bytes) {
                errno = EIO; /* no progress and no error: never loop for ever */
            } else {
                continue;
            }
        }
        int err = errno;
        opal_output_verbose(MCA_BASE_VERBOSE_ERROR, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: copy of %zu bytes %s peer %s failed: %s", size,
                            KNEMLIKE_COPY_TO_REGION == direction ? "to" : "from",
                            endpoint && endpoint->proc ? OPAL_NAME_PRINT(endpoint->proc->proc_name)
                                                       : "?",
                            strerror(err));
        return ESRCH == err ? OPAL_ERR_UNREACH : OPAL_ERROR;
    }
    if (KNEMLIKE_COPY_FROM_REGION == direction) {
        knemlike_memcheck_received(local_address, size);
    }
    return OPAL_SUCCESS;
}

static int knemlike_copy_to(mca_smsc_endpoint_t *endpoint, void *local_address,
                            void *remote_address, size_t size, void *reg_data)
{
    return knemlike_copy(endpoint, local_address, remote_address, size, reg_data,
                         KNEMLIKE_COPY_TO_REGION);
}

static int knemlike_copy_from(mca_smsc_endpoint_t *endpoint, void *local_address,
                              void *remote_address, size_t size, void *reg_data)
{
    return knemlike_copy(endpoint, local_address, remote_address, size, reg_data,
                         KNEMLIKE_COPY_FROM_REGION);
}

static void *knemlike_register_region(void *local_address, size_t size)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct smsc_knemlike_cache_entry *entry;
    int err = 0;

    OPAL_THREAD_LOCK(&c->lock);
    entry = smsc_knemlike_cache_acquire(&c->cache, (uintptr_t) local_address, size, &err);
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL == entry) {
        opal_output_verbose(MCA_BASE_VERBOSE_ERROR, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: cannot register %zu bytes at %p: %s", size,
                            local_address, strerror(-err));
        return NULL;
    }
    return &entry->reg;
}

static void knemlike_deregister_region(void *reg_data)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct smsc_knemlike_cache_entry *entry =
        (struct smsc_knemlike_cache_entry *) ((char *) reg_data
                                              - offsetof(struct smsc_knemlike_cache_entry, reg));
    OPAL_THREAD_LOCK(&c->lock);
    smsc_knemlike_cache_release(&c->cache, entry);
    OPAL_THREAD_UNLOCK(&c->lock);
}

/* MCA_SMSC_FEATURE_CAN_MAP is added at enable once this process's export is published;
 * map_peer_region serves peers that exported whatever this process did. */
mca_smsc_module_t mca_smsc_knemlike_module = {
    .features = MCA_SMSC_FEATURE_REQUIRE_REGISTRATION,
    .registration_data_size = sizeof(struct smsc_knemlike_reg),
    .get_endpoint = knemlike_get_endpoint,
    .return_endpoint = knemlike_return_endpoint,
    .copy_to = knemlike_copy_to,
    .copy_from = knemlike_copy_from,
    .map_peer_region = mca_smsc_knemlike_map_peer_region,
    .unmap_peer_region = mca_smsc_knemlike_unmap_peer_region,
    .register_region = knemlike_register_region,
    .deregister_region = knemlike_deregister_region,
};
