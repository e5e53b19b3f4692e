/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: how a sender writes a payload into shared memory, memcpy or non-temporal
 * stores, chosen per peer from what it measures (pure C, no Open MPI: unit-tested in
 * tests/unit/test_smx_store.cc).
 *
 * memcpy leaves the lines in the sender's cache for the reader to take; streaming sends
 * them to memory. Where taking a line from the other core is dear (virtual CPUs the host
 * moves, cores that share no cache) the sender's own memcpy stalls on the lines the
 * reader holds and streaming wins; elsewhere memcpy does, and either can change while a
 * job runs. So the sender times one copy in SMX_STORE_TIME_EVERY of the way in use and
 * one in SMX_STORE_PROBE_EVERY the other way; it streams while memcpy costs more than
 * SMX_STORE_STREAM_RATIO times a streamed copy and goes back below SMX_STORE_CACHED_RATIO.
 * Copies below SMX_STORE_MIN always use memcpy; below SMX_STORE_TIME_MIN the store
 * buffer hides their cost from the sender's clock, so they follow what larger copies to
 * that peer measured. A memcpy sampled while streaming looks cheaper than memcpy in use
 * (it writes lines no reader has just taken), so a return to memcpy that lasts fewer than
 * SMX_STORE_SHORT_HOLD copies doubles the interval between memcpy samples, up to
 * SMX_STORE_PROBE_MAX. The measurements behind these rules: docs/performance.md, "Where
 * the lines come from, and non-temporal stores on far cores".
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

/* Copy n bytes (from SMX_STORE_MIN) into shared memory for the peer whose costs s holds:
 * with non-temporal stores if 'always', else the way s chooses, timing the copies it
 * samples. What it did: */
#define SMX_STORE_STREAMED 1u /* wrote with non-temporal stores */
#define SMX_STORE_SWITCHED 2u /* its time changed the way in use */
unsigned smx_store_copy(struct smx_store *s, bool always, void *to, const void *from, size_t n);

#endif /* MCA_BTL_SMX_STORE_H */
