/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the sender's choice between memcpy and non-temporal stores (btl_smx_store.h).
 */
#include "btl_smx_clock.h"
#include "btl_smx_store.h"

#include <string.h>

#if SMX_STORE_CAN_STREAM
#    include <emmintrin.h>
#endif

void smx_store_init(struct smx_store *s)
{
    s->cost[SMX_STORE_CACHED] = s->cost[SMX_STORE_STREAM] = 0;
    s->since = SMX_STORE_PROBE_EVERY - 2;
    s->held = UINT32_MAX; /* as if memcpy had held for ever: a first switch is no flap */
    s->probe_every = SMX_STORE_PROBE_EVERY;
    s->way = SMX_STORE_CACHED;
}

bool smx_store_measured(struct smx_store *s, enum smx_store_way way, size_t bytes,
                        uint64_t cycles)
{
    const enum smx_store_way before = (enum smx_store_way) s->way;
    uint64_t sample;

    if (bytes < SMX_STORE_TIME_MIN || cycles > (UINT64_C(1) << 40)) {
        return false; /* too small to say, or a clock that went back (another CPU's) */
    }
    sample = cycles * 1024 / bytes;
    if (sample > UINT32_MAX / 8) {
        sample = UINT32_MAX / 8;
    }
    if (0 == sample) {
        sample = 1;
    }
    if (0 == s->cost[way]) {
        s->cost[way] = (uint32_t) sample;
    } else {
        const int64_t now = s->cost[way];
        int64_t x = (int64_t) sample;
        if (x > 4 * now) {
            x = 4 * now;
        } else if (4 * x < now) {
            x = now / 4;
        }
        const int64_t next = now + (x - now) / 4;
        s->cost[way] = (uint32_t) (next > 0 ? next : 1);
    }
    if (0 != s->cost[SMX_STORE_CACHED] && 0 != s->cost[SMX_STORE_STREAM]) {
        const uint64_t cached = s->cost[SMX_STORE_CACHED], stream = s->cost[SMX_STORE_STREAM];
        if (SMX_STORE_CACHED == before && cached > SMX_STORE_STREAM_RATIO * stream) {
            s->way = SMX_STORE_STREAM;
            /* memcpy won back and lost again at once: its samples misled; trust them
             * half as often. Memcpy that held was a real change: sample as usual. */
            if (s->held < SMX_STORE_SHORT_HOLD) {
                if (s->probe_every < SMX_STORE_PROBE_MAX) {
                    s->probe_every *= 2;
                }
            } else {
                s->probe_every = SMX_STORE_PROBE_EVERY;
            }
        } else if (SMX_STORE_STREAM == before && cached < SMX_STORE_CACHED_RATIO * stream) {
            s->way = SMX_STORE_CACHED;
        }
    }
    if (s->way != before) {
        s->held = 0;
        return true;
    }
    return false;
}

void smx_store_stream(void *to, const void *from, size_t n)
{
#if SMX_STORE_CAN_STREAM
    unsigned char *d = to;
    const unsigned char *f = from;
    size_t head = (size_t) (-(uintptr_t) d & 63);

    if (head > n) {
        head = n;
    }
    memcpy(d, f, head);
    d += head;
    f += head;
    n -= head;
    for (; n >= 64; d += 64, f += 64, n -= 64) {
        /* a whole line in four stores: the write-combining buffer sends it as one */
        const __m128i a = _mm_loadu_si128((const __m128i *) f);
        const __m128i b = _mm_loadu_si128((const __m128i *) (f + 16));
        const __m128i c = _mm_loadu_si128((const __m128i *) (f + 32));
        const __m128i e = _mm_loadu_si128((const __m128i *) (f + 48));
        _mm_stream_si128((__m128i *) d, a);
        _mm_stream_si128((__m128i *) (d + 16), b);
        _mm_stream_si128((__m128i *) (d + 32), c);
        _mm_stream_si128((__m128i *) (d + 48), e);
    }
    memcpy(d, f, n);
    _mm_sfence(); /* the streamed lines are visible before anything stored after */
#else
    memcpy(to, from, n);
#endif
}

unsigned smx_store_copy(struct smx_store *s, bool always, void *to, const void *from, size_t n)
{
    bool timed = false;

    if (!smx_store_can_stream()) {
        memcpy(to, from, n);
        return 0;
    }
    if (always) {
        smx_store_stream(to, from, n);
        return SMX_STORE_STREAMED;
    }
    /* below SMX_STORE_TIME_MIN: the way larger copies to this peer chose, untimed */
    const enum smx_store_way way = n < SMX_STORE_TIME_MIN ? (enum smx_store_way) s->way
                                                          : smx_store_next(s, &timed);
    /* in cycles: with clock_gettime() in what it timed, a streamed 4 KiB copy did not look
     * three times cheaper than a memcpy */
    const uint64_t start = timed ? mca_btl_smx_cycles() : 0;
    if (SMX_STORE_STREAM == way) {
        smx_store_stream(to, from, n);
    } else {
        memcpy(to, from, n);
    }
    const bool switched = timed && smx_store_measured(s, way, n, mca_btl_smx_cycles() - start);
    return (SMX_STORE_STREAM == way ? SMX_STORE_STREAMED : 0u)
           | (switched ? SMX_STORE_SWITCHED : 0u);
}
