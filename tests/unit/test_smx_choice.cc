// Unit tests of btl/smx's choice of way (opal/mca/btl/smx/btl_smx_choice.c): eagerly, by
// single copy or by double copy, per size range, from measured one-way costs. The cost
// tables are those of the CPUs measured so far (each with its source); a sweep of sizes,
// as IMB runs it, must end every range on a way within a sixteenth of the cheapest, and
// spend few messages on the others.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../../opal/mca/btl/smx/btl_smx_choice.h"

namespace {

constexpr size_t kFrag = 34816;    // btl/smx's fragment: the largest eager message
constexpr size_t kLate = 133120;   // the late limit (btl_smx_skew_eager_limit)
constexpr double kNone = -1;       // a way the table has no figure for

// us per message of each way at one size (a ping-pong's one-way time).
struct Row {
    size_t bytes;
    double eager, single, dbl;
};
struct Table {
    std::string name;
    std::vector<Row> rows;
};

// 2-vCPU Intel Xeon, Emerald Rapids (family 6 model 207), 2026-11-29
// (../shared/machines/intel-xeon-emr-2026-11-29.md): eager = btl/smx's eager double copy,
// single = stock sm + cma (ob1's RGET), double = btl/smx's pushed double copy from 64 KiB,
// stock sm without single copy below.
const Table kXeonInCache = {"Xeon EMR, in cache, quiet",
                            {{4096, 1.39, 2.27, 1.99},
                             {8192, 2.13, 2.31, 2.83},
                             {16384, 3.09, 2.79, 4.36},
                             {32768, 4.67, 3.57, 7.16},
                             {65536, kNone, 5.57, 7.39},
                             {131072, kNone, 9.50, 11.92},
                             {262144, kNone, 14.79, 17.87},
                             {524288, kNone, 27.35, 33.48},
                             {1048576, kNone, 70.56, 94.76},
                             {2097152, kNone, 204.40, 212.76},
                             {4194304, kNone, 411.27, 417.28}}};
const Table kXeonOffCache = {"Xeon EMR, off cache, quiet",
                             {{4096, 1.86, 3.20, 2.16},
                              {8192, 2.72, 3.75, 3.21},
                              {16384, 4.14, 5.63, 5.00},
                              {32768, 6.90, 8.97, 8.14},
                              {65536, kNone, 13.83, 10.95},
                              {131072, kNone, 26.03, 17.85},
                              {262144, kNone, 48.74, 32.85},
                              {524288, kNone, 92.61, 60.86},
                              {1048576, kNone, 202.56, 121.55},
                              {2097152, kNone, 455.08, 243.70},
                              {4194304, kNone, 876.20, 534.32}}};
// a loop pinned to the peer's core; double = stock sm without single copy throughout
const Table kXeonBusy = {"Xeon EMR, in cache, busy peer core",
                         {{4096, 3.44, 4.22, 3.99},
                          {8192, 4.29, 4.74, 7.10},
                          {16384, 7.27, 6.38, 8.58},
                          {32768, 10.88, 8.40, 14.95},
                          {65536, kNone, 12.27, 20.86},
                          {131072, kNone, 20.37, 30.68},
                          {262144, kNone, 35.91, 54.46},
                          {524288, kNone, 63.47, 100.95},
                          {1048576, kNone, 167.72, 202.18},
                          {2097152, kNone, 415.27, 405.02},
                          {4194304, kNone, 833.07, 864.77}}};
// CMA made 1500 ns dearer a page by a preloaded shim
const Table kXeonDearCma = {"Xeon EMR, in cache, dear cma",
                            {{4096, 1.39, 3.86, 2.02},
                             {8192, 2.15, 5.84, 3.03},
                             {16384, 3.29, 9.24, 4.46},
                             {32768, 4.85, 16.30, 6.93},
                             {65536, kNone, 30.74, 7.71},
                             {131072, kNone, 58.65, 12.53},
                             {262144, kNone, 114.09, 23.00},
                             {524288, kNone, 225.15, 43.45},
                             {1048576, kNone, 474.88, 99.47},
                             {2097152, kNone, 981.30, 204.62},
                             {4194304, kNone, 2006.78, 406.93}}};
// 2-vCPU AMD EPYC, Zen 5 (family 26 model 2), 2026-11-28, in the VM's far state (README's
// table at f0ac809): eager = btl/smx below 64 KiB, double = btl/smx from 64 KiB (pushed),
// stock sm without single copy below; single = stock sm + cma.
const Table kZen5InCache = {"Zen 5, in cache, far state",
                            {{4096, 0.93, 2.44, 1.63},
                             {16384, 1.55, 3.23, 2.69},
                             {65536, kNone, 5.92, 3.64},
                             {1048576, kNone, 69.05, 34.86},
                             {4194304, kNone, 307.5, 144.9}}};

// 2-vCPU AMD EPYC, Zen 4 (family 25 model 17), kernel 6.18, 2026-11-29: btl/smx's own
// three ways, each pinned by parameters, side by side (medians of 11; off cache the quiet
// jobs only; docs/performance.md, "One switch, by measurement").
const Table kZen4InCache = {"Zen 4, in cache, quiet",
                            {{4096, 0.56, 2.57, 0.87},
                             {8192, 0.78, 2.77, 1.36},
                             {16384, 1.26, 3.47, 2.08},
                             {32768, 2.13, 4.73, 3.53},
                             {65536, kNone, 7.00, 3.38},
                             {131072, kNone, 11.82, 5.54},
                             {262144, kNone, 21.67, 10.27},
                             {524288, kNone, 43.74, 20.80},
                             {1048576, kNone, 89.22, 39.30},
                             {2097152, kNone, 196.23, 78.23},
                             {4194304, kNone, 828.90, 189.42}}};
const Table kZen4OffCache = {"Zen 4, off cache, quiet",
                             {{4096, 1.12, 3.81, 2.03},
                              {8192, 2.06, 4.70, 3.20},
                              {16384, 3.57, 6.01, 4.84},
                              {32768, 6.89, 9.58, 8.22},
                              {65536, kNone, 16.87, 9.23},
                              {131072, kNone, 33.65, 15.28},
                              {262144, kNone, 64.04, 25.95},
                              {1048576, kNone, 240.23, 93.52},
                              {4194304, kNone, 928.52, 364.12}}};
// a loop on the peer's core: eager = btl/smx below 64 KiB, double = btl/smx from 64 KiB
// (stock sm without single copy below), single = stock sm + cma; medians of 15
const Table kZen4Busy = {"Zen 4, in cache, busy peer core",
                         {{4096, 1.36, 5.01, 2.34},
                          {8192, 2.28, 6.95, 2.83},
                          {16384, 4.05, 8.38, 5.73},
                          {32768, 7.85, 10.09, 10.33},
                          {65536, kNone, 16.72, 3.45},
                          {131072, kNone, 31.59, 5.34},
                          {262144, kNone, 63.44, 10.25},
                          {524288, kNone, 127.22, 20.65},
                          {1048576, kNone, 259.10, 41.08},
                          {2097152, kNone, 553.97, 77.62},
                          {4194304, kNone, 1367.11, 249.76}}};

const std::vector<const Table *> kTables = {&kXeonInCache, &kXeonOffCache, &kXeonBusy,
                                            &kXeonDearCma, &kZen5InCache, &kZen4InCache,
                                            &kZen4OffCache, &kZen4Busy};

double cost_of(const Row &row, enum smx_way way)
{
    return SMX_WAY_EAGER == way ? row.eager : SMX_WAY_SINGLE == way ? row.single : row.dbl;
}

// btl/smx's own start for a pair sharing a cache (btl_smx_policy.c): eager up to a
// fragment, double copy above; every way allowed that fits.
void init_shared_cache(struct smx_choice *c, bool can_single = true)
{
    uint8_t way[SMX_CHOICE_RANGES], allowed[SMX_CHOICE_RANGES];
    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        const bool eager = (SMX_CHOICE_MIN << r) < kFrag;
        way[r] = eager ? SMX_WAY_EAGER : SMX_WAY_DOUBLE;
        allowed[r] = (eager ? SMX_WAY_BIT(SMX_WAY_EAGER) : 0) | SMX_WAY_BIT(SMX_WAY_DOUBLE)
                     | (can_single ? SMX_WAY_BIT(SMX_WAY_SINGLE) : 0);
    }
    smx_choice_init(c, way, allowed);
}

// The way the sender takes for a message under the word, as btl/smx does: eagerly where
// the word's eager limit holds it with ob1's header, else a rendezvous that the receiver
// pulls as it chooses.
enum smx_way sent_way(const struct smx_choice *c, size_t bytes)
{
    const uint32_t word = smx_choice_word(c);
    if (bytes + 80 <= smx_choice_eager_limit(word, bytes, kFrag, kLate, 0)) {
        return SMX_WAY_EAGER;
    }
    return smx_choice_single(c, bytes) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
}

// A figure for this way at this size, or the dearest the row has (a way the table lacks
// is never the cheapest).
double table_cost(const Row &row, enum smx_way way)
{
    double cost = cost_of(row, way);
    if (cost < 0) {
        cost = 10 * std::max(row.eager, std::max(row.single, row.dbl));
    }
    return cost;
}

struct Sweep {
    int messages = 0, off_best = 0;
};

// n messages of each size of the table, smallest first (IMB's order), each measured at
// the table's cost with a small deterministic jitter.
Sweep sweep(struct smx_choice *c, const Table &t, int n)
{
    Sweep s;
    unsigned seed = 1;
    for (const Row &row : t.rows) {
        double best = 1e300;
        for (int w = 0; w < SMX_WAYS; ++w) {
            if (cost_of(row, (enum smx_way) w) > 0) {
                best = std::min(best, cost_of(row, (enum smx_way) w));
            }
        }
        for (int i = 0; i < n; ++i, ++s.messages) {
            const enum smx_way way = sent_way(c, row.bytes);
            seed = seed * 1103515245u + 12345u;
            const double jitter = 1.0 + ((seed >> 16) % 100) / 2000.0; // 0-5 %
            const double us = table_cost(row, way) * jitter;
            s.off_best += table_cost(row, way) > best * 16 / 15; // (the way, not the jitter)
            smx_choice_measured(c, row.bytes, way, (uint64_t) (us * 1000));
        }
    }
    return s;
}

TEST(ChoiceRange, PowersOfTwoFrom4KiBAndOneForAllLarger)
{
    EXPECT_EQ(-1, smx_choice_range_of(0));
    EXPECT_EQ(-1, smx_choice_range_of(4095));
    EXPECT_EQ(0, smx_choice_range_of(4096));
    EXPECT_EQ(0, smx_choice_range_of(8191));
    EXPECT_EQ(1, smx_choice_range_of(8192));
    EXPECT_EQ(8, smx_choice_range_of(1 << 20));
    EXPECT_EQ(SMX_CHOICE_RANGES - 1, smx_choice_range_of((size_t) 1 << 40));
}

TEST(ChoiceEagerLimit, FollowsTheRangeOfTheMessageAtHand)
{
    // ranges 0-1 eagerly, 2 single, 3 eagerly, 4 and up double
    uint32_t word = 0;
    const enum smx_way ways[SMX_CHOICE_RANGES] = {SMX_WAY_EAGER, SMX_WAY_EAGER, SMX_WAY_SINGLE,
                                                  SMX_WAY_EAGER, SMX_WAY_DOUBLE};
    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        const enum smx_way way = r < 5 ? ways[r] : SMX_WAY_DOUBLE;
        word |= (uint32_t) (SMX_WAY_EAGER == way ? 1 : SMX_WAY_SINGLE == way ? 2 : 0) << (2 * r);
        EXPECT_EQ(way, SMX_CHOICE_WAY(word, r));
    }
    EXPECT_EQ(SMX_CHOICE_MIN, smx_choice_eager_limit(word, 100, kFrag, kLate, 0));
    EXPECT_EQ(16384u, smx_choice_eager_limit(word, 5000, kFrag, kLate, 0));   // up to range 2
    EXPECT_EQ(16384u, smx_choice_eager_limit(word, 20000, kFrag, kLate, 0));  // range 2 by rdv
    EXPECT_EQ(kFrag, smx_choice_eager_limit(word, 33000, kFrag, kLate, 0));   // capped
    EXPECT_EQ(65536u, smx_choice_eager_limit(word, 1 << 20, 1 << 20, kLate, 0));
    EXPECT_EQ(kLate, smx_choice_eager_limit(word | SMX_CHOICE_LATE, 5000, kFrag, kLate, 0));
    // where eager messages may stay in place, a range by single copy that ends within a
    // fragment goes eagerly, its data in place; a larger one stays a rendezvous
    EXPECT_TRUE(smx_choice_eagerly(word, 2, 32768));
    EXPECT_FALSE(smx_choice_eagerly(word, 2, 32767));
    EXPECT_EQ(65536u, smx_choice_eager_limit(word, 5000, 1 << 20, kLate, 32768));  // 0-3
    EXPECT_EQ(65536u, smx_choice_eager_limit(word, 20000, 1 << 20, kLate, 32768));
    EXPECT_EQ(65536u, smx_choice_eager_limit(word, 1 << 20, 1 << 20, kLate, 32768));
    EXPECT_EQ(16384u, smx_choice_eager_limit(word, 20000, 1 << 20, kLate, 16384)); // too big
    const uint32_t single4k = (word & ~UINT32_C(3)) | 2u; // range 0 single, 1 eagerly
    EXPECT_EQ(SMX_CHOICE_MIN, smx_choice_eager_limit(single4k, 5000, kFrag, kLate, 0));
    EXPECT_EQ(16384u, smx_choice_eager_limit(single4k, 5000, 1 << 20, kLate, 8192));
    // a top range in place passes a fragment (its data needs no room): 32-64 KiB single
    const uint32_t single32k = (word & ~(UINT32_C(3) << 6)) | (UINT32_C(2) << 6);
    EXPECT_EQ(65536u, smx_choice_eager_limit(single32k, 40000, kFrag, kLate, 65536));
    EXPECT_EQ(32768u, smx_choice_eager_limit(single32k, 40000, kFrag, kLate, 32768));
}

TEST(Choice, FirstMessageOfTheWayInUseIsNotCounted)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const int r = smx_choice_range_of(1 << 20);
    EXPECT_FALSE(smx_choice_measured(&c, 1 << 20, SMX_WAY_DOUBLE, 1000000000));
    EXPECT_EQ(0u, c.range[r].cost[SMX_WAY_DOUBLE]);
    smx_choice_measured(&c, 1 << 20, SMX_WAY_DOUBLE, 100000);
    EXPECT_EQ(100000u * 1024 / (1 << 20), c.range[r].cost[SMX_WAY_DOUBLE]);
}

TEST(Choice, ALosingTryCostsTwoMessages)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 4 << 20;
    const int r = smx_choice_range_of(size);
    smx_choice_measured(&c, size, SMX_WAY_DOUBLE, 400000); // warm
    smx_choice_measured(&c, size, SMX_WAY_DOUBLE, 400000); // asks a try of single copy
    ASSERT_EQ(r, c.try_range);
    ASSERT_EQ(SMX_WAY_SINGLE, SMX_CHOICE_WAY(smx_choice_word(&c), r));
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 900000); // its first: not counted
    EXPECT_EQ(r, c.try_range);
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 900000); // dearer: the try is over
    EXPECT_EQ(-1, c.try_range);
    EXPECT_EQ(SMX_WAY_DOUBLE, SMX_CHOICE_WAY(smx_choice_word(&c), r));
    EXPECT_GE(c.range[r].to_try, SMX_CHOICE_TRY_SOON);
}

// A single copy through a new mapping pays a page fault a page on its first message
// (43-56 us a page in a User-mode Linux guest): that message must not decide.
TEST(Choice, ATrysFirstTouchesDoNotDecide)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 16384;
    const int r = smx_choice_range_of(size);
    smx_choice_measured(&c, size, SMX_WAY_EAGER, 1200); // warm
    smx_choice_measured(&c, size, SMX_WAY_EAGER, 1200); // asks a try
    while (c.try_range == r && SMX_WAY_SINGLE != c.try_way) { // (double copy's turn first)
        smx_choice_measured(&c, size, SMX_WAY_DOUBLE, 2000);
        smx_choice_measured(&c, size, SMX_WAY_DOUBLE, 2000);
        for (int i = 0; i < 200 && c.try_range < 0; ++i) {
            smx_choice_measured(&c, size, SMX_WAY_EAGER, 1200);
        }
    }
    ASSERT_EQ(r, c.try_range);
    ASSERT_EQ(SMX_WAY_SINGLE, c.try_way);
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 200000); // four page faults
    EXPECT_EQ(r, c.try_range);
    EXPECT_EQ(SMX_WAY_EAGER, c.range[r].way);
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 740); // the mapping in place
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 740);
    EXPECT_EQ(SMX_WAY_SINGLE, c.range[r].way);
}

TEST(Choice, TriesTheOtherWaysOnceTheOneInUseIsMeasured)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 8192;
    const int r = smx_choice_range_of(size);
    smx_choice_measured(&c, size, SMX_WAY_EAGER, 2000); // warm
    EXPECT_TRUE(smx_choice_measured(&c, size, SMX_WAY_EAGER, 2000));
    EXPECT_EQ(r, c.try_range);
    EXPECT_NE(SMX_WAY_EAGER, SMX_CHOICE_WAY(smx_choice_word(&c), r));
}

TEST(Choice, WaysItMayNotTakeAreNeverTried)
{
    struct smx_choice c;
    init_shared_cache(&c, false); // no single copy with this peer
    const Sweep s = sweep(&c, kXeonInCache, 300);
    for (int r = 0; r < SMX_CHOICE_RANGES; ++r) {
        EXPECT_NE(SMX_WAY_SINGLE, c.range[r].way) << "range " << r;
        EXPECT_EQ(0u, c.range[r].cost[SMX_WAY_SINGLE]) << "range " << r;
    }
    EXPECT_GT(s.messages, 0);
}

TEST(Choice, ALargeSizeTriesFirstWhereSmallerOnesSayItPays)
{
    // double copy in use from 64 KiB; single copy measured at 3x its cost at 64 KiB
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t small = 65536, large = 4 << 20;
    for (int i = 0; i < 50; ++i) {
        const enum smx_way way = smx_choice_single(&c, small) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
        smx_choice_measured(&c, small, way, SMX_WAY_SINGLE == way ? 15000 : 5000);
    }
    ASSERT_NE(0u, c.range[smx_choice_range_of(small)].cost[SMX_WAY_SINGLE]);
    ASSERT_EQ(-1, c.try_range);
    smx_choice_measured(&c, large, SMX_WAY_DOUBLE, 400000); // warm
    for (int i = 0; i < 20; ++i) {
        smx_choice_measured(&c, large, SMX_WAY_DOUBLE, 400000);
    }
    EXPECT_EQ(-1, c.try_range); // no try of 4 MiB in its first 20 messages
    EXPECT_GE(c.range[smx_choice_range_of(large)].to_try, 2 * SMX_CHOICE_TRY_SHARE - 21);
    // where the smaller size said single copy was cheaper, the large one tries at once
    struct smx_choice d;
    init_shared_cache(&d);
    for (int i = 0; i < 50; ++i) {
        const enum smx_way way = smx_choice_single(&d, small) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
        smx_choice_measured(&d, small, way, SMX_WAY_SINGLE == way ? 3000 : 5000);
    }
    smx_choice_measured(&d, large, SMX_WAY_DOUBLE, 400000); // warm
    smx_choice_measured(&d, large, SMX_WAY_DOUBLE, 400000);
    EXPECT_EQ(smx_choice_range_of(large), d.try_range);
}

TEST(Choice, ARendezvousInAnEagerRangeTakesTheCopyMeasuredCheaper)
{
    // 40,000 B: above a fragment, so by rendezvous, in a range that goes eagerly
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 40000;
    const int r = smx_choice_range_of(size);
    ASSERT_EQ(SMX_WAY_EAGER, c.range[r].way);
    EXPECT_FALSE(smx_choice_single(&c, size)); // the prior: double copy, pushed
    for (int i = 0; i < 300; ++i) {
        const enum smx_way way = smx_choice_single(&c, size) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
        smx_choice_measured(&c, size, way, SMX_WAY_SINGLE == way ? 3000 : 9000);
    }
    c.try_range = -1;
    EXPECT_TRUE(smx_choice_single(&c, size));
    EXPECT_TRUE(SMX_CHOICE_SINGLE(smx_choice_word(&c), r)); // the sender does not push it
}

TEST(Choice, ATryOfASizeNoLongerSentDoesNotHoldTheOthers)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t a = 8192, b = 1 << 20;
    smx_choice_measured(&c, a, SMX_WAY_EAGER, 2000);
    smx_choice_measured(&c, a, SMX_WAY_EAGER, 2000); // asks a try at 8 KiB
    ASSERT_EQ(smx_choice_range_of(a), c.try_range);
    int n = 0; // then only 1 MiB messages: their own first try must come
    for (; n < 2 * SMX_CHOICE_TRY_WAIT && c.try_range != smx_choice_range_of(b); ++n) {
        smx_choice_measured(&c, b, SMX_WAY_DOUBLE, 100000);
    }
    EXPECT_EQ(smx_choice_range_of(b), c.try_range);
    EXPECT_LE(n, SMX_CHOICE_TRY_WAIT + 3);
}

TEST(Choice, OneLuckyMessageOfAnotherWayDoesNotTakeOver)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 65536;
    const int r = smx_choice_range_of(size);
    for (int i = 0; i < 3; ++i) {
        smx_choice_measured(&c, size, SMX_WAY_DOUBLE, 10000); // asks a try of single copy
    }
    ASSERT_EQ(r, c.try_range);
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 3000); // its first: not counted
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 3000); // lucky once
    EXPECT_EQ(SMX_WAY_DOUBLE, c.range[r].way);
    EXPECT_EQ(r, c.try_range); // asked once more
    smx_choice_measured(&c, size, SMX_WAY_SINGLE, 20000); // as dear as it is
    EXPECT_EQ(SMX_WAY_DOUBLE, c.range[r].way);
    EXPECT_EQ(-1, c.try_range);
    // two messages that agree take it
    struct smx_choice d;
    init_shared_cache(&d);
    for (int i = 0; i < 3; ++i) {
        smx_choice_measured(&d, size, SMX_WAY_DOUBLE, 10000);
    }
    smx_choice_measured(&d, size, SMX_WAY_SINGLE, 3000); // (its first)
    smx_choice_measured(&d, size, SMX_WAY_SINGLE, 3000);
    smx_choice_measured(&d, size, SMX_WAY_SINGLE, 3500);
    EXPECT_EQ(SMX_WAY_SINGLE, d.range[r].way);
}

TEST(Choice, ATryTheSenderDoesNotTakeIsGivenUp)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 8192;
    smx_choice_measured(&c, size, SMX_WAY_EAGER, 2000);
    smx_choice_measured(&c, size, SMX_WAY_EAGER, 2000); // asks a try
    ASSERT_GE(c.try_range, 0);
    for (int i = 0; i <= SMX_CHOICE_TRY_WAIT; ++i) {
        smx_choice_measured(&c, size, SMX_WAY_EAGER, 2000); // the sender ignores it
    }
    EXPECT_EQ(-1, c.try_range);
    EXPECT_EQ(SMX_WAY_EAGER, SMX_CHOICE_WAY(smx_choice_word(&c), smx_choice_range_of(size)));
}

TEST(Choice, AWayThatBecomesTwiceAsDearIsTriedAgainstAtOnce)
{
    struct smx_choice c;
    init_shared_cache(&c);
    const size_t size = 1 << 20;
    const int r = smx_choice_range_of(size);
    // double copy 100 us, single copy 300 us: settles on double
    for (int i = 0; i < 200; ++i) {
        const enum smx_way way = smx_choice_single(&c, size) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
        smx_choice_measured(&c, size, way, SMX_WAY_SINGLE == way ? 300000 : 100000);
    }
    ASSERT_EQ(SMX_WAY_DOUBLE, c.range[r].way);
    // the peer's core becomes busy: double copies 500 us, single copies 200
    int n = 0;
    for (; n < 50 && SMX_WAY_DOUBLE == c.range[r].way; ++n) {
        const enum smx_way way = smx_choice_single(&c, size) ? SMX_WAY_SINGLE : SMX_WAY_DOUBLE;
        smx_choice_measured(&c, size, way, SMX_WAY_SINGLE == way ? 200000 : 500000);
    }
    EXPECT_EQ(SMX_WAY_SINGLE, c.range[r].way);
    EXPECT_LT(n, 10);
}

TEST(Choice, ALateReceiverAsksForEverythingUpToTheLateLimitEagerly)
{
    struct smx_choice c;
    init_shared_cache(&c);
    c.late = true;
    EXPECT_EQ(kLate, smx_choice_eager_limit(smx_choice_word(&c), 100000, kFrag, kLate, 0));
}

// Every machine's table: each range ends on a way within a sixteenth of the cheapest, and
// at most a tenth of the messages go a dearer way on the way there (tries, first touches).
class ChoiceOnMachine : public ::testing::TestWithParam<const Table *> {};

TEST_P(ChoiceOnMachine, SettlesOnTheCheapestWayOfEverySize)
{
    const Table &t = *GetParam();
    struct smx_choice c;
    init_shared_cache(&c);
    const Sweep s = sweep(&c, t, 400);
    c.try_range = -1; // (a try asked last of all is not the way in use)
    for (const Row &row : t.rows) {
        const int r = smx_choice_range_of(row.bytes);
        const enum smx_way in_use = sent_way(&c, row.bytes);
        double best = 1e300;
        for (int w = 0; w < SMX_WAYS; ++w) {
            if (cost_of(row, (enum smx_way) w) > 0) {
                best = std::min(best, cost_of(row, (enum smx_way) w));
            }
        }
        EXPECT_LE(table_cost(row, in_use), best * 16 / 15)
            << t.name << ": " << row.bytes << " B went " << in_use << " (range " << r
            << " way " << (int) c.range[r].way << ")";
    }
    EXPECT_LE(s.off_best * 10, s.messages) << t.name;
}

INSTANTIATE_TEST_SUITE_P(Machines, ChoiceOnMachine, ::testing::ValuesIn(kTables),
                         [](const ::testing::TestParamInfo<const Table *> &info) {
                             std::string name;
                             for (char ch : info.param->name) {
                                 name += std::isalnum((unsigned char) ch) ? ch : '_';
                             }
                             return name;
                         });

} // namespace
