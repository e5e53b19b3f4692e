// Unit tests of the smsc/knemlike attachment cache against a fake device.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <set>

#include "../../opal/mca/smsc/knemlike/smsc_knemlike_attach.h"

namespace {

// Stands in for KNEMLIKE_IOC_ATTACH and munmap: hands out fake addresses, remembers the
// live mappings, refuses the cookies it is told to.
struct FakeDevice {
    std::map<void *, uint64_t> mapped; // map_addr -> cookie
    std::set<uint64_t> refuse;         // cookies attach refuses (regions not held)
    int attaches = 0, detaches = 0;
    uintptr_t next = 0x100000;

    static int attach(void *ctx, uint64_t cookie, char **addr, void **map_addr, size_t *len)
    {
        auto *d = static_cast<FakeDevice *>(ctx);
        if (d->refuse.count(cookie)) {
            return -EINVAL;
        }
        d->attaches++;
        *map_addr = reinterpret_cast<void *>(d->next);
        *addr = reinterpret_cast<char *>(d->next + 100);
        *len = 8192;
        d->next += 0x10000;
        d->mapped[*map_addr] = cookie;
        return 0;
    }
    static void detach(void *ctx, void *map_addr, size_t len)
    {
        auto *d = static_cast<FakeDevice *>(ctx);
        EXPECT_EQ(8192u, len);
        EXPECT_EQ(1u, d->mapped.erase(map_addr)) << "detach of a mapping not made";
        d->detaches++;
    }
};

struct AttachCache : ::testing::Test {
    FakeDevice dev;
    smsc_knemlike_attach_cache cache{};

    void start(size_t max)
    {
        smsc_knemlike_attach_ops ops = {FakeDevice::attach, FakeDevice::detach, &dev};
        ASSERT_EQ(0, smsc_knemlike_attach_init(&cache, &ops, max));
    }
    void TearDown() override
    {
        smsc_knemlike_attach_fini(&cache);
        EXPECT_TRUE(dev.mapped.empty()) << "fini left mappings";
    }
};

TEST_F(AttachCache, SecondCopyOfARegionIsAHit)
{
    start(4);
    auto *a = smsc_knemlike_attach_acquire(&cache, 7, 0x5000, 300);
    ASSERT_NE(nullptr, a);
    ASSERT_NE(nullptr, a->addr);
    smsc_knemlike_attach_release(&cache, a);
    auto *b = smsc_knemlike_attach_acquire(&cache, 7, 0x5000, 300);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a->addr, b->addr);
    smsc_knemlike_attach_release(&cache, b);
    EXPECT_EQ(1, dev.attaches);
    EXPECT_EQ(1u, cache.stats.attaches);
    EXPECT_EQ(1u, cache.stats.hits);
}

TEST_F(AttachCache, RefusedRegionIsRememberedAndNotAskedAgain)
{
    start(4);
    dev.refuse.insert(9);
    for (int i = 0; i < 3; ++i) {
        auto *a = smsc_knemlike_attach_acquire(&cache, 9, 0x5000, 300);
        ASSERT_NE(nullptr, a);
        EXPECT_EQ(nullptr, a->addr);
        smsc_knemlike_attach_release(&cache, a);
    }
    EXPECT_EQ(1u, cache.stats.refused);
    EXPECT_EQ(0u, cache.stats.hits);
    EXPECT_EQ(0, dev.attaches);
}

TEST_F(AttachCache, LeastRecentlyUsedUnusedEntryIsUnmappedBeyondTheLimit)
{
    start(2);
    auto *a = smsc_knemlike_attach_acquire(&cache, 1, 0x1000, 10);
    auto *b = smsc_knemlike_attach_acquire(&cache, 2, 0x2000, 10);
    smsc_knemlike_attach_release(&cache, b);
    smsc_knemlike_attach_release(&cache, a); // a released last, but b was used last
    a = smsc_knemlike_attach_acquire(&cache, 1, 0x1000, 10);
    smsc_knemlike_attach_release(&cache, a); // now 2 is the least recently used
    auto *c = smsc_knemlike_attach_acquire(&cache, 3, 0x3000, 10);
    ASSERT_NE(nullptr, c);
    smsc_knemlike_attach_release(&cache, c);
    EXPECT_EQ(1u, cache.stats.evictions);
    EXPECT_EQ(1, dev.detaches);
    for (auto &m : dev.mapped) {
        EXPECT_NE(2u, m.second) << "cookie 2 should have been unmapped";
    }
}

TEST_F(AttachCache, EntryInUseIsNeverUnmappedNorMoved)
{
    start(2);
    auto *a = smsc_knemlike_attach_acquire(&cache, 1, 0x1000, 10);
    auto *b = smsc_knemlike_attach_acquire(&cache, 2, 0x2000, 10);
    char *a_addr = a->addr;
    smsc_knemlike_attach_release(&cache, b);
    auto *c = smsc_knemlike_attach_acquire(&cache, 3, 0x3000, 10); // evicts b, not a
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1u, a->cookie);
    EXPECT_EQ(a_addr, a->addr);
    EXPECT_EQ(1u, a->in_use);
    // both in use and full: no room, the caller copies by ioctl
    EXPECT_EQ(nullptr, smsc_knemlike_attach_acquire(&cache, 4, 0x4000, 10));
    smsc_knemlike_attach_release(&cache, a);
    smsc_knemlike_attach_release(&cache, c);
}

TEST_F(AttachCache, SameCookieOtherRangeIsAnotherEntry)
{
    start(4);
    auto *a = smsc_knemlike_attach_acquire(&cache, 5, 0x1000, 10);
    auto *b = smsc_knemlike_attach_acquire(&cache, 5, 0x1000, 20);
    EXPECT_NE(a, b);
    smsc_knemlike_attach_release(&cache, a);
    smsc_knemlike_attach_release(&cache, b);
    EXPECT_EQ(2, dev.attaches);
}

} // namespace
