/*
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "bench_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bu_parse_size(const char *text, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (NULL == text || !isdigit((unsigned char) text[0])) {
        return -1;
    }
    errno = 0;
    v = strtoull(text, &end, 10);
    if (0 != errno) {
        return -1;
    }
    switch (toupper((unsigned char) *end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
    }
    if ('\0' != *end || v > (SIZE_MAX >> shift)) {
        return -1;
    }
    *out = (size_t) v << shift;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *) a, y = *(const size_t *) b;
    return (x > y) - (x < y);
}

static int add_size(size_t *out, int *n, int max, size_t v)
{
    if (*n >= max) {
        return -1;
    }
    out[(*n)++] = v;
    return 0;
}

static int add_range(size_t *out, int *n, int max, size_t lo, size_t hi)
{
    if (lo > hi || add_size(out, n, max, lo) < 0) {
        return -1;
    }
    for (size_t p = 1; p < hi && p <= SIZE_MAX / 2; p *= 2) {
        if (p > lo && add_size(out, n, max, p) < 0) {
            return -1;
        }
    }
    return hi > lo ? add_size(out, n, max, hi) : 0;
}

int bu_parse_size_list(const char *text, size_t *out, int max)
{
    char *copy, *save = NULL, *item;
    int n = 0, rc = 0;

    if (NULL == text || '\0' == *text || NULL == (copy = strdup(text))) {
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); item && 0 == rc; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        size_t lo, hi;
        if (colon) {
            *colon = '\0';
            rc = (bu_parse_size(item, &lo) || bu_parse_size(colon + 1, &hi))
                     ? -1 : add_range(out, &n, max, lo, hi);
        } else {
            rc = bu_parse_size(item, &lo) ? -1 : add_size(out, &n, max, lo);
        }
    }
    free(copy);
    if (rc < 0 || 0 == n) {
        return -1;
    }
    qsort(out, (size_t) n, sizeof(*out), cmp_size);
    int unique = 1;
    for (int i = 1; i < n; ++i) {
        if (out[i] != out[unique - 1]) {
            out[unique++] = out[i];
        }
    }
    return unique;
}

int bu_iterations(size_t msg_bytes, size_t target_bytes, int min_iters, int max_iters)
{
    size_t per = msg_bytes ? msg_bytes : 1;
    size_t iters = target_bytes / per;
    if (iters < (size_t) min_iters) {
        return min_iters;
    }
    if (iters > (size_t) max_iters) {
        return max_iters;
    }
    return (int) iters;
}

int bu_pool_plan(struct bu_pool *pool, size_t pool_bytes, size_t msg_bytes, size_t align,
                 size_t least)
{
    if (0 == align || 0 != (align & (align - 1)) || msg_bytes > SIZE_MAX - align) {
        return -1;
    }
    size_t slot = (msg_bytes + align - 1) & ~(align - 1);
    if (0 == slot) {
        slot = align;
    }
    pool->slot_bytes = slot;
    pool->nslots = pool_bytes / slot;
    if (pool->nslots < least) {
        pool->nslots = least;
    }
    if (0 == pool->nslots) {
        pool->nslots = 1;
    }
    pool->next = 0;
    pool->order = NULL;
    return 0;
}

/* splitmix64: a small generator, good enough to shuffle with */
static unsigned long long bu_random(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int bu_pool_shuffle(struct bu_pool *pool, unsigned long long seed)
{
    size_t *order = malloc(pool->nslots * sizeof(*order));
    if (NULL == order) {
        return -1;
    }
    for (size_t i = 0; i < pool->nslots; ++i) {
        order[i] = i;
    }
    for (size_t i = pool->nslots - 1; i > 0; --i) { /* Fisher-Yates */
        size_t j = (size_t) (bu_random(&seed) % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    free(pool->order);
    pool->order = order;
    pool->next = 0;
    return 0;
}

void bu_pool_release(struct bu_pool *pool)
{
    free(pool->order);
    pool->order = NULL;
}

size_t bu_pool_next(struct bu_pool *pool)
{
    size_t slot = NULL != pool->order ? pool->order[pool->next] : pool->next;
    pool->next = (pool->next + 1) % pool->nslots;
    return slot * pool->slot_bytes;
}

size_t bu_pool_span(const struct bu_pool *pool)
{
    return pool->nslots * pool->slot_bytes;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

double bu_median(double *values, int n)
{
    qsort(values, (size_t) n, sizeof(*values), cmp_double);
    return (n % 2) ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/* The value of cpuinfo's first "KEY<blanks>: value" line, up to its end, into out ("" if
 * there is none). */
static void cpuinfo_value(const char *cpuinfo, const char *key, char *out, size_t n)
{
    const size_t klen = strlen(key);
    out[0] = '\0';
    for (const char *line = cpuinfo; line && *line; line = strchr(line, '\n')) {
        line += '\n' == *line; /* (past the newline that ended the line before) */
        if (0 != strncmp(line, key, klen)) {
            continue;
        }
        const char *p = line + klen + strspn(line + klen, " \t");
        if (':' != *p) {
            continue; /* a longer key that starts with this one ("model name" for "model") */
        }
        p += 1 + strspn(p + 1, " ");
        size_t len = strcspn(p, "\n");
        len = len < n - 1 ? len : n - 1;
        memcpy(out, p, len);
        out[len] = '\0';
        return;
    }
}

enum bu_system_kind bu_describe_system(const char *cpuinfo, const char *vendor,
                                       const char *release, int ncpus, const char *uml_host,
                                       char *out, size_t n)
{
    char model[128], family[16], number[16], host[256];
    cpuinfo_value(cpuinfo, "model name", model, sizeof(model));
    cpuinfo_value(cpuinfo, "cpu family", family, sizeof(family));
    cpuinfo_value(cpuinfo, "model", number, sizeof(number));
    const char *cpus = 1 == ncpus ? "CPU" : "CPUs";

    if (0 == strcmp(model, "UML")) {
        cpuinfo_value(cpuinfo, "host", host, sizeof(host));
        snprintf(out, n, "UML guest: Linux %s (User-mode Linux), %d %s; host: %s", release,
                 ncpus, cpus, uml_host && *uml_host ? uml_host : host);
        return BU_SYSTEM_UML;
    }
    if ((vendor && strstr(vendor, "QEMU")) || 0 == strncmp(model, "QEMU", 4)) {
        snprintf(out, n, "QEMU guest (emulated): Linux %s, %d %s", release, ncpus, cpus);
        return BU_SYSTEM_QEMU;
    }
    snprintf(out, n, "host: Linux %s, %d %s, %s (family %s, model %s)", release, ncpus, cpus,
             *model ? model : "unknown CPU", *family ? family : "?", *number ? number : "?");
    return BU_SYSTEM_HOST;
}
