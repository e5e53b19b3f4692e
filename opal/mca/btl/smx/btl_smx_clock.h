/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the clock a message's time is measured with, from its sender's stamp to its
 * receiver's end (btl_smx_choice.h), read on two cores (pure C, no Open MPI: unit-tested
 * in tests/unit/test_smx_clock.cc).
 *
 * Where the processor's time-stamp counter is invariant (x86-64, CPUID 0x80000007 EDX bit
 * 8), it is the clock: one counter for every core of the node, read without the kernel.
 * Elsewhere CLOCK_MONOTONIC, which costs a system call where the kernel has no vDSO (as
 * in User-mode Linux: docs/performance.md, "User-mode Linux"). A stamp is the counter's low 32 bits in
 * units of SMX_CLOCK_SHIFT ticks (more than 3 s before it wraps at 5 GHz), the same in
 * every process; each process converts only a stamp's age to ns, with the rate it
 * measured against CLOCK_MONOTONIC at start.
 */
#ifndef MCA_BTL_SMX_CLOCK_H
#define MCA_BTL_SMX_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define SMX_CLOCK_SHIFT 2

struct smx_clock {
    bool tsc;           /* the time-stamp counter; false: CLOCK_MONOTONIC in ns */
    double ns_per_unit; /* a stamp unit's ns (1 for CLOCK_MONOTONIC) */
};

extern struct smx_clock mca_btl_smx_clock;

/* Choose the clock and measure its rate (about 2 ms); 'tsc' false forces CLOCK_MONOTONIC
 * (the processor has no invariant counter, or a test). */
void mca_btl_smx_clock_init(bool tsc);
/* Does this processor have an invariant time-stamp counter? */
bool mca_btl_smx_clock_tsc_invariant(void);

static inline uint64_t mca_btl_smx_clock_ns(void)
{
    struct timespec t;

    (void) clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

/* The time-stamp counter, in cycles (0 where there is none). */
static inline uint64_t mca_btl_smx_cycles(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t) hi << 32) | lo;
#else
    return 0;
#endif
}

/* What a message carries of its sender's clock: never 0, which means "not timed". */
static inline uint32_t mca_btl_smx_stamp_now(void)
{
    uint64_t t = mca_btl_smx_clock.tsc ? mca_btl_smx_cycles() >> SMX_CLOCK_SHIFT
                                       : mca_btl_smx_clock_ns();
    return (uint32_t) t | 1u;
}

/* The ns since 'stamp' (taken in any process of the node), UINT32_MAX for more than 4 s. */
static inline uint32_t mca_btl_smx_stamp_age_ns(uint32_t stamp)
{
    const uint32_t units = mca_btl_smx_stamp_now() - stamp;
    const double ns = (double) units * mca_btl_smx_clock.ns_per_unit;

    return ns < (double) UINT32_MAX ? (uint32_t) ns : UINT32_MAX;
}

#endif /* MCA_BTL_SMX_CLOCK_H */
