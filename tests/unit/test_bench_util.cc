// Unit tests of the benchmark's pure logic (tests/bench/bench_util.c).
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "../bench/bench_util.h"

TEST(ParseSize, AcceptsPlainNumbersAndBinarySuffixes)
{
    size_t v = 0;
    EXPECT_EQ(0, bu_parse_size("0", &v));
    EXPECT_EQ(0u, v);
    EXPECT_EQ(0, bu_parse_size("4097", &v));
    EXPECT_EQ(4097u, v);
    EXPECT_EQ(0, bu_parse_size("4K", &v));
    EXPECT_EQ(4096u, v);
    EXPECT_EQ(0, bu_parse_size("16m", &v));
    EXPECT_EQ(16u << 20, v);
    EXPECT_EQ(0, bu_parse_size("1G", &v));
    EXPECT_EQ(1u << 30, v);
}

TEST(ParseSize, RejectsGarbageNegativeAndOverflow)
{
    size_t v = 123;
    EXPECT_EQ(-1, bu_parse_size("", &v));
    EXPECT_EQ(-1, bu_parse_size("-1", &v));
    EXPECT_EQ(-1, bu_parse_size("4KB", &v));
    EXPECT_EQ(-1, bu_parse_size("K", &v));
    EXPECT_EQ(-1, bu_parse_size("99999999999999999999", &v));
    EXPECT_EQ(-1, bu_parse_size("18446744073709551615G", &v));
    EXPECT_EQ(123u, v) << "a refused size must not change the output";
}

TEST(ParseSizeList, RangeIsMinThenPowersOfTwoThenMax)
{
    size_t out[64];
    int n = bu_parse_size_list("0:16", out, 64);
    ASSERT_EQ(6, n);
    std::vector<size_t> got(out, out + n), want{0, 1, 2, 4, 8, 16};
    EXPECT_EQ(want, got);

    n = bu_parse_size_list("3:20", out, 64);
    ASSERT_EQ(5, n);
    std::vector<size_t> got2(out, out + n), want2{3, 4, 8, 16, 20};
    EXPECT_EQ(want2, got2);
}

TEST(ParseSizeList, MixedListIsSortedAndUnique)
{
    size_t out[64];
    int n = bu_parse_size_list("4K,1,0:2,4096,7", out, 64);
    ASSERT_EQ(5, n);
    std::vector<size_t> got(out, out + n), want{0, 1, 2, 7, 4096};
    EXPECT_EQ(want, got);
}

TEST(ParseSizeList, RejectsBadItemsReversedRangesAndTooMany)
{
    size_t out[4];
    EXPECT_EQ(-1, bu_parse_size_list("", out, 4));
    EXPECT_EQ(-1, bu_parse_size_list("1,,x", out, 4));
    EXPECT_EQ(-1, bu_parse_size_list("8:4", out, 4));
    EXPECT_EQ(-1, bu_parse_size_list("0:1M", out, 4)) << "22 sizes do not fit in 4";
}

TEST(Iterations, ScaleInverselyWithSizeWithinBounds)
{
    EXPECT_EQ(100, bu_iterations(1 << 20, 100 << 20, 2, 1000));
    EXPECT_EQ(2, bu_iterations(64 << 20, 1 << 20, 2, 1000)) << "never below the minimum";
    EXPECT_EQ(1000, bu_iterations(0, 1 << 20, 2, 1000)) << "0-byte messages hit the maximum";
    EXPECT_GT(bu_iterations(64, 1 << 20, 2, 100000), bu_iterations(4096, 1 << 20, 2, 100000));
}

TEST(Pool, WithoutOffCacheEveryMessageUsesTheSameSlot)
{
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, 0, 1000, 4096, 1));
    EXPECT_EQ(1u, p.nslots);
    EXPECT_EQ(0u, bu_pool_next(&p));
    EXPECT_EQ(0u, bu_pool_next(&p));
    EXPECT_EQ(4096u, bu_pool_span(&p));
}

// One cycle of the pool's slots (their offsets, in the order used), each checked to be
// aligned and inside the pool, and the cycle to visit every slot once.
static std::vector<size_t> one_cycle(bu_pool *p, size_t msg, size_t align)
{
    std::vector<size_t> cycle;
    for (size_t i = 0; i < p->nslots; ++i) {
        size_t off = bu_pool_next(p);
        EXPECT_EQ(0u, off % align);
        EXPECT_LE(off + msg, bu_pool_span(p));
        cycle.push_back(off);
    }
    EXPECT_EQ(p->nslots, std::set<size_t>(cycle.begin(), cycle.end()).size())
        << "a full cycle visits every slot once";
    return cycle;
}

TEST(Pool, OffCacheSlotsAreDistinctAlignedAndStayInsideThePool)
{
    const size_t pool_bytes = 1 << 20, msg = 5000, align = 4096;
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, pool_bytes, msg, align, 1));
    EXPECT_LE(bu_pool_span(&p), pool_bytes);
    std::vector<size_t> cycle = one_cycle(&p, msg, align);
    EXPECT_EQ(0u, cycle[0]);
    EXPECT_EQ(p.slot_bytes, cycle[1]) << "in turn";
    EXPECT_EQ(0u, bu_pool_next(&p)) << "then starts over";
}

// --order random: every slot once a cycle, in an order a prefetcher cannot follow.
TEST(Pool, ShuffledSlotsAreAPermutationThatIsNotInTurn)
{
    const size_t pool_bytes = 1 << 20, msg = 100, align = 4096;
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, pool_bytes, msg, align, 1));
    ASSERT_EQ(0, bu_pool_shuffle(&p, 1));
    std::vector<size_t> cycle = one_cycle(&p, msg, align);
    size_t neighbours = 0;
    for (size_t i = 1; i < cycle.size(); ++i) {
        neighbours += cycle[i] == cycle[i - 1] + align;
    }
    EXPECT_LT(neighbours, p.nslots / 16) << "successive messages rarely use adjacent slots";
    for (size_t i = 0; i < p.nslots; ++i) {
        EXPECT_EQ(cycle[i], bu_pool_next(&p)) << "the next cycle repeats the order, slot " << i;
    }
    bu_pool_release(&p);
    EXPECT_EQ(nullptr, p.order);
}

TEST(Pool, TheSameSeedGivesTheSameOrderAndAnotherSeedAnother)
{
    bu_pool a, b, c;
    ASSERT_EQ(0, bu_pool_plan(&a, 1 << 20, 100, 4096, 1));
    ASSERT_EQ(0, bu_pool_plan(&b, 1 << 20, 100, 4096, 1));
    ASSERT_EQ(0, bu_pool_plan(&c, 1 << 20, 100, 4096, 1));
    ASSERT_EQ(0, bu_pool_shuffle(&a, 7));
    ASSERT_EQ(0, bu_pool_shuffle(&b, 7));
    ASSERT_EQ(0, bu_pool_shuffle(&c, 8));
    size_t same = 0, differ = 0;
    for (size_t i = 0; i < a.nslots; ++i) {
        size_t x = bu_pool_next(&a);
        same += x == bu_pool_next(&b);
        differ += x != bu_pool_next(&c);
    }
    EXPECT_EQ(a.nslots, same);
    EXPECT_GT(differ, a.nslots / 2);
    bu_pool_release(&a);
    bu_pool_release(&b);
    bu_pool_release(&c);
}

TEST(Pool, ShufflingOneSlotKeepsIt)
{
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, 0, 1000, 4096, 1));
    ASSERT_EQ(0, bu_pool_shuffle(&p, 3));
    EXPECT_EQ(0u, bu_pool_next(&p));
    EXPECT_EQ(0u, bu_pool_next(&p));
    bu_pool_release(&p);
}

TEST(Pool, MessageLargerThanThePoolGetsOneSlot)
{
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, 1 << 20, 4 << 20, 64, 1));
    EXPECT_EQ(1u, p.nslots);
    EXPECT_GE(bu_pool_span(&p), 4u << 20);
}

// A window of messages in flight together gets a slot each, with or without off-cache.
TEST(Pool, AtLeastTheSlotsAskedFor)
{
    bu_pool p;
    ASSERT_EQ(0, bu_pool_plan(&p, 0, 1000, 4096, 64));
    EXPECT_EQ(64u, p.nslots);
    ASSERT_EQ(0, bu_pool_plan(&p, 64 << 20, 1 << 20, 4096, 64));
    EXPECT_EQ(64u, p.nslots);
    ASSERT_EQ(0, bu_pool_plan(&p, 64 << 20, 4 << 20, 4096, 64));
    EXPECT_EQ(64u, p.nslots) << "a pool smaller than a window grows to hold it";
    ASSERT_EQ(0, bu_pool_plan(&p, 1 << 20, 4096, 4096, 64));
    EXPECT_EQ(256u, p.nslots) << "a larger pool keeps its own count";
}

TEST(Pool, RejectsAlignmentThatIsNotAPowerOfTwo)
{
    bu_pool p;
    EXPECT_EQ(-1, bu_pool_plan(&p, 1 << 20, 100, 0, 1));
    EXPECT_EQ(-1, bu_pool_plan(&p, 1 << 20, 100, 48, 1));
}

TEST(Median, OddAndEvenCounts)
{
    double odd[] = {5, 1, 3};
    EXPECT_DOUBLE_EQ(3, bu_median(odd, 3));
    double even[] = {4, 1, 3, 2};
    EXPECT_DOUBLE_EQ(2.5, bu_median(even, 4));
    double one[] = {7};
    EXPECT_DOUBLE_EQ(7, bu_median(one, 1));
}

static const char *const HOST_CPUINFO =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
    "model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n";
static const char *const UML_CPUINFO =
    "processor\t: 0\nvendor_id\t: User Mode Linux\nmodel name\t: UML\nmode\t\t: skas\n"
    "host\t\t: Linux vm 6.18.44-fc-v857 #1 SMP x86_64\nfpu\t\t: yes\n";

TEST(DescribeSystem, AHostIsNamedWithItsKernelCpusAndCpuModel)
{
    char out[256];
    EXPECT_EQ(BU_SYSTEM_HOST, bu_describe_system(HOST_CPUINFO, NULL, "6.18.44", 2, NULL, out,
                                                 sizeof(out)));
    EXPECT_STREQ("host: Linux 6.18.44, 2 CPUs, AMD EPYC (family 25, model 17)", out);
    EXPECT_EQ(BU_SYSTEM_HOST, bu_describe_system("", NULL, "6.1.0", 1, NULL, out, sizeof(out)));
    EXPECT_STREQ("host: Linux 6.1.0, 1 CPU, unknown CPU (family ?, model ?)", out);
}

TEST(DescribeSystem, AUmlGuestSaysSoWithItsKernelCpusAndItsHost)
{
    char out[256];
    EXPECT_EQ(BU_SYSTEM_UML, bu_describe_system(UML_CPUINFO, NULL, "7.2.13", 2,
                                                "AMD EPYC (family 25, model 17), Linux 6.18.44",
                                                out, sizeof(out)));
    EXPECT_STREQ("UML guest: Linux 7.2.13 (User-mode Linux), 2 CPUs; host: AMD EPYC "
                 "(family 25, model 17), Linux 6.18.44", out);
    /* without the runner's word, UML's own line about its host */
    bu_describe_system(UML_CPUINFO, NULL, "7.2.13", 2, NULL, out, sizeof(out));
    EXPECT_STREQ("UML guest: Linux 7.2.13 (User-mode Linux), 2 CPUs; host: Linux vm "
                 "6.18.44-fc-v857 #1 SMP x86_64", out);
}

TEST(DescribeSystem, AQemuGuestIsEmulatedByItsVendorOrItsCpu)
{
    char out[256];
    EXPECT_EQ(BU_SYSTEM_QEMU, bu_describe_system(HOST_CPUINFO, "QEMU\n", "6.1.0-56-amd64", 2,
                                                 NULL, out, sizeof(out)));
    EXPECT_STREQ("QEMU guest (emulated): Linux 6.1.0-56-amd64, 2 CPUs", out);
    EXPECT_EQ(BU_SYSTEM_QEMU,
              bu_describe_system("model name\t: QEMU Virtual CPU version 2.5+\n", NULL, "7.2.13",
                                 2, NULL, out, sizeof(out)));
}

TEST(DescribeSystem, ALongDescriptionIsCutToTheBuffer)
{
    char out[16];
    bu_describe_system(HOST_CPUINFO, NULL, "6.18.44", 2, NULL, out, sizeof(out));
    EXPECT_STREQ("host: Linux 6.1", out);
}
