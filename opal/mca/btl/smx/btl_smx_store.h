/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: how a sender writes a payload into shared memory, chosen per peer from what it
 * measures (pure C, no Open MPI: unit-tested in tests/unit/test_smx_store.cc).
 *
 * Two ways:
 *   - through the caches (memcpy): the lines land in the sender's cache, and the reader
 *     takes each from there;
 *   - past them (non-temporal stores): the lines go to memory, and the reader reads them
 *     from there.
 * Which is cheaper depends on what lies between the two cores, and that can change while
 * a job runs: a virtual machine whose virtual CPUs the host moves, cores that share no
 * cache. When taking a line from the other core is cheap, memcpy wins (a 16 KiB ping-pong
 * on the Zen 4 development VM: 1.08 us against 1.88); when it is dear, the sender's own
 * memcpy already shows it, stalling on every line it must take back from the reader
 * (16 KiB: 14,300 cycles against 1,000 for quiet), and streaming wins (7.7 us against
 * 2.2). So the sender times one copy in SMX_STORE_TIME_EVERY of the way in use, and one
 * in SMX_STORE_PROBE_EVERY goes the other way, timed; it streams while its memcpy costs more than
 * SMX_STORE_STREAM_RATIO times a streamed copy (measured: at most 1.4x where memcpy wins
 * overall, 4.7-14x where streaming does); it goes back below SMX_STORE_CACHED_RATIO.
 * Copies below SMX_STORE_MIN bytes always go through the caches. Copies below
 * SMX_STORE_TIME_MIN go the way in use but are neither timed nor sampled the other way: the
 * sender's store buffer hides their cost from its own clock (in the far state a 2 KiB
 * memcpy into the ring took the sender 78 cycles against 338 streamed, yet the round trip
 * was 17-20 % faster streamed, 3 KiB alike), so they follow what larger copies to that
 * peer measured.
 *
 * A memcpy sampled while streaming can look cheaper than memcpy in use: it writes lines
 * the streamed copies left in memory, not lines the reader has just taken (4 KiB messages
 * in the far state: 1.8-2x a streamed copy, against 3-4x in use). Memcpy then won back,
 * lost again within a few dozen copies, and so on (seven switches in one benchmark run,
 * 4 KiB 1.70 us a ping-pong against 1.34). So a return to memcpy that lasts fewer than
 * SMX_STORE_SHORT_HOLD copies doubles the interval between memcpy samples while streaming,
 * up to SMX_STORE_PROBE_MAX; one that lasts brings it back to SMX_STORE_PROBE_EVERY.
 */
#ifndef MCA_BTL_SMX_STORE_H
#define MCA_BTL_SMX_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum smx_store_way {
    SMX_STORE_CACHED = 0, /* memcpy */
    SMX_STORE_STREAM = 1, /* non-temporal stores */
};

#define SMX_STORE_MIN 2048
#define SMX_STORE_TIME_MIN 4096
#define SMX_STORE_TIME_EVERY 8
#define SMX_STORE_PROBE_EVERY 256
#define SMX_STORE_PROBE_MAX 8192
#define SMX_STORE_SHORT_HOLD 4096
#define SMX_STORE_STREAM_RATIO 3
#define SMX_STORE_CACHED_RATIO 2

/* Per peer: a sender's recent cost of each way. */
struct smx_store {
    uint32_t cost[2];     /* cycles per KiB, a moving average; 0: not measured yet */
    uint32_t since;       /* copies since the way not in use was last timed */
    uint32_t held;        /* copies since the way in use was chosen (saturating) */
    uint32_t probe_every; /* while streaming, copies between memcpy samples */
    uint8_t way;          /* enum smx_store_way in use */
};

void smx_store_init(struct smx_store *s);

/* The way the next copy takes: the one in use, or the other when a sample of it is due
 * (the first is due on the second copy, so that both are known early); *timed: whether
 * to time it (smx_store_measured). */
static inline enum smx_store_way smx_store_next(struct smx_store *s, bool *timed)
{
    if (s->held < UINT32_MAX) {
        ++s->held;
    }
    if (++s->since >= (SMX_STORE_STREAM == s->way ? s->probe_every : SMX_STORE_PROBE_EVERY)) {
        s->since = 0;
        *timed = true;
        return (enum smx_store_way) !s->way;
    }
    *timed = 0 == s->since % SMX_STORE_TIME_EVERY || 0 == s->cost[s->way];
    return (enum smx_store_way) s->way;
}

/* A copy of 'bytes' (>= SMX_STORE_TIME_MIN) that went 'way' took 'cycles'. Returns true when
 * this changed the way in use. One sample moves an average by at most a quarter of four
 * times its value, so a copy that was descheduled or took a page fault does not flip it
 * alone. */
bool smx_store_measured(struct smx_store *s, enum smx_store_way way, size_t bytes,
                        uint64_t cycles);

/* Can this build stream (x86-64 with SSE2)? A constant, so that callers fold it. */
#if defined(__x86_64__) && defined(__SSE2__)
#    define SMX_STORE_CAN_STREAM 1
#else
#    define SMX_STORE_CAN_STREAM 0
#endif
static inline bool smx_store_can_stream(void)
{
    return SMX_STORE_CAN_STREAM;
}

/* Copy 'n' bytes with non-temporal stores where the destination's lines are whole (the
 * head and tail by memcpy), then a store fence, so that a release store after it
 * publishes them. Where this build cannot stream: memcpy. */
void smx_store_stream(void *to, const void *from, size_t n);

#endif /* MCA_BTL_SMX_STORE_H */
