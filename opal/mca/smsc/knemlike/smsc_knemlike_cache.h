/*
 * smsc/knemlike registration cache (after Worringen et al., "Efficient Asynchronous
 * Message Passing via SCI with Zero-Copying", section III.D): a buffer registered again
 * reuses the region created the first time. Entries are looked up by address range, carry
 * an in-use count (a region being copied is never destroyed), are released lazily (kept
 * when the count drops to zero) and evicted least-recently-used first when the entry or
 * byte limit is reached.
 *
 * Why a hit is safe: a region names the owner's current memory at its addresses, whether
 * the kernel resolves its pages at each copy or holds them (KNEMLIKE_FLAG_HOLD_PAGES,
 * dropped by an MMU notifier when the mapping changes): a buffer freed and reallocated at
 * the same address is read as it is now, never as it was (kmod/README.md, "Coherence").
 *
 * Held regions pin memory, counted against the process's RLIMIT_MEMLOCK: when the module
 * refuses one over that limit (EDQUOT), unused entries are evicted, least recently used
 * first, and the registration retried; with nothing left to evict, or when the memory
 * cannot be pinned as asked (read-only memory: peers may write a registration), it is
 * made without holding its pages (it still works, as a CMA-like copy).
 *
 * The same cache keeps the mappings of a peer's export (smsc_knemlike_map.c, one cache per
 * peer): there an entry is a mapping, its "cookie" the mapping's local address, and the
 * create and destroy callbacks attach and munmap.
 *
 * Pure C with the device behind two callbacks, so the logic is unit-tested on any host
 * (tests/unit/test_knemlike_cache.cc). Not thread-safe: the component serialises calls.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMSC_KNEMLIKE_CACHE_H
#define SMSC_KNEMLIKE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What travels to the peer in the rendezvous: enough to name a byte of the region. */
struct smsc_knemlike_reg {
    uint64_t cookie; /* what create returned: the region's cookie (or a mapping's address) */
    uint64_t base;   /* address of the region's first byte in the owner */
    uint64_t len;
};

struct smsc_knemlike_cache;

struct smsc_knemlike_cache_entry {
    struct smsc_knemlike_reg reg;
    struct smsc_knemlike_cache *cache;                     /* the cache holding it */
    unsigned in_use;
    int held;                                              /* its region holds its pages */
    struct smsc_knemlike_cache_entry *lru_prev, *lru_next; /* only while in_use == 0 */
};

struct smsc_knemlike_cache_ops {
    /* Create a region over [base, base + len), holding its pages if hold; 0 and *cookie,
     * or a negative errno. Errors after which unused entries are evicted and the create
     * tried again: -EMFILE (the device's objects per file), -EDQUOT (holding would pass
     * the memory-lock limit), -ENOMEM (kernel memory, or for a mapping the address space
     * or vm.max_map_count). */
    int (*create)(void *ctx, uint64_t base, uint64_t len, int hold, uint64_t *cookie);
    /* Destroy what create made for reg; 0 or a negative errno. */
    int (*destroy)(void *ctx, const struct smsc_knemlike_reg *reg);
    void *ctx;
};

struct smsc_knemlike_cache_stats {
    uint64_t hits, misses, evictions, over_limit, failures;
    uint64_t unheld;     /* registrations made without holding pages: over RLIMIT_MEMLOCK,
                            or memory that cannot be pinned as asked */
    uint64_t held_bytes; /* bytes of the entries that hold their pages, now */
};

struct smsc_knemlike_cache {
    struct smsc_knemlike_cache_ops ops;
    struct smsc_knemlike_cache_entry **by_base; /* sorted by reg.base */
    size_t count, capacity;
    uint64_t bytes;       /* sum of the entries' lengths */
    uint64_t longest;     /* longest entry ever held: bounds the backward search */
    struct smsc_knemlike_cache_entry *lru_head, *lru_tail; /* head: most recently released */
    size_t max_entries;   /* 0: no limit */
    uint64_t max_bytes;   /* 0: no limit */
    uint64_t page_size;
    int hold;             /* ask the module to hold the pages of new regions */
    struct smsc_knemlike_cache_stats stats;
};

void smsc_knemlike_cache_init(struct smsc_knemlike_cache *cache,
                              const struct smsc_knemlike_cache_ops *ops, size_t max_entries,
                              uint64_t max_bytes, uint64_t page_size, int hold);

/* The entry covering [addr, addr + size), created (page-aligned) if none does; its in-use
 * count is raised. NULL on failure, with *err the device's negative errno. */
struct smsc_knemlike_cache_entry *smsc_knemlike_cache_acquire(struct smsc_knemlike_cache *cache,
                                                              uint64_t addr, uint64_t size,
                                                              int *err);

/* Lower the in-use count; at zero the entry stays cached (lazy release) as the most
 * recently used. */
void smsc_knemlike_cache_release(struct smsc_knemlike_cache *cache,
                                 struct smsc_knemlike_cache_entry *entry);

/* Destroy the unused entries overlapping [addr, addr + len) (e.g. memory returned to the
 * system). Entries in use are left alone. Returns how many were destroyed. */
size_t smsc_knemlike_cache_invalidate(struct smsc_knemlike_cache *cache, uint64_t addr,
                                      uint64_t len);

/* Destroy every entry, in use or not (finalize). */
void smsc_knemlike_cache_fini(struct smsc_knemlike_cache *cache);

#ifdef __cplusplus
}
#endif

#endif
