// Unit tests of btl/smx's adaptive copy (opal/mca/btl/smx/btl_smx_adapt.c): the choice
// between single and double copy driven by synthetic costs, one regime at a time, since a
// development machine shows only some of them.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "../../opal/mca/btl/smx/btl_smx_adapt.h"

namespace {

constexpr size_t kSize = 1 << 20; // a 1 MiB get

// ns per KiB of a method at get number i.
using Costs = std::function<uint32_t(enum smx_copy, int)>;

class Adapt : public ::testing::Test {
protected:
    struct smx_adapt a;
    int gets = 0;
    int changes = 0; // of the method in use, over every run() so far

    void SetUp() override { smx_adapt_init(&a); }

    // n gets of 'size' bytes, each measured at what 'costs' says; returns how many went
    // by single copy.
    int run(int n, const Costs &costs, enum smx_copy prior = SMX_COPY_DOUBLE,
            size_t size = kSize)
    {
        int single = 0;
        for (int i = 0; i < n; ++i, ++gets) {
            enum smx_copy how = smx_adapt_choose(&a, size, prior);
            EXPECT_NE(SMX_COPY_UNSET, how);
            single += SMX_COPY_SINGLE == how;
            changes += smx_adapt_measured(&a, size, how, size,
                                          (uint64_t) costs(how, gets) * size / 1024);
        }
        return single;
    }
    enum smx_copy in_use(size_t size = kSize)
    {
        return (enum smx_copy) a.range[smx_adapt_range_of(size)].pick;
    }
};

Costs fixed(uint32_t dbl, uint32_t single)
{
    return [=](enum smx_copy how, int) { return SMX_COPY_SINGLE == how ? single : dbl; };
}

TEST(AdaptRange, PowersOfTwoFrom4KiBAndOneForAllLarger)
{
    EXPECT_EQ(-1, smx_adapt_range_of(0));
    EXPECT_EQ(-1, smx_adapt_range_of(4095));
    EXPECT_EQ(0, smx_adapt_range_of(4096));
    EXPECT_EQ(0, smx_adapt_range_of(8191));
    EXPECT_EQ(1, smx_adapt_range_of(8192));
    EXPECT_EQ(8, smx_adapt_range_of(1 << 20));
    EXPECT_EQ(SMX_ADAPT_RANGES - 1, smx_adapt_range_of((size_t) 1 << 27));
    EXPECT_EQ(SMX_ADAPT_RANGES - 1, smx_adapt_range_of(SIZE_MAX));
}

TEST_F(Adapt, BelowTheSmallestRangeThePriorStandsAndNothingIsKept)
{
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(SMX_COPY_SINGLE, smx_adapt_choose(&a, 100, SMX_COPY_SINGLE));
        EXPECT_FALSE(smx_adapt_measured(&a, 100, SMX_COPY_SINGLE, 100, 1000000));
    }
    for (int r = 0; r < SMX_ADAPT_RANGES; ++r) {
        EXPECT_EQ(SMX_COPY_UNSET, a.range[r].pick);
    }
}

// A quiet pair sharing a cache: double copy is cheap and stays; single copy is tried now
// and then, so that the tries cost about a hundredth of the time.
TEST_F(Adapt, QuietSharedCacheKeepsDoubleCopyAndTriesCostAHundredth)
{
    const int single = run(20000, fixed(40, 100));
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use());
    // a try loses 60 against gets of 40: one every 150 gets
    EXPECT_GE(single, 20000 / 150 - 2);
    EXPECT_LE(single, 20000 / 150 + 3);
    // much dearer single copy: tried at most every SMX_ADAPT_TRY_LATE gets
    SetUp();
    EXPECT_LE(run(20000, fixed(40, 40000)), 2 + 20000 / SMX_ADAPT_TRY_LATE + 1);
}

// Where single copy is cheaper (other sockets, a cheap CMA), a prior of double copy is
// left at its first try (its first get does not count, nor does the other's) and single
// copy kept.
TEST_F(Adapt, CheaperSingleCopyIsFoundFromADoubleCopyPrior)
{
    run(3, fixed(100, 40));
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use()); // its first try was its warm-up
    run(1, fixed(100, 40));
    EXPECT_EQ(SMX_COPY_SINGLE, in_use());
    EXPECT_GE(run(10000, fixed(100, 40)), 10000 - 10000 / 150 - 3); // double tried every 150
}

// Asking what is in use (a sender deciding whether to push ahead) takes no turn of the
// tries: with any number of questions between them, the gets try the other method on the
// same gets as without.
TEST_F(Adapt, AskingWhatIsInUseTakesNoTurnOfTheTries)
{
    EXPECT_EQ(SMX_COPY_DOUBLE, smx_adapt_current(&a, kSize, SMX_COPY_DOUBLE)); // unset: prior
    EXPECT_EQ(SMX_COPY_SINGLE, smx_adapt_current(&a, 100, SMX_COPY_SINGLE)); // below ranges
    struct smx_adapt quiet;
    smx_adapt_init(&quiet);
    for (int i = 0; i < 2000; ++i) {
        const enum smx_copy now = smx_adapt_current(&a, kSize, SMX_COPY_DOUBLE);
        for (int q = 0; q < 3; ++q) {
            EXPECT_EQ(now, smx_adapt_current(&a, kSize, SMX_COPY_DOUBLE));
        }
        const enum smx_copy how = smx_adapt_choose(&a, kSize, SMX_COPY_DOUBLE);
        EXPECT_EQ(how, smx_adapt_choose(&quiet, kSize, SMX_COPY_DOUBLE)) << "get " << i;
        const uint64_t ns = (SMX_COPY_SINGLE == how ? 100 : 40) * (uint64_t) kSize / 1024;
        smx_adapt_measured(&a, kSize, how, kSize, ns);
        smx_adapt_measured(&quiet, kSize, how, kSize, ns);
        EXPECT_EQ(in_use(), smx_adapt_current(&a, kSize, SMX_COPY_DOUBLE));
    }
}

// A peer that stops being scheduled in step (another process on its core): double copy
// becomes ten times dearer; within a few gets they go by single copy, and come back once
// the peer recovers.
TEST_F(Adapt, BusyPeerMovesToSingleCopyAndBackWhenItRecovers)
{
    run(1000, fixed(40, 100));
    ASSERT_EQ(SMX_COPY_DOUBLE, in_use());
    const int onset = gets;
    int moved_after = -1;
    for (int i = 0; i < 20 && moved_after < 0; ++i) {
        run(1, fixed(400, 100));
        if (SMX_COPY_SINGLE == in_use()) {
            moved_after = gets - onset;
        }
    }
    ASSERT_GE(moved_after, 1) << "still double copy 20 gets after the peer slowed";
    EXPECT_LE(moved_after, 8);
    // busy for a long while: double copy tried every 300 gets (a try loses 300 against
    // gets of 100), never taken
    const int single = run(20000, fixed(400, 100));
    EXPECT_EQ(SMX_COPY_SINGLE, in_use());
    EXPECT_GE(single, 20000 - 20000 / 300 - 3);
    // the peer recovers: back to double copy at the next try
    int back_after = -1;
    for (int i = 0; i < 2 * SMX_ADAPT_TRY_LATE && back_after < 0; ++i) {
        run(1, fixed(40, 100));
        if (SMX_COPY_DOUBLE == in_use()) {
            back_after = i + 1;
        }
    }
    EXPECT_GE(back_after, 1) << "never went back to double copy";
    EXPECT_LE(back_after, 300 + 2);
}

// The other method measured dear long ago (a bad moment) does not keep a peer that slows
// down on the method in use: that one becoming twice as dear as usual has the other tried
// again at once.
TEST_F(Adapt, SlowingDownTriesTheOtherAgainWhateverItCostLastTime)
{
    run(1000, [](enum smx_copy how, int) -> uint32_t { return SMX_COPY_SINGLE == how ? 900 : 40; });
    ASSERT_EQ(SMX_COPY_DOUBLE, in_use());
    const int onset = gets;
    while (SMX_COPY_DOUBLE == in_use() && gets - onset < 50) {
        run(1, fixed(400, 100));
    }
    EXPECT_EQ(SMX_COPY_SINGLE, in_use());
    EXPECT_LE(gets - onset, 8);
}

// One late transfer (an interrupt, a page fault) does not move a range.
TEST_F(Adapt, OneLateTransferDoesNotSwitch)
{
    run(2000, fixed(40, 100));
    ASSERT_EQ(SMX_COPY_DOUBLE, in_use());
    const int t = gets, before = changes;
    run(200, [t](enum smx_copy how, int i) -> uint32_t {
        return SMX_COPY_SINGLE == how ? 100 : i == t + 5 ? 4000 : 40;
    });
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use());
    EXPECT_EQ(before, changes);
}

// The first get of each method in a range pays for fresh pages: it does not count.
TEST_F(Adapt, FirstGetOfAMethodIsNotCounted)
{
    run(300, [](enum smx_copy how, int i) -> uint32_t {
        return SMX_COPY_SINGLE == how ? 100 : 0 == i ? 5000 : 40;
    });
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use());
    EXPECT_LE(a.range[smx_adapt_range_of(kSize)].cost[SMX_COPY_DOUBLE], 45u);
}

// Off-cache costs scatter from transfer to transfer; that alone does not have the other
// method tried more than the hundredth of the time the rule allows.
TEST_F(Adapt, ScatteredCostsDoNotMultiplyTries)
{
    const int single = run(20000, [](enum smx_copy how, int i) -> uint32_t {
        const uint32_t noise = ((uint32_t) i * 2654435761u) >> 26; // 0-63, scattered
        return SMX_COPY_SINGLE == how ? 130 : 50 + noise;
    });
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use());
    EXPECT_LE(single, 20000 / 50); // at most 2% of the gets: tries lose about 50 against 80
}

// Both close together (within an eighth, each going up and down): the range does not flap
// between them.
TEST_F(Adapt, CloseCostsDoNotFlap)
{
    const int single = run(10000, [](enum smx_copy how, int i) -> uint32_t {
        const uint32_t noise = ((uint32_t) i * 2654435761u) >> 28; // 0-15, scattered
        return SMX_COPY_SINGLE == how ? 106 + noise / 2 : 100 + noise;
    });
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use());
    EXPECT_EQ(0, changes);
    EXPECT_LE(single, 2 + 10000 / SMX_ADAPT_TRY_SOON + 1); // tried, never taken
}

// "Single copy far cheaper": in use, and measured at most half as dear as double copy.
TEST_F(Adapt, SingleFarCheaperOnlyAtHalfTheCostOrLess)
{
    EXPECT_FALSE(smx_adapt_single_far_cheaper(&a, kSize)); // nothing measured
    run(100, fixed(100, 60));
    ASSERT_EQ(SMX_COPY_SINGLE, in_use());
    EXPECT_FALSE(smx_adapt_single_far_cheaper(&a, kSize)); // cheaper, not by half
    run(100, fixed(130, 60));
    EXPECT_TRUE(smx_adapt_single_far_cheaper(&a, kSize));
    EXPECT_FALSE(smx_adapt_single_far_cheaper(&a, 2 * kSize)); // another range
    EXPECT_FALSE(smx_adapt_single_far_cheaper(&a, 100));       // below every range
}

// Ranges are independent: small gets may go one way, large ones the other.
TEST_F(Adapt, RangesDecideApart)
{
    run(200, fixed(100, 40), SMX_COPY_DOUBLE, 64 * 1024);
    run(200, fixed(40, 100), SMX_COPY_DOUBLE, 4 << 20);
    EXPECT_EQ(SMX_COPY_SINGLE, in_use(64 * 1024));
    EXPECT_EQ(SMX_COPY_DOUBLE, in_use(4 << 20));
}

// Costs beyond 32 bits of ns per KiB, or below one, are held at the ends, not wrapped.
TEST_F(Adapt, ExtremeCostsAreClamped)
{
    for (int i = 0; i < 4; ++i) {
        enum smx_copy how = smx_adapt_choose(&a, kSize, SMX_COPY_DOUBLE);
        smx_adapt_measured(&a, kSize, how, kSize, SMX_COPY_DOUBLE == how ? UINT64_MAX / 2048 : 0);
    }
    const struct smx_adapt_range &k = a.range[smx_adapt_range_of(kSize)];
    EXPECT_EQ(UINT32_MAX, k.cost[SMX_COPY_DOUBLE]);
    EXPECT_EQ(1u, k.cost[SMX_COPY_SINGLE]);
    EXPECT_EQ(SMX_COPY_SINGLE, in_use());
}

} // namespace
