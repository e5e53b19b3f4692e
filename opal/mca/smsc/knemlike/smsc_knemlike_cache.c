/*
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "smsc_knemlike_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct smsc_knemlike_cache_entry entry_t;

void smsc_knemlike_cache_init(struct smsc_knemlike_cache *cache,
                              const struct smsc_knemlike_cache_ops *ops, size_t max_entries,
                              uint64_t max_bytes, uint64_t page_size, int hold)
{
    memset(cache, 0, sizeof(*cache));
    cache->ops = *ops;
    cache->hold = hold;
    cache->max_entries = max_entries;
    cache->max_bytes = max_bytes;
    cache->page_size = page_size ? page_size : 4096;
}

static uint64_t entry_end(const entry_t *e)
{
    return e->reg.base + e->reg.len;
}

/* --- the least-recently-used list of unused entries --- */

static void lru_unlink(struct smsc_knemlike_cache *cache, entry_t *e)
{
    if (e->lru_prev) {
        e->lru_prev->lru_next = e->lru_next;
    } else {
        cache->lru_head = e->lru_next;
    }
    if (e->lru_next) {
        e->lru_next->lru_prev = e->lru_prev;
    } else {
        cache->lru_tail = e->lru_prev;
    }
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_head(struct smsc_knemlike_cache *cache, entry_t *e)
{
    e->lru_prev = NULL;
    e->lru_next = cache->lru_head;
    if (cache->lru_head) {
        cache->lru_head->lru_prev = e;
    } else {
        cache->lru_tail = e;
    }
    cache->lru_head = e;
}

/* --- the index, sorted by base address --- */

/* Number of entries whose base is <= addr. */
static size_t index_upper(const struct smsc_knemlike_cache *cache, uint64_t addr)
{
    size_t lo = 0, hi = cache->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cache->by_base[mid]->reg.base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int index_insert(struct smsc_knemlike_cache *cache, entry_t *e)
{
    if (cache->count == cache->capacity) {
        size_t cap = cache->capacity ? 2 * cache->capacity : 64;
        entry_t **grown = realloc(cache->by_base, cap * sizeof(*grown));
        if (!grown) {
            return -ENOMEM;
        }
        cache->by_base = grown;
        cache->capacity = cap;
    }
    size_t at = index_upper(cache, e->reg.base);
    memmove(&cache->by_base[at + 1], &cache->by_base[at], (cache->count - at) * sizeof(entry_t *));
    cache->by_base[at] = e;
    cache->count++;
    cache->bytes += e->reg.len;
    if (e->held) {
        cache->stats.held_bytes += e->reg.len;
    }
    if (e->reg.len > cache->longest) {
        cache->longest = e->reg.len;
    }
    return 0;
}

static void index_remove(struct smsc_knemlike_cache *cache, entry_t *e)
{
    for (size_t i = index_upper(cache, e->reg.base); i-- > 0;) {
        if (cache->by_base[i] == e) {
            memmove(&cache->by_base[i], &cache->by_base[i + 1],
                    (cache->count - i - 1) * sizeof(entry_t *));
            cache->count--;
            cache->bytes -= e->reg.len;
            if (e->held) {
                cache->stats.held_bytes -= e->reg.len;
            }
            return;
        }
    }
}

/* An entry containing [lo, hi), searching back from the last base <= lo; entries
 * further back than the longest one ever held cannot reach lo. */
static entry_t *index_find_containing(const struct smsc_knemlike_cache *cache, uint64_t lo,
                                      uint64_t hi)
{
    for (size_t i = index_upper(cache, lo); i-- > 0;) {
        entry_t *e = cache->by_base[i];
        if (e->reg.base + cache->longest < lo) {
            break;
        }
        if (entry_end(e) >= hi) {
            return e;
        }
    }
    return NULL;
}

/* --- life and death of entries --- */

static void destroy_entry(struct smsc_knemlike_cache *cache, entry_t *e)
{
    if (0 == e->in_use) {
        lru_unlink(cache, e);
    }
    index_remove(cache, e);
    (void) cache->ops.destroy(cache->ops.ctx, &e->reg);
    free(e);
}

static int over_limits(const struct smsc_knemlike_cache *cache, size_t extra_entries,
                       uint64_t extra_bytes)
{
    return (cache->max_entries && cache->count + extra_entries > cache->max_entries) ||
           (cache->max_bytes && cache->bytes + extra_bytes > cache->max_bytes);
}

/* Evict unused entries, least recently used first, until extra_entries entries of
 * extra_bytes in all fit within the limits. */
static void make_room(struct smsc_knemlike_cache *cache, size_t extra_entries,
                      uint64_t extra_bytes)
{
    while (over_limits(cache, extra_entries, extra_bytes) && cache->lru_tail) {
        destroy_entry(cache, cache->lru_tail);
        cache->stats.evictions++;
    }
    if (extra_entries && over_limits(cache, extra_entries, extra_bytes)) {
        cache->stats.over_limit++; /* everything cached is in use: exceed rather than fail */
    }
}

struct smsc_knemlike_cache_entry *smsc_knemlike_cache_acquire(struct smsc_knemlike_cache *cache,
                                                              uint64_t addr, uint64_t size,
                                                              int *err)
{
    uint64_t mask = cache->page_size - 1;
    uint64_t lo = addr & ~mask, hi;
    entry_t *e;

    if (0 == size || addr + size < addr || addr + size > UINT64_MAX - mask) {
        *err = -EINVAL;
        cache->stats.failures++;
        return NULL;
    }
    hi = (addr + size + mask) & ~mask;
    e = index_find_containing(cache, addr, addr + size);
    if (e) {
        if (0 == e->in_use++) {
            lru_unlink(cache, e);
        }
        cache->stats.hits++;
        return e;
    }
    cache->stats.misses++;
    /* Unused entries overlapping the new range are superseded by it. */
    smsc_knemlike_cache_invalidate(cache, lo, hi - lo);
    make_room(cache, 1, hi - lo);

    e = calloc(1, sizeof(*e));
    if (!e) {
        *err = -ENOMEM;
        cache->stats.failures++;
        return NULL;
    }
    e->reg.base = lo;
    e->reg.len = hi - lo;
    e->cache = cache;
    e->held = cache->hold;
    *err = cache->ops.create(cache->ops.ctx, lo, hi - lo, e->held, &e->reg.cookie);
    /* The module's own limits can be below ours: its regions per file (max_regions_per_file,
     * which root may lower at run time), for held regions the process's RLIMIT_MEMLOCK, and
     * kernel memory or, for mappings, the address space and vm.max_map_count. Make room
     * there from the unused end. A region that still cannot hold its pages, or
     * whose memory cannot be pinned as asked (read-only memory for a region peers may
     * write, say), is made without: the kernel then finds its pages at each copy. */
    for (;;) {
        if ((-EMFILE == *err || -EDQUOT == *err || -ENOMEM == *err) && NULL != cache->lru_tail) {
            destroy_entry(cache, cache->lru_tail);
            cache->stats.evictions++;
        } else if (*err && -EMFILE != *err && e->held) {
            e->held = 0;
            cache->stats.unheld++;
        } else {
            break;
        }
        *err = cache->ops.create(cache->ops.ctx, lo, hi - lo, e->held, &e->reg.cookie);
    }
    if (*err) {
        free(e);
        cache->stats.failures++;
        return NULL;
    }
    *err = index_insert(cache, e);
    if (*err) {
        (void) cache->ops.destroy(cache->ops.ctx, &e->reg);
        free(e);
        cache->stats.failures++;
        return NULL;
    }
    e->in_use = 1;
    return e;
}

void smsc_knemlike_cache_release(struct smsc_knemlike_cache *cache,
                                 struct smsc_knemlike_cache_entry *entry)
{
    if (entry->in_use && 0 == --entry->in_use) {
        lru_push_head(cache, entry);
        make_room(cache, 0, 0); /* back within limits once nothing pins the excess */
    }
}

size_t smsc_knemlike_cache_invalidate(struct smsc_knemlike_cache *cache, uint64_t addr,
                                      uint64_t len)
{
    size_t destroyed = 0;
    uint64_t end = addr + len;
    for (size_t i = index_upper(cache, end ? end - 1 : 0); i-- > 0;) {
        entry_t *e = cache->by_base[i];
        if (e->reg.base + cache->longest < addr) {
            break;
        }
        if (0 == e->in_use && e->reg.base < end && entry_end(e) > addr) {
            destroy_entry(cache, e);
            destroyed++;
        }
    }
    return destroyed;
}

void smsc_knemlike_cache_fini(struct smsc_knemlike_cache *cache)
{
    while (cache->count) {
        entry_t *e = cache->by_base[cache->count - 1];
        e->in_use = 0;
        e->lru_prev = e->lru_next = NULL;
        index_remove(cache, e);
        (void) cache->ops.destroy(cache->ops.ctx, &e->reg);
        free(e);
    }
    free(cache->by_base);
    cache->by_base = NULL;
    cache->capacity = 0;
    cache->lru_head = cache->lru_tail = NULL;
}
