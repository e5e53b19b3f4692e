/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx choice: the rule (btl_smx_choice.h says why).
 */
#include "btl_smx_choice.h"

/* A cost clearly below another: by more than a sixteenth (an eighth hides gaps that
 * matter; docs/design.md, "The switch"). */
static bool smx_cheaper(uint64_t a, uint64_t b)
{
    return 0 != a && 0 != b && 16 * a < 15 * b;
}

void smx_choice_init(struct smx_choice *c, const uint8_t way[SMX_CHOICE_RANGES],
                     const uint8_t allowed[SMX_CHOICE_RANGES])
{
    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        struct smx_choice_range *k = &c->range[r];
        k->cost[SMX_WAY_EAGER] = k->cost[SMX_WAY_SINGLE] = k->cost[SMX_WAY_DOUBLE] = 0;
        k->usual = 0;
        k->to_try = 0;
        k->allowed = allowed[r] & 7u;
        k->way = way[r];
        if (0 == (k->allowed & SMX_WAY_BIT(k->way))) { /* never one it may not take */
            k->way = 0 != (k->allowed & SMX_WAY_BIT(SMX_WAY_DOUBLE)) ? SMX_WAY_DOUBLE
                     : 0 != (k->allowed & SMX_WAY_BIT(SMX_WAY_EAGER)) ? SMX_WAY_EAGER
                                                                      : SMX_WAY_SINGLE;
        }
        k->copy = SMX_WAY_EAGER != k->way ? k->way
                  : 0 != (k->allowed & SMX_WAY_BIT(SMX_WAY_DOUBLE)) ? SMX_WAY_DOUBLE
                                                                   : SMX_WAY_SINGLE;
        k->warm = 0;
        k->turn = 0;
        k->win = 0;
        k->win_way = SMX_WAY_EAGER;
    }
    c->late = false;
    c->try_range = -1;
    c->try_way = c->try_from = SMX_WAY_EAGER;
    c->try_wait = 0;
}

int smx_choice_range_of(size_t size)
{
    int r = -1;

    for (size >>= SMX_CHOICE_MIN_SHIFT; 0 != size && r < SMX_CHOICE_RANGES - 1; size >>= 1) {
        ++r;
    }
    return r;
}

uint32_t smx_choice_word(const struct smx_choice *c)
{
    uint32_t word = c->late ? SMX_CHOICE_LATE : 0;

    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        const unsigned way = r == c->try_range ? c->try_way : c->range[r].way;
        const unsigned copy = SMX_WAY_EAGER == way ? c->range[r].copy : way;
        word |= (uint32_t) ((SMX_WAY_EAGER == way) | (SMX_WAY_SINGLE == copy) << 1) << (2 * r);
    }
    return word;
}

bool smx_choice_single(const struct smx_choice *c, size_t size)
{
    const int r = smx_choice_range_of(size);

    return SMX_CHOICE_SINGLE(smx_choice_word(c), r < 0 ? 0 : r);
}

bool smx_choice_eagerly(uint32_t word, int r, size_t in_place)
{
    const unsigned way = SMX_CHOICE_WAY(word, r);

    return SMX_WAY_EAGER == way
           || (SMX_WAY_SINGLE == way && SMX_CHOICE_MIN << (r + 1) <= in_place);
}

size_t smx_choice_eager_limit(uint32_t word, size_t size, size_t most, size_t late,
                              size_t in_place)
{
    int r = smx_choice_range_of(size);
    size_t limit;

    if (0 != (word & SMX_CHOICE_LATE)) {
        return late;
    }
    if (r < 0) {
        return SMX_CHOICE_MIN;
    }
    if (smx_choice_eagerly(word, r, in_place)) {
        while (r + 1 < SMX_CHOICE_RANGES && smx_choice_eagerly(word, r + 1, in_place)) {
            ++r;
        }
        limit = SMX_CHOICE_MIN << (r + 1);
        /* (a top range in place may pass a fragment: its data stays where it is) */
        return limit < most || SMX_WAY_SINGLE == SMX_CHOICE_WAY(word, r) ? limit : most;
    }
    while (r > 0 && !smx_choice_eagerly(word, r - 1, in_place)) {
        --r;
    }
    limit = SMX_CHOICE_MIN << r;
    return limit < most ? limit : most;
}

/* Range r's cheapest way as last measured, if it beats the one in use; and the copy of
 * its rendezvous. */
static bool smx_decide(struct smx_choice_range *k)
{
    int best = k->way;
    const int other = SMX_WAY_SINGLE == k->copy ? SMX_WAY_DOUBLE : SMX_WAY_SINGLE;

    if (0 != (k->allowed & SMX_WAY_BIT(other)) && smx_cheaper(k->cost[other], k->cost[k->copy])) {
        k->copy = (uint8_t) other;
    }
    for (int w = 0; w < SMX_WAYS; ++w) {
        if (0 != (k->allowed & SMX_WAY_BIT(w)) && smx_cheaper(k->cost[w], k->cost[best])) {
            best = w;
        }
    }
    if (best == k->way) {
        return false;
    }
    k->way = (uint8_t) best;
    if (SMX_WAY_EAGER != best) {
        k->copy = (uint8_t) best;
    }
    k->usual = k->cost[best];
    k->to_try = SMX_CHOICE_TRY_SOON;
    return true;
}

/* The next try in range r, if it allows another way: each in turn. */
static void smx_try_next(struct smx_choice *c, int r, enum smx_way in_use)
{
    struct smx_choice_range *k = &c->range[r];
    uint8_t other[SMX_WAYS];
    int n = 0;

    for (int w = 0; w < SMX_WAYS; ++w) {
        /* (a rendezvous in a range that goes eagerly: only the other copy) */
        if (w != k->way && w != (int) in_use && 0 != (k->allowed & SMX_WAY_BIT(w))) {
            other[n++] = (uint8_t) w;
        }
    }
    if (0 == n) {
        return;
    }
    c->try_range = (int8_t) r;
    c->try_way = other[k->turn++ % n];
    c->try_from = (uint8_t) in_use;
    c->try_wait = 0;
    k->to_try = SMX_CHOICE_TRY_LATE; /* (set again once the try is measured) */
}

/* Range r's way in use is measured for the first time: its first try comes as soon as the
 * nearest range below, measured per KiB, says it would pay off. A try of a large size is
 * dear (a single copy of 4 MiB that loses costs hundreds of us), and what smaller sizes of
 * the same peer showed holds for larger ones often enough: where a way cost twice the way
 * in use there, its first try here waits a hundred messages. */
static void smx_first_try_as_below(struct smx_choice *c, int r, enum smx_way way)
{
    struct smx_choice_range *k = &c->range[r];
    uint64_t best = UINT64_MAX;

    for (int q = r - 1; q >= 0 && UINT64_MAX == best; --q) {
        const struct smx_choice_range *below = &c->range[q];
        if (0 == below->cost[way]) {
            continue;
        }
        for (int w = 0; w < SMX_WAYS; ++w) {
            if (w != (int) way && 0 != (k->allowed & SMX_WAY_BIT(w)) && 0 != below->cost[w]) {
                const uint64_t n = SMX_CHOICE_TRY_SHARE * below->cost[w] / below->cost[way];
                best = n < best ? n : best;
            }
        }
    }
    if (UINT64_MAX != best) {
        best = best > SMX_CHOICE_TRY_SHARE ? best - SMX_CHOICE_TRY_SHARE : 0;
        k->to_try = best > SMX_CHOICE_TRY_LATE ? SMX_CHOICE_TRY_LATE : (uint16_t) best;
    }
}

bool smx_choice_measured(struct smx_choice *c, size_t size, enum smx_way way, uint64_t ns)
{
    const int r = smx_choice_range_of(size);
    const uint32_t before = smx_choice_word(c);
    struct smx_choice_range *k;
    uint64_t cost;

    if (r < 0 || (unsigned) way >= SMX_WAYS) {
        return false;
    }
    k = &c->range[r];
    /* in use: the range's way, or in a range that goes eagerly the copy of the rendezvous
     * that come there all the same (above a fragment) */
    const bool in_use = way == k->way || (SMX_WAY_EAGER == k->way && way == k->copy);
    if (0 == (k->warm & SMX_WAY_BIT(way))) {
        /* a way's first message in this range paid for first touches (of a mapping of the
         * sender's buffer, where single copy maps it: a page fault a page): counted, it
         * would make the way in use look dearer than it is, or a try lose by far and wait
         * thousands of messages for its next (docs/design.md, "The switch") */
        k->warm |= (uint8_t) SMX_WAY_BIT(way);
        return false; /* (a try stays asked for) */
    }
    cost = ns * 1024 / size;
    cost = 0 == cost ? 1 : cost > UINT32_MAX ? UINT32_MAX : cost;
    if (in_use && 0 != k->cost[way]) {
        /* the way in use: an average, which one late message (an interrupt, a page fault)
         * moves by a quarter at most, and a peer that stays slow all the way within a few */
        const uint64_t old = k->cost[way];
        cost = (3 * old + (cost > 2 * old ? 2 * old : cost)) / 4;
    }
    if (in_use && 0 == k->cost[way]) {
        smx_first_try_as_below(c, r, way);
    }
    if (!in_use) {
        /* a way that would take over on this one message is heard once more first: one
         * lucky message must not move a range (docs/design.md, "The switch") */
        struct smx_choice_range probe = *k;
        probe.cost[way] = (uint32_t) cost;
        if (smx_decide(&probe) && !(k->win_way == (uint8_t) way && 0 != k->win)) {
            k->win = (uint32_t) cost;
            k->win_way = (uint8_t) way;
            return false; /* (a try stays asked for) */
        }
        if (k->win_way == (uint8_t) way && 0 != k->win) {
            cost = (cost + k->win) / 2;
        }
        k->win = 0;
    }
    k->cost[way] = (uint32_t) cost;
    if (!in_use) {
        if (c->try_range == r && way == c->try_way) {
            /* a try, measured: the next when it costs a hundredth of the time */
            const uint64_t use = 0 == k->cost[c->try_from] ? 1 : k->cost[c->try_from];
            const uint64_t n = SMX_CHOICE_TRY_SHARE * (cost > use ? cost - use : 0) / use;
            c->try_range = -1;
            k->to_try = n < SMX_CHOICE_TRY_SOON ? SMX_CHOICE_TRY_SOON
                        : n > SMX_CHOICE_TRY_LATE ? SMX_CHOICE_TRY_LATE : (uint16_t) n;
        }
        (void) smx_decide(k);
        return smx_choice_word(c) != before;
    }
    if (c->try_range >= 0 && ++c->try_wait > SMX_CHOICE_TRY_WAIT) {
        /* the sender has not taken it: its messages are of other sizes now (then the next
         * of that size tries again), or another peer's word holds the class's eager limit
         * (then later) */
        c->range[c->try_range].to_try = c->try_range == r ? SMX_CHOICE_TRY_LATE : 0;
        c->try_range = -1;
    }
    if (!smx_decide(k)) {
        /* 'usual': the least average lately (creeping up by 1/64 a message, so that one
         * lucky stretch does not make the ordinary look slow); twice that: try now */
        const uint64_t usual = (uint64_t) k->usual + k->usual / 64 + 1;
        if (0 == k->usual) {
            k->usual = (uint32_t) cost;
        } else if (cost < usual) {
            k->usual = (uint32_t) cost;
        } else if (cost > 2 * usual) {
            k->usual = (uint32_t) cost;
            k->to_try = 0;
        }
        if (0 != k->to_try) {
            k->to_try--;
        } else if (c->try_range < 0) {
            smx_try_next(c, r, way);
        }
    }
    return smx_choice_word(c) != before;
}
