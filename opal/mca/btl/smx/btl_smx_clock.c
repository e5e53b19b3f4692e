/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the clock's choice and rate (btl_smx_clock.h).
 */
#include "btl_smx_clock.h"

#if defined(__x86_64__)
#    include <cpuid.h>
#endif

struct smx_clock mca_btl_smx_clock = {.tsc = false, .ns_per_unit = 1.0};

bool mca_btl_smx_clock_tsc_invariant(void)
{
#if defined(__x86_64__)
    unsigned int a, b, c, d;

    if (0 == __get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) {
        return false;
    }
    __cpuid(0x80000007u, a, b, c, d);
    return 0 != (d & (1u << 8));
#else
    return false;
#endif
}

/* The counter read on both sides of a clock_gettime(): its midpoint is when the clock was
 * read, to within half the bracket. The tightest of a few brackets, so that a process
 * preempted inside one (a loaded node) does not skew the rate. */
static void smx_clock_pair(uint64_t *ns, uint64_t *cycles)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < 8; ++i) {
        const uint64_t before = mca_btl_smx_cycles();
        const uint64_t t = mca_btl_smx_clock_ns();
        const uint64_t bracket = mca_btl_smx_cycles() - before;

        if (bracket < best) {
            best = bracket;
            *ns = t;
            *cycles = before + bracket / 2;
        }
    }
}

void mca_btl_smx_clock_init(bool tsc)
{
    /* 2 ms: the rate within 1 % even where a clock read is a system call (UML) */
    const uint64_t span_ns = 2000000u;
    uint64_t ns0, c0, ns1, c1;

    mca_btl_smx_clock.tsc = false;
    mca_btl_smx_clock.ns_per_unit = 1.0;
    if (!tsc || !mca_btl_smx_clock_tsc_invariant()) {
        return;
    }
    smx_clock_pair(&ns0, &c0);
    do {
        smx_clock_pair(&ns1, &c1);
    } while (ns1 - ns0 < span_ns);
    if (c1 <= c0) {
        return; /* a counter that does not count */
    }
    mca_btl_smx_clock.ns_per_unit = (double) (ns1 - ns0)
                                    / (double) ((c1 - c0) >> SMX_CLOCK_SHIFT);
    mca_btl_smx_clock.tsc = true;
}
