/*
 * smsc/knemlike: which part of a peer's export a mapping covers (smsc_knemlike_map.c).
 * Pure C, unit-tested in tests/unit/test_knemlike_map.cc.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMSC_KNEMLIKE_MAP_H
#define SMSC_KNEMLIKE_MAP_H

#include <errno.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The span to map for the peer's bytes [remote, remote + size): aligned out to align (a
 * power of two, at least a page), then clipped to the export [start, end) (page-aligned).
 * 0 with *lo and *hi, or -ERANGE when size is 0 or the bytes are not all inside the
 * export: the module would refuse the attachment (ERANGE), and the peer never handed
 * out such an address.
 */
static inline int smsc_knemlike_map_span(uint64_t remote, uint64_t size, uint64_t align,
                                         uint64_t start, uint64_t end, uint64_t *lo,
                                         uint64_t *hi)
{
    const uint64_t mask = align - 1;
    uint64_t l, h;

    if (0 == size || remote < start || remote >= end || size > end - remote) {
        return -ERANGE;
    }
    l = remote & ~mask;
    /* remote + size <= end: only the rounding up can pass the top of the address space */
    h = remote + size > UINT64_MAX - mask ? end : (remote + size + mask) & ~mask;
    *lo = l < start ? start : l;
    *hi = h > end ? end : h;
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif
