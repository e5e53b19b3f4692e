/*
 * smsc/knemlike attachment cache, on the receiving side: a peer's registration mapped into
 * this process (KNEMLIKE_IOC_ATTACH) is kept, so that every later copy from or to it is a
 * memcpy, with no system call. Keyed by the registration's cookie, which names one region
 * of one peer (cookies are never reused), with the region's range beside it. Entries in
 * use are never unmapped; beyond the limit the least recently used unused one is. A
 * registration the module refuses to attach (a region that does not hold its pages:
 * over RLIMIT_MEMLOCK, or read-only memory) is remembered too, and copied through the
 * ioctl without asking again.
 *
 * Why a cached attachment is safe: the module unmaps it whenever the owner's mapping
 * changes and maps the owner's current pages at the next touch (kmod/README.md,
 * "Attachments"); an attachment whose region was destroyed is never touched again,
 * since its cookie never comes again, and goes when it is the least recently used.
 *
 * Pure C with the device behind two callbacks (unit-tested in
 * tests/unit/test_knemlike_attach.cc). Not thread-safe: the component serialises calls.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMSC_KNEMLIKE_ATTACH_H
#define SMSC_KNEMLIKE_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct smsc_knemlike_attachment {
    uint64_t cookie;
    uint64_t base, len;   /* the owner's region: its first byte's address there, length */
    char *addr;           /* where that first byte is mapped here; NULL: not attachable */
    void *map_addr;       /* the mapping, for the detach */
    size_t map_len;
    unsigned in_use;
    uint64_t last_use;    /* the cache's clock at the last acquire */
};

struct smsc_knemlike_attach_ops {
    /* Map the region named by cookie; 0 with *addr (its first byte), *map_addr and
     * *map_len, or a negative errno. */
    int (*attach)(void *ctx, uint64_t cookie, char **addr, void **map_addr, size_t *map_len);
    void (*detach)(void *ctx, void *map_addr, size_t map_len);
    void *ctx;
};

struct smsc_knemlike_attach_stats {
    uint64_t hits;      /* copies through an attachment already made */
    uint64_t attaches;  /* attachments made */
    uint64_t evictions; /* attachments unmapped to stay within the limit */
    uint64_t refused;   /* registrations the module would not attach (copied by ioctl) */
};

struct smsc_knemlike_attach_cache {
    struct smsc_knemlike_attach_ops ops;
    struct smsc_knemlike_attachment *entries;
    size_t count, max;
    uint64_t clock;
    struct smsc_knemlike_attach_stats stats;
};

/* max: the most entries (at least 1). Returns 0, or -1 without memory. */
int smsc_knemlike_attach_init(struct smsc_knemlike_attach_cache *cache,
                              const struct smsc_knemlike_attach_ops *ops, size_t max);

/* The attachment of the region named by cookie, whose first byte is at base in its owner
 * and which is len bytes long, made if new; its in-use count is raised. Its addr is NULL
 * when the module refused to attach it. NULL when every entry is in use. */
struct smsc_knemlike_attachment *smsc_knemlike_attach_acquire(struct smsc_knemlike_attach_cache *cache,
                                                              uint64_t cookie, uint64_t base,
                                                              uint64_t len);

void smsc_knemlike_attach_release(struct smsc_knemlike_attach_cache *cache,
                                  struct smsc_knemlike_attachment *entry);

/* Unmap every attachment (finalize). */
void smsc_knemlike_attach_fini(struct smsc_knemlike_attach_cache *cache);

#ifdef __cplusplus
}
#endif

#endif
