/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx adaptive copy: the rule (btl_smx_adapt.h says why).
 */
#include "btl_smx_adapt.h"

void smx_adapt_init(struct smx_adapt *a)
{
    for (int r = 0; r < SMX_ADAPT_RANGES; ++r) {
        a->range[r].cost[SMX_COPY_DOUBLE] = a->range[r].cost[SMX_COPY_SINGLE] = 0;
        a->range[r].usual = 0;
        a->range[r].to_try = 0;
        a->range[r].pick = SMX_COPY_UNSET;
        a->range[r].warm = 0;
    }
}

int smx_adapt_range_of(size_t size)
{
    int r = -1;

    for (size >>= SMX_ADAPT_MIN_SHIFT; 0 != size && r < SMX_ADAPT_RANGES - 1; size >>= 1) {
        ++r;
    }
    return r;
}

enum smx_copy smx_adapt_choose(struct smx_adapt *a, size_t size, enum smx_copy prior)
{
    const int r = smx_adapt_range_of(size);
    struct smx_adapt_range *k;

    if (r < 0) {
        return prior;
    }
    k = &a->range[r];
    if (SMX_COPY_UNSET == k->pick) {
        k->pick = (uint8_t) prior;
    }
    /* What is in use is measured first; then the other, and again when its turn comes. */
    if (0 == k->cost[k->pick]) {
        return (enum smx_copy) k->pick;
    }
    if (0 != k->to_try) {
        k->to_try--;
        return (enum smx_copy) k->pick;
    }
    k->to_try = SMX_ADAPT_TRY_LATE; /* until its measurement comes (maybe gets later) */
    return (enum smx_copy) (1 - k->pick);
}

enum smx_copy smx_adapt_current(const struct smx_adapt *a, size_t size, enum smx_copy prior)
{
    const int r = smx_adapt_range_of(size);

    if (r < 0 || SMX_COPY_UNSET == a->range[r].pick) {
        return prior;
    }
    return (enum smx_copy) a->range[r].pick;
}

bool smx_adapt_single_far_cheaper(const struct smx_adapt *a, size_t size)
{
    const int r = smx_adapt_range_of(size);
    const struct smx_adapt_range *k = &a->range[r < 0 ? 0 : r];

    return r >= 0 && SMX_COPY_SINGLE == k->pick && 0 != k->cost[SMX_COPY_SINGLE]
           && k->cost[SMX_COPY_DOUBLE] >= 2 * (uint64_t) k->cost[SMX_COPY_SINGLE];
}

bool smx_adapt_measured(struct smx_adapt *a, size_t size, enum smx_copy how, uint64_t bytes,
                        uint64_t ns)
{
    const int r = smx_adapt_range_of(size);
    struct smx_adapt_range *k;
    uint64_t cost;
    int other;

    if (r < 0 || 0 == bytes || SMX_COPY_UNSET == how) {
        return false;
    }
    k = &a->range[r];
    if (SMX_COPY_UNSET == k->pick) {
        k->pick = (uint8_t) how;
    }
    if (0 == (k->warm & (1u << how))) {
        k->warm |= (uint8_t) (1u << how); /* a first get: not what the method costs */
        if (how != k->pick) {
            k->to_try = 0;
        }
        return false;
    }
    cost = ns * 1024 / bytes;
    cost = 0 == cost ? 1 : cost > UINT32_MAX ? UINT32_MAX : cost;
    if (how == k->pick && 0 != k->cost[how]) {
        /* What is in use: an average, which one late transfer (an interrupt, a page
         * fault) moves by a quarter at most; a peer that stays slow moves it all the way
         * within a few transfers. */
        const uint64_t old = k->cost[how];
        cost = (3 * old + (cost > 2 * old ? 2 * old : cost)) / 4;
    }
    k->cost[how] = (uint32_t) cost; /* a try replaces what it measured before */
    other = 1 - k->pick;
    /* The other is cheaper by more than an eighth (as last measured): take it. */
    if (0 != k->cost[other] && 8 * (uint64_t) k->cost[other] < 7 * (uint64_t) k->cost[k->pick]) {
        k->pick = (uint8_t) other;
        k->usual = k->cost[other];
        k->to_try = SMX_ADAPT_TRY_SOON;
        return true;
    }
    if (how != k->pick) { /* a try that lost: the next when it costs a hundredth */
        const uint64_t in_use = 0 == k->cost[k->pick] ? 1 : k->cost[k->pick];
        const uint64_t loss = k->cost[how] > in_use ? k->cost[how] - in_use : 0;
        const uint64_t gets = SMX_ADAPT_TRY_SHARE * loss / in_use;
        k->to_try = gets < SMX_ADAPT_TRY_SOON ? SMX_ADAPT_TRY_SOON
                    : gets > SMX_ADAPT_TRY_LATE ? SMX_ADAPT_TRY_LATE : (uint16_t) gets;
    } else {
        /* 'usual': the least average lately (it creeps up by 1/64 a get, so that one lucky
         * stretch does not make the ordinary look slow) */
        const uint64_t usual = (uint64_t) k->usual + k->usual / 64 + 1;
        if (0 == k->usual || cost < usual) {
            k->usual = (uint32_t) (cost < usual ? cost : usual);
        } else if (cost > 2 * usual) {
            k->usual = (uint32_t) cost; /* twice as dear: see what the other costs now */
            k->to_try = 0;
        }
    }
    return false;
}
