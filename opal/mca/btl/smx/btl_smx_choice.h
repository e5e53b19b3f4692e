/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx choice: the way a peer's messages of 4 KiB and more come to me, by what each way
 * was measured to cost them.
 *
 * A message goes eagerly (copied into shared memory and out of it) or by rendezvous, whose
 * data I pull by single copy (SMSC) or by a pipelined double copy. Which is fastest depends
 * on the CPU, on the caches the two cores share, on whether the buffers are in cache and on
 * what else runs on the cores; no rule of thumb holds on every machine
 * (docs/using-smx.md, "How btl/smx decides"). So the receiver times messages, from the
 * moment their sender handed them to btl/smx to the moment their data is in place here
 * (both read one monotonic clock), per sender, per size range and per way they came.
 *
 * Each range keeps the way in use and tries each other way it allows: once the way in use
 * is measured, again when that becomes twice as dear as usual, and otherwise as rarely as
 * keeps the tries to about a hundredth of the time. A way measured cheaper by more than a
 * sixteenth, on two messages, is taken. The sender follows the word I send it (smx_choice_word): a range's
 * way, a try included. It sets its class's eager limit by the range of the message at
 * hand (smx_choice_eager_limit) and pushes a rendezvous ahead only where the word says
 * double copy.
 *
 * Depends on nothing but the C library: tests/unit/test_smx_choice.cc drives it on the
 * cost tables of the CPUs measured so far.
 */
#ifndef MCA_BTL_SMX_CHOICE_H
#define MCA_BTL_SMX_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum smx_way { SMX_WAY_EAGER = 0, SMX_WAY_SINGLE = 1, SMX_WAY_DOUBLE = 2 };
#define SMX_WAYS 3
#define SMX_WAY_BIT(way) (1u << (way))

/* Size ranges: powers of two from 4 KiB (smaller messages always go eagerly); the last
 * holds everything larger. */
#define SMX_CHOICE_MIN_SHIFT 12
#define SMX_CHOICE_MIN ((size_t) 1 << SMX_CHOICE_MIN_SHIFT)
#define SMX_CHOICE_RANGES 12
/* Messages of a range between tries of another way: at least, at most; in between, what
 * keeps the tries to 1/SMX_CHOICE_TRY_SHARE of the time. A try the sender has not taken
 * within SMX_CHOICE_TRY_WAIT messages that came the way in use is given up. */
#define SMX_CHOICE_TRY_SOON 32
#define SMX_CHOICE_TRY_LATE 4096
#define SMX_CHOICE_TRY_SHARE 100
#define SMX_CHOICE_TRY_WAIT 64

/* The word: two bits a range, eagerly or not and the copy of a rendezvous (also of one
 * that comes where the range goes eagerly: above a fragment, or before the sender heard
 * the word), and SMX_CHOICE_LATE: I am late to the sender, every message up to its late
 * limit eagerly (btl_smx_skew.c). */
#define SMX_CHOICE_LATE (UINT32_C(1) << 31)
#define SMX_CHOICE_EAGER(word, r) (0 != (((word) >> (2 * (r))) & 1u))
#define SMX_CHOICE_SINGLE(word, r) (0 != (((word) >> (2 * (r))) & 2u))
#define SMX_CHOICE_WAY(word, r)                                                                  \
    (SMX_CHOICE_EAGER(word, r) ? SMX_WAY_EAGER                                                  \
                                : SMX_CHOICE_SINGLE(word, r) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE)

struct smx_choice_range {
    uint32_t cost[SMX_WAYS]; /* ns per KiB: the way in use, a running average; another,
                                its last try; 0: not measured */
    uint32_t usual;          /* the least average of the way in use lately */
    uint16_t to_try;         /* measured messages of the way in use before the next try */
    uint8_t way;             /* enum smx_way in use */
    uint8_t copy;            /* its rendezvous' copy (SMX_WAY_SINGLE or _DOUBLE): the way
                                in use, or where that is eagerly the one measured cheaper */
    uint8_t allowed;         /* SMX_WAY_BIT of the ways it may take */
    uint8_t warm;            /* SMX_WAY_BIT: the way's first message here is behind it */
    uint8_t turn;            /* which other way the next try takes */
    uint8_t win_way;         /* a way not in use that one message found cheaper, */
    uint32_t win;            /* ... at this cost: one more message decides (0: none) */
};

struct smx_choice {
    struct smx_choice_range range[SMX_CHOICE_RANGES];
    bool late;          /* I am late to this sender (btl_smx_skew.c) */
    int8_t try_range;   /* a try asked of the sender: its range; -1: none */
    uint8_t try_way;
    uint8_t try_from;   /* ... against the way in use then */
    uint16_t try_wait;  /* messages that came the way in use since */
};

/* Range r's ways before any measurement: 'way' in use, 'allowed' the ways it may take. */
void smx_choice_init(struct smx_choice *c, const uint8_t way[SMX_CHOICE_RANGES],
                     const uint8_t allowed[SMX_CHOICE_RANGES]);
/* The range of a message of 'size' bytes; -1 below the smallest. */
int smx_choice_range_of(size_t size);
/* A message of 'size' bytes came 'way' and took 'ns' from its sender's hand to its place
 * here. Returns true if the word changed. */
bool smx_choice_measured(struct smx_choice *c, size_t size, enum smx_way way, uint64_t ns);
/* Does my get of 'size' bytes (not pushed) go by single copy? */
bool smx_choice_single(const struct smx_choice *c, size_t size);
/* What the sender is to do now, a try included. */
uint32_t smx_choice_word(const struct smx_choice *c);
/* The sender's eager limit (bytes, ob1's header included) for a message of 'size' bytes
 * under 'word': above the message's range where the word sends it eagerly, with as many
 * of the ranges above as go eagerly too (at most 'most'); at its range's start where it
 * goes by rendezvous, with as many of the ranges below as do too (at least SMX_CHOICE_MIN);
 * 'late' where the word says SMX_CHOICE_LATE. A range that goes by single copy and ends at
 * or below 'in_place' goes eagerly, its data left in place (0: none does), 'most' or not. */
size_t smx_choice_eager_limit(uint32_t word, size_t size, size_t most, size_t late,
                              size_t in_place);
/* Does range r of 'word' go eagerly, its data in place or not ('in_place' as above)? */
bool smx_choice_eagerly(uint32_t word, int r, size_t in_place);

#ifdef __cplusplus
}
#endif

#endif /* MCA_BTL_SMX_CHOICE_H */
