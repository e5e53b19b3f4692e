/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx adaptive copy: each peer's rendezvous go by whichever of single and double copy
 * was measured faster lately, size range by size range.
 *
 * The thresholds (btl_smx_policy.h) say where a peer starts. What a copy costs can change
 * under a running job: another process on the peer's core, a peer computing outside MPI,
 * virtual CPUs moved by the host. A double copy needs both processes running in step, a
 * single copy only the one pulling, so the two react very differently (docs/using-smx.md,
 * "How btl/smx decides"). Each get is timed. The method not in use is tried once the one in
 * use is measured, again at once when the one in use becomes twice as dear as it usually
 * is, and otherwise after as many gets as keep the tries to about a hundredth of the time
 * (what a try loses, as last measured, against a get of the one in use). A peer that
 * slows down is left within a few gets. The first get of each method in a range is not
 * counted: it pays for what is touched for the first time (pages, a registration).
 *
 * Depends on nothing but the C library so that the rule can be unit-tested on synthetic
 * costs (tests/unit/test_smx_adapt.cc).
 */
#ifndef MCA_BTL_SMX_ADAPT_H
#define MCA_BTL_SMX_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum smx_copy { SMX_COPY_DOUBLE = 0, SMX_COPY_SINGLE = 1, SMX_COPY_UNSET = 2 };

/* Size ranges: powers of two from 4 KiB; the last one holds everything larger. */
#define SMX_ADAPT_MIN_SHIFT 12
#define SMX_ADAPT_RANGES 16
/* Gets of a range between tries of the method not in use: at least (it may have been
 * unlucky once: soon after it was left) and at most; in between, what keeps the tries to
 * SMX_ADAPT_TRY_SHARE of the time. */
#define SMX_ADAPT_TRY_SOON 32
#define SMX_ADAPT_TRY_LATE 4096
#define SMX_ADAPT_TRY_SHARE 100

struct smx_adapt_range {
    uint32_t cost[2]; /* ns per KiB of each method as last measured (the one in use: a
                         running average); 0: not measured */
    uint32_t usual;   /* the least average of the one in use lately (since it was taken,
                         or last became dearer) */
    uint16_t to_try;  /* gets of the range before the other method is tried again */
    uint8_t pick;     /* enum smx_copy in use for these sizes */
    uint8_t warm;     /* bit (1 << method): its first get here is behind it */
};

struct smx_adapt {
    struct smx_adapt_range range[SMX_ADAPT_RANGES];
};

void smx_adapt_init(struct smx_adapt *a);
/* The range a transfer of 'size' bytes belongs to; -1 below the smallest. */
int smx_adapt_range_of(size_t size);
/* The method for a get of 'size' bytes; 'prior' is what the thresholds say. */
enum smx_copy smx_adapt_choose(struct smx_adapt *a, size_t size, enum smx_copy prior);
/* The method in use for 'size' bytes, as smx_adapt_choose would keep it, without taking a
 * turn of its tries of the other (a question asked where no get follows). */
enum smx_copy smx_adapt_current(const struct smx_adapt *a, size_t size, enum smx_copy prior);
/* Does the range of 'size' go by single copy, measured at most half as dear as double
 * copy? (Then a pair's double copies fare so badly that its messages just above the
 * eager limit would go better by single copy too: btl_smx_policy.c.) */
bool smx_adapt_single_far_cheaper(const struct smx_adapt *a, size_t size);
/* 'how' moved 'bytes' (of transfers in the range of 'size') in 'ns'. Returns true when
 * the method in use for that range changed. */
bool smx_adapt_measured(struct smx_adapt *a, size_t size, enum smx_copy how, uint64_t bytes,
                        uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* MCA_BTL_SMX_ADAPT_H */
