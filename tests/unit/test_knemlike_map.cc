// Unit tests of the span smsc/knemlike maps of a peer's export for a buffer.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cerrno>

#include "../../opal/mca/smsc/knemlike/smsc_knemlike_map.h"

namespace {

const uint64_t P = 4096, M = 2u << 20;             // a page, the mapping alignment
const uint64_t START = 1u << 16, END = 0x7ffffffff000ull; // the export: all of user space

struct Span {
    int rc;
    uint64_t lo, hi;
};

Span SpanOf(uint64_t remote, uint64_t size, uint64_t align = M)
{
    Span s = {0, 0, 0};
    s.rc = smsc_knemlike_map_span(remote, size, align, START, END, &s.lo, &s.hi);
    return s;
}

TEST(KnemlikeMapSpan, CoversTheBufferAlignedOut)
{
    Span s = SpanOf(0x7f0000100010ull, 5000);
    ASSERT_EQ(0, s.rc);
    EXPECT_EQ(0x7f0000000000ull, s.lo);
    EXPECT_EQ(0x7f0000200000ull, s.hi);
}

TEST(KnemlikeMapSpan, BuffersInOneAlignedBlockGetTheSameSpan)
{
    Span a = SpanOf(0x555555600000ull + 100, 300), b = SpanOf(0x555555600000ull + M - P, P);
    EXPECT_EQ(a.lo, b.lo);
    EXPECT_EQ(a.hi, b.hi);
}

TEST(KnemlikeMapSpan, ABufferAcrossABlockBoundarySpansBoth)
{
    Span s = SpanOf(0x555555600000ull + M - 8, 16);
    ASSERT_EQ(0, s.rc);
    EXPECT_EQ(2 * M, s.hi - s.lo);
}

TEST(KnemlikeMapSpan, PageAlignmentForABypassMapping)
{
    Span s = SpanOf(0x7f0000100010ull, 5000, P);
    EXPECT_EQ(0x7f0000100000ull, s.lo);
    EXPECT_EQ(0x7f0000102000ull, s.hi);
}

TEST(KnemlikeMapSpan, IsClippedToTheExport)
{
    Span low = SpanOf(START + 8, 100);
    ASSERT_EQ(0, low.rc);
    EXPECT_EQ(START, low.lo) << "the export starts inside the first aligned block";
    Span high = SpanOf(END - 100, 100);
    ASSERT_EQ(0, high.rc);
    EXPECT_EQ(END, high.hi) << "the export ends inside the last aligned block";
}

TEST(KnemlikeMapSpan, BytesOutsideTheExportAreRefused)
{
    EXPECT_EQ(-ERANGE, SpanOf(START - 1, 2).rc) << "starts below";
    EXPECT_EQ(-ERANGE, SpanOf(END - 1, 2).rc) << "runs past the end";
    EXPECT_EQ(-ERANGE, SpanOf(END, 1).rc);
    EXPECT_EQ(-ERANGE, SpanOf(0xffff800000000000ull, P).rc) << "kernel addresses";
    EXPECT_EQ(-ERANGE, SpanOf(START, UINT64_MAX).rc) << "overflowing size";
    EXPECT_EQ(-ERANGE, SpanOf(START, 0).rc) << "nothing to map";
}

TEST(KnemlikeMapSpan, TheLastByteOfTheExportIsMapped)
{
    Span s = SpanOf(END - 1, 1);
    ASSERT_EQ(0, s.rc);
    EXPECT_EQ(END, s.hi);
}

TEST(KnemlikeMapSpan, AnExportToTheTopOfTheAddressSpaceDoesNotWrap)
{
    uint64_t lo = 0, hi = 0;
    const uint64_t top = UINT64_MAX - P + 1; // page-aligned, and rounding up would wrap
    EXPECT_EQ(-ERANGE, smsc_knemlike_map_span(top + 10, 10, M, START, top, &lo, &hi));
    ASSERT_EQ(0, smsc_knemlike_map_span(top - 10, 10, M, START, top, &lo, &hi));
    EXPECT_EQ(top, hi);
    EXPECT_LT(lo, hi);
}

} // namespace
