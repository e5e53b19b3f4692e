/*
 * smsc/knemlike attachment cache (smsc_knemlike_attach.h). A few hundred entries at most,
 * searched most recently used first: a rendezvous on the same buffer (what a cache is
 * for) finds its entry at once.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "smsc_knemlike_attach.h"

#include <stdlib.h>
#include <string.h>

int smsc_knemlike_attach_init(struct smsc_knemlike_attach_cache *cache,
                              const struct smsc_knemlike_attach_ops *ops, size_t max)
{
    memset(cache, 0, sizeof(*cache));
    cache->ops = *ops;
    cache->max = max ? max : 1;
    cache->entries = calloc(cache->max, sizeof(*cache->entries));
    return cache->entries ? 0 : -1;
}

/* Entries never move (a copy holds a pointer to its own): a slot is unmapped and reused. */
static void attach_unmap(struct smsc_knemlike_attach_cache *cache,
                         struct smsc_knemlike_attachment *e)
{
    if (NULL != e->addr) {
        cache->ops.detach(cache->ops.ctx, e->map_addr, e->map_len);
        e->addr = NULL;
    }
}

struct smsc_knemlike_attachment *smsc_knemlike_attach_acquire(struct smsc_knemlike_attach_cache *cache,
                                                              uint64_t cookie, uint64_t base,
                                                              uint64_t len)
{
    struct smsc_knemlike_attachment *e;
    size_t i, victim = cache->count;

    ++cache->clock;
    for (i = 0; i < cache->count; ++i) {
        e = &cache->entries[i];
        if (e->cookie == cookie && e->base == base && e->len == len) {
            e->in_use++;
            e->last_use = cache->clock;
            if (NULL != e->addr) {
                cache->stats.hits++;
            }
            return e;
        }
    }
    if (cache->count == cache->max) {
        /* full: the least recently used entry that no copy is using goes */
        for (i = 0; i < cache->count; ++i) {
            e = &cache->entries[i];
            if (0 == e->in_use
                && (victim == cache->count || e->last_use < cache->entries[victim].last_use)) {
                victim = i;
            }
        }
        if (victim == cache->count) {
            return NULL;
        }
        e = &cache->entries[victim];
        if (NULL != e->addr) {
            cache->stats.evictions++;
        }
        attach_unmap(cache, e);
    } else {
        e = &cache->entries[cache->count++];
    }
    memset(e, 0, sizeof(*e));
    e->cookie = cookie;
    e->base = base;
    e->len = len;
    if (0 == cache->ops.attach(cache->ops.ctx, cookie, &e->addr, &e->map_addr, &e->map_len)) {
        cache->stats.attaches++;
    } else {
        e->addr = NULL;
        cache->stats.refused++;
    }
    e->in_use = 1;
    e->last_use = cache->clock;
    return e;
}

void smsc_knemlike_attach_release(struct smsc_knemlike_attach_cache *cache,
                                  struct smsc_knemlike_attachment *entry)
{
    (void) cache;
    if (entry->in_use > 0) {
        entry->in_use--;
    }
}

void smsc_knemlike_attach_fini(struct smsc_knemlike_attach_cache *cache)
{
    for (size_t i = 0; i < cache->count; ++i) {
        attach_unmap(cache, &cache->entries[i]);
    }
    cache->count = 0;
    free(cache->entries);
    cache->entries = NULL;
    cache->max = 0;
}
