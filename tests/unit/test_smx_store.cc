// Unit tests of btl/smx's choice between memcpy and non-temporal stores
// (opal/mca/btl/smx/btl_smx_store.c), driven by synthetic costs of each regime: the
// development VM shows both, but not when a test wants them.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

extern "C" {
#include "../../opal/mca/btl/smx/btl_smx_store.h"
}

namespace {

constexpr size_t kSize = 16384;

// Cycles per KiB of a way at copy number i.
using Costs = std::function<uint32_t(enum smx_store_way, int)>;

// A sender's copy of 16 KiB into a ring on the Zen 4 VM, in TSC cycles per KiB (a
// two-process test beside tests/bench/handoff; only the ratio counts): where taking a line
// back from the other core is cheap, and where it is dear.
uint32_t quiet(enum smx_store_way w, int) { return SMX_STORE_CACHED == w ? 63 : 45; }
uint32_t far(enum smx_store_way w, int) { return SMX_STORE_CACHED == w ? 895 : 62; }

class Store : public ::testing::Test {
protected:
    struct smx_store s;
    int copies = 0;
    int switches = 0;
    int streak = 0; // copies in a row that went the way this one goes, this one included
    enum smx_store_way last = SMX_STORE_CACHED;

    void SetUp() override { smx_store_init(&s); }

    // n copies of kSize at what 'costs' says; returns how many were streamed.
    int run(int n, const Costs &costs)
    {
        int streamed = 0;
        for (int i = 0; i < n; ++i, ++copies) {
            bool timed = false;
            const enum smx_store_way way = smx_store_next(&s, &timed);
            streak = way == last ? streak + 1 : 1;
            last = way;
            streamed += SMX_STORE_STREAM == way;
            if (timed) {
                switches += smx_store_measured(&s, way, kSize,
                                               (uint64_t) costs(way, copies) * kSize / 1024);
            }
        }
        return streamed;
    }
};

} // namespace

// Quiet: memcpy stays, and the other way is only sampled.
TEST_F(Store, QuietKeepsMemcpy)
{
    const int streamed = run(10000, quiet);
    EXPECT_EQ(SMX_STORE_CACHED, s.way);
    EXPECT_EQ(0, switches);
    EXPECT_LE(streamed, 10000 / SMX_STORE_PROBE_EVERY + 1);
    EXPECT_GE(streamed, 10000 / SMX_STORE_PROBE_EVERY - 1);
}

// Both ways are known after two copies.
TEST_F(Store, BothWaysKnownEarly)
{
    run(2, quiet);
    EXPECT_NE(0u, s.cost[SMX_STORE_CACHED]);
    EXPECT_NE(0u, s.cost[SMX_STORE_STREAM]);
}

// Far cores from the start: streaming within a few copies, and memcpy only sampled.
TEST_F(Store, FarStreamsAtOnce)
{
    run(16, far);
    EXPECT_EQ(SMX_STORE_STREAM, s.way);
    const int streamed = run(10000, far);
    EXPECT_GE(streamed, 10000 - 10000 / SMX_STORE_PROBE_EVERY - 1);
    EXPECT_EQ(1, switches);
}

// The state flips while the job runs (the VM's vCPUs moved): it follows, both ways. Into
// streaming within a few dozen copies (memcpy, in use, is timed often); back within 16
// samples of memcpy, which is then the way not in use (4,096 copies: 10 ms of 16 KiB ones).
TEST_F(Store, FollowsTheStateBothWays)
{
    run(1000, quiet);
    ASSERT_EQ(SMX_STORE_CACHED, s.way);
    run(12 * SMX_STORE_TIME_EVERY, far);
    EXPECT_EQ(SMX_STORE_STREAM, s.way);
    run(16 * SMX_STORE_PROBE_EVERY, quiet);
    EXPECT_EQ(SMX_STORE_CACHED, s.way);
    EXPECT_EQ(2, switches);
}

// One copy that was descheduled or faulted (a thousand times its cost) does not flip it,
// in either state.
TEST_F(Store, OneOutlierDoesNotFlip)
{
    run(1000, quiet);
    switches = 0;
    run(1000, [](enum smx_store_way w, int i) {
        return 500 == i % 1000 ? 1000000u : quiet(w, i);
    });
    EXPECT_EQ(SMX_STORE_CACHED, s.way);
    EXPECT_EQ(0, switches);

    smx_store_init(&s);
    run(1000, far);
    switches = 0;
    run(1000, [](enum smx_store_way w, int i) {
        return SMX_STORE_STREAM == w && 0 == i % 700 ? 1000000u : far(w, i);
    });
    EXPECT_EQ(SMX_STORE_STREAM, s.way);
    EXPECT_EQ(0, switches);
}

// Between the two ratios neither way is forced: no flapping on costs close to each other.
TEST_F(Store, NoFlappingBetweenTheRatios)
{
    run(1000, far);
    ASSERT_EQ(SMX_STORE_STREAM, s.way);
    switches = 0;
    // memcpy 2.5x streaming: above the ratio back, below the ratio there
    run(20000, [](enum smx_store_way w, int) { return SMX_STORE_CACHED == w ? 250u : 100u; });
    EXPECT_EQ(SMX_STORE_STREAM, s.way);
    EXPECT_EQ(0, switches);
}

// The far state as 4 KiB messages meet it: a memcpy after streamed copies writes lines
// they left in memory and costs 1.8x a streamed copy, a memcpy in use 4x and more once it
// has written a few dozen. Memcpy wins back on its samples and loses again at once; the
// samples of memcpy then come ever more rarely, and the sender streams nearly always.
TEST_F(Store, FlappingBacksOff)
{
    const Costs flap = [this](enum smx_store_way w, int) -> uint32_t {
        if (SMX_STORE_STREAM == w) {
            return 62;
        }
        return streak < 64 ? 112 : 260;
    };
    run(1000, far);
    ASSERT_EQ(SMX_STORE_STREAM, s.way);
    switches = 0;
    const int n = 200000;
    const int streamed = run(n, flap);
    EXPECT_EQ(SMX_STORE_PROBE_MAX, (int) s.probe_every);
    // Without the back-off: a flap every 4-5 samples of 256 copies, some 180 of them.
    // With it: five to reach the largest interval, then one per four of its samples.
    EXPECT_LE(switches, 2 * (5 + n / (4 * SMX_STORE_PROBE_MAX) + 1));
    EXPECT_GE(streamed, n - n / 100);
}

// Backed off, the sender still follows a real return of the quiet state, and memcpy that
// holds brings the samples back to their usual interval.
TEST_F(Store, BackedOffStillFollowsQuiet)
{
    s.way = SMX_STORE_STREAM;
    s.cost[SMX_STORE_CACHED] = 895;
    s.cost[SMX_STORE_STREAM] = 62;
    s.probe_every = SMX_STORE_PROBE_MAX;
    s.held = 0;
    run(16 * SMX_STORE_PROBE_MAX, quiet);
    EXPECT_EQ(SMX_STORE_CACHED, s.way);
    run(SMX_STORE_SHORT_HOLD, quiet);
    run(100, far);
    EXPECT_EQ(SMX_STORE_STREAM, s.way);
    EXPECT_EQ(SMX_STORE_PROBE_EVERY, (int) s.probe_every);
}

// Copies below SMX_STORE_TIME_MIN teach nothing (their fixed costs, and the store buffer
// that hides a small memcpy's, would mislead); from it they count.
TEST_F(Store, SmallCopiesIgnored)
{
    EXPECT_FALSE(smx_store_measured(&s, SMX_STORE_CACHED, SMX_STORE_TIME_MIN - 1, 1000000));
    EXPECT_EQ(0u, s.cost[SMX_STORE_CACHED]);
    EXPECT_FALSE(smx_store_measured(&s, SMX_STORE_CACHED, SMX_STORE_TIME_MIN, 1000));
    EXPECT_NE(0u, s.cost[SMX_STORE_CACHED]);
    s.cost[SMX_STORE_CACHED] = 0;
    EXPECT_EQ(0u, s.cost[SMX_STORE_CACHED]);
}

// A clock read on another CPU that makes the difference wrap (a huge count) teaches nothing.
TEST_F(Store, AClockThatWentBackIgnored)
{
    EXPECT_FALSE(smx_store_measured(&s, SMX_STORE_CACHED, kSize, UINT64_MAX - 5));
    EXPECT_EQ(0u, s.cost[SMX_STORE_CACHED]);
}

// A streamed copy brings every byte, whatever the alignment of either side and the length.
TEST(StoreCopy, EveryByteAtAnyAlignment)
{
    std::vector<unsigned char> src(70000), dst(70000 + 128);
    for (size_t i = 0; i < src.size(); ++i) {
        src[i] = (unsigned char) (i * 131 + 7);
    }
    for (size_t n : {0ul, 1ul, 63ul, 64ul, 65ul, 2047ul, 2048ul, 4099ul, 65536ul, 69001ul}) {
        for (size_t doff : {0ul, 1ul, 16ul, 30ul, 63ul}) {
            for (size_t soff : {0ul, 5ul, 32ul}) {
                if (soff + n > src.size()) {
                    continue;
                }
                std::memset(dst.data(), 0xee, dst.size());
                smx_store_stream(dst.data() + doff, src.data() + soff, n);
                ASSERT_EQ(0, std::memcmp(dst.data() + doff, src.data() + soff, n))
                    << n << " bytes, to +" << doff << ", from +" << soff;
                for (size_t i = 0; i < doff; ++i) {
                    ASSERT_EQ(0xee, dst[i]) << "a byte before the destination";
                }
                for (size_t i = doff + n; i < dst.size(); ++i) {
                    ASSERT_EQ(0xee, dst[i]) << "a byte after the destination";
                }
            }
        }
    }
}

// What the send path calls: every byte arrives whichever way is taken; 'always' streams
// (where this build can) and is never timed; small copies follow the way in use, untimed;
// the way in use is timed every SMX_STORE_TIME_EVERY copies, and a costly memcpy timed
// against a cheap stream switches (said once, by SMX_STORE_SWITCHED).
TEST(StoreCopy, WhatTheSendPathGets)
{
    std::vector<unsigned char> src(kSize), dst(kSize);
    for (size_t i = 0; i < src.size(); ++i) {
        src[i] = (unsigned char) (i * 37 + 1);
    }
    struct smx_store s;
    smx_store_init(&s);
    const unsigned stream = smx_store_can_stream() ? SMX_STORE_STREAMED : 0u;

    EXPECT_EQ(stream, smx_store_copy(&s, true, dst.data(), src.data(), kSize));
    EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), kSize));
    EXPECT_EQ(0u, s.cost[SMX_STORE_CACHED] + s.cost[SMX_STORE_STREAM]) << "'always' is not timed";

    std::memset(dst.data(), 0, dst.size());
    EXPECT_EQ(0u, smx_store_copy(&s, false, dst.data(), src.data(), SMX_STORE_TIME_MIN - 64));
    EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), SMX_STORE_TIME_MIN - 64));
    EXPECT_EQ(0u, s.cost[SMX_STORE_CACHED]) << "a small copy is not timed";

    s.way = SMX_STORE_STREAM;
    EXPECT_EQ(stream, smx_store_copy(&s, false, dst.data(), src.data(), 1024))
        << "a small copy follows the way in use";

    unsigned said = 0;
    for (int i = 0; i < 2 * SMX_STORE_PROBE_EVERY; ++i) {
        std::memset(dst.data(), 0, dst.size());
        said |= smx_store_copy(&s, false, dst.data(), src.data(), kSize);
        ASSERT_EQ(0, std::memcmp(dst.data(), src.data(), kSize)) << "copy " << i;
    }
    if (smx_store_can_stream()) {
        EXPECT_NE(0u, s.cost[SMX_STORE_CACHED]) << "memcpy sampled while streaming";
        EXPECT_NE(0u, s.cost[SMX_STORE_STREAM]) << "the way in use timed";
        EXPECT_NE(0u, said & SMX_STORE_STREAMED);
    }
}
