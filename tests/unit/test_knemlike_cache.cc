// Unit tests of the smsc/knemlike registration cache against a fake device.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <utility>

#include "../../opal/mca/smsc/knemlike/smsc_knemlike_cache.h"

namespace {

// Stands in for /dev/knemlike: hands out cookies and remembers the live regions.
struct FakeDevice {
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> live; // cookie -> (base, len)
    std::map<uint64_t, bool> held;                           // cookie -> holds its pages
    uint64_t next_cookie = 1000;
    int creates = 0, destroys = 0, unheld_creates = 0, wrong_ranges = 0;
    size_t max_bytes_live = 0; // bytes of live objects at most, 0: no limit (ENOMEM beyond,
                               // as an attachment past the address space or map count)
    int fail_create = 0; // errno to return from create, 0: succeed
    int fail_hold = 0;   // errno to return from a create that holds pages, 0: succeed
    size_t max_live = 0; // regions the device holds at most, 0: no limit
    uint64_t memlock = 0; // bytes held regions may pin in all (RLIMIT_MEMLOCK), 0: no limit
    uint64_t pinned = 0;

    static int create(void *ctx, uint64_t base, uint64_t len, int hold, uint64_t *cookie)
    {
        auto *d = static_cast<FakeDevice *>(ctx);
        if (d->fail_create) {
            return -d->fail_create;
        }
        if (d->max_live && d->live.size() >= d->max_live) {
            return -EMFILE; // the module's regions-per-file limit
        }
        if (d->max_bytes_live) {
            uint64_t bytes = len;
            for (const auto &kv : d->live) {
                bytes += kv.second.second;
            }
            if (bytes > d->max_bytes_live) {
                return -ENOMEM;
            }
        }
        if (hold && d->fail_hold) {
            return -d->fail_hold;
        }
        if (hold && d->memlock && d->pinned + len > d->memlock) {
            return -EDQUOT; // the owner's RLIMIT_MEMLOCK
        }
        d->creates++;
        d->unheld_creates += !hold;
        *cookie = d->next_cookie++;
        d->live[*cookie] = {base, len};
        d->held[*cookie] = hold;
        d->pinned += hold ? len : 0;
        return 0;
    }
    static int destroy(void *ctx, const smsc_knemlike_reg *reg)
    {
        auto *d = static_cast<FakeDevice *>(ctx);
        const uint64_t cookie = reg->cookie;
        d->destroys++;
        if (d->live.count(cookie) && d->live[cookie] != std::make_pair(reg->base, reg->len)) {
            d->wrong_ranges++; // a mapping is unmapped by its range: it must be the one made
        }
        if (!d->live.count(cookie)) {
            return -ENOENT;
        }
        d->pinned -= d->held[cookie] ? d->live[cookie].second : 0;
        d->live.erase(cookie);
        d->held.erase(cookie);
        return 0;
    }
};

class Cache : public ::testing::Test {
protected:
    FakeDevice dev;
    smsc_knemlike_cache cache;
    const uint64_t A = 0x7f0000000000ull; // a page-aligned address
    const uint64_t P = 4096;

    void SetUp() override { Init(0, 0); }
    void TearDown() override
    {
        smsc_knemlike_cache_fini(&cache);
        EXPECT_EQ(0, dev.wrong_ranges) << "destroy was told another range than create made";
    }
    void Init(size_t max_entries, uint64_t max_bytes, int hold = 1)
    {
        smsc_knemlike_cache_ops ops = {FakeDevice::create, FakeDevice::destroy, &dev};
        smsc_knemlike_cache_init(&cache, &ops, max_entries, max_bytes, P, hold);
    }
    smsc_knemlike_cache_entry *Get(uint64_t addr, uint64_t size)
    {
        int err = 0;
        smsc_knemlike_cache_entry *e = smsc_knemlike_cache_acquire(&cache, addr, size, &err);
        EXPECT_NE(nullptr, e) << "acquire failed with " << err;
        return e;
    }
    void Put(smsc_knemlike_cache_entry *e) { smsc_knemlike_cache_release(&cache, e); }
    // Acquire and release at once: the buffer was sent and the send completed.
    uint64_t Send(uint64_t addr, uint64_t size)
    {
        smsc_knemlike_cache_entry *e = Get(addr, size);
        uint64_t cookie = e->reg.cookie;
        Put(e);
        return cookie;
    }
};

TEST_F(Cache, RegionsArePageAlignedAndCoverTheBuffer)
{
    smsc_knemlike_cache_entry *e = Get(A + 100, 5000);
    EXPECT_EQ(A, e->reg.base);
    EXPECT_EQ(2 * P, e->reg.len);
    EXPECT_EQ(1u, dev.live.size());
    Put(e);
}

TEST_F(Cache, ABufferSentAgainIsNotRegisteredAgain)
{
    uint64_t first = Send(A, 1 << 20);
    uint64_t second = Send(A, 1 << 20);
    EXPECT_EQ(first, second);
    EXPECT_EQ(1, dev.creates);
    EXPECT_EQ(1u, cache.stats.misses);
    EXPECT_EQ(1u, cache.stats.hits);
}

TEST_F(Cache, ARangeInsideARegisteredOneIsAHit)
{
    uint64_t outer = Send(A, 64 * P);
    EXPECT_EQ(outer, Send(A + 3 * P + 17, 1000));
    EXPECT_EQ(outer, Send(A + 63 * P, P)) << "ends exactly at the region's end";
    EXPECT_EQ(1, dev.creates);
}

TEST_F(Cache, AnAdjacentRangeIsAMiss)
{
    uint64_t left = Send(A, P);
    uint64_t right = Send(A + P, P);
    EXPECT_NE(left, right);
    EXPECT_EQ(2, dev.creates);
    EXPECT_EQ(2u, dev.live.size()) << "adjacent regions do not replace each other";
}

TEST_F(Cache, AnOverlappingRangeReplacesTheUnusedRegionItOverlaps)
{
    uint64_t old_cookie = Send(A, 2 * P);
    uint64_t new_cookie = Send(A + P, 2 * P);
    EXPECT_NE(old_cookie, new_cookie);
    EXPECT_EQ(0u, dev.live.count(old_cookie)) << "the superseded region was not destroyed";
    EXPECT_EQ(1u, dev.live.size());
}

TEST_F(Cache, ARegionInUseIsNeverDestroyedByAnOverlap)
{
    smsc_knemlike_cache_entry *held = Get(A, 2 * P);
    uint64_t held_cookie = held->reg.cookie;
    Send(A + P, 2 * P);
    EXPECT_EQ(1u, dev.live.count(held_cookie));
    EXPECT_EQ(2u, dev.live.size());
    Put(held);
}

TEST_F(Cache, ReleaseIsLazy)
{
    uint64_t cookie = Send(A, P);
    EXPECT_EQ(1u, dev.live.count(cookie)) << "released entries stay registered";
    EXPECT_EQ(0, dev.destroys);
}

TEST_F(Cache, EvictionIsLeastRecentlyUsedFirst)
{
    smsc_knemlike_cache_fini(&cache);
    Init(3, 0);
    uint64_t c1 = Send(A, P), c2 = Send(A + 10 * P, P), c3 = Send(A + 20 * P, P);
    Send(A, P); // c1 used again: c2 is now the least recently used
    uint64_t c4 = Send(A + 30 * P, P);
    EXPECT_EQ(1u, dev.live.count(c1));
    EXPECT_EQ(0u, dev.live.count(c2)) << "the least recently used entry should go";
    EXPECT_EQ(1u, dev.live.count(c3));
    EXPECT_EQ(1u, dev.live.count(c4));
    EXPECT_EQ(1u, cache.stats.evictions);
}

TEST_F(Cache, EntriesInUseAreNeverEvicted)
{
    smsc_knemlike_cache_fini(&cache);
    Init(2, 0);
    smsc_knemlike_cache_entry *a = Get(A, P), *b = Get(A + 10 * P, P);
    smsc_knemlike_cache_entry *c = Get(A + 20 * P, P);
    EXPECT_EQ(3u, dev.live.size()) << "all three are in use: the limit is exceeded, not enforced";
    EXPECT_EQ(1u, cache.stats.over_limit);
    EXPECT_EQ(0u, cache.stats.evictions);
    Put(a);
    EXPECT_EQ(2u, dev.live.size()) << "back within the limit once an entry is released";
    Put(b);
    Put(c);
    EXPECT_EQ(2u, dev.live.size());
}

TEST_F(Cache, TheByteLimitEvictsToo)
{
    smsc_knemlike_cache_fini(&cache);
    Init(0, 8 * P);
    uint64_t c1 = Send(A, 4 * P);
    uint64_t c2 = Send(A + 100 * P, 4 * P);
    uint64_t c3 = Send(A + 200 * P, 2 * P);
    EXPECT_EQ(0u, dev.live.count(c1));
    EXPECT_EQ(1u, dev.live.count(c2));
    EXPECT_EQ(1u, dev.live.count(c3));
    EXPECT_LE(cache.bytes, 8 * P);
}

TEST_F(Cache, InvalidateDropsUnusedOverlappingEntriesOnly)
{
    uint64_t c1 = Send(A, 2 * P);
    smsc_knemlike_cache_entry *held = Get(A + 10 * P, 2 * P);
    uint64_t c3 = Send(A + 20 * P, P);
    EXPECT_EQ(1u, smsc_knemlike_cache_invalidate(&cache, A + P, 15 * P));
    EXPECT_EQ(0u, dev.live.count(c1));
    EXPECT_EQ(1u, dev.live.count(held->reg.cookie));
    EXPECT_EQ(1u, dev.live.count(c3));
    Put(held);
}

TEST_F(Cache, ADeviceErrorIsReportedAndNothingIsCached)
{
    dev.fail_create = EPERM;
    int err = 0;
    EXPECT_EQ(nullptr, smsc_knemlike_cache_acquire(&cache, A, P, &err));
    EXPECT_EQ(-EPERM, err);
    EXPECT_EQ(1u, cache.stats.failures);
    EXPECT_EQ(0u, cache.count);
    dev.fail_create = 0;
    EXPECT_NE(0u, Send(A, P)) << "the next attempt goes to the device again";
}

TEST_F(Cache, BadRangesAreRefused)
{
    int err = 0;
    EXPECT_EQ(nullptr, smsc_knemlike_cache_acquire(&cache, A, 0, &err));
    EXPECT_EQ(-EINVAL, err);
    EXPECT_EQ(nullptr, smsc_knemlike_cache_acquire(&cache, UINT64_MAX - 10, 100, &err));
    EXPECT_EQ(-EINVAL, err);
    EXPECT_EQ(0, dev.creates);
}

TEST_F(Cache, ManyEntriesAreFoundAgain)
{
    for (int i = 0; i < 1000; ++i) {
        Send(A + (uint64_t) ((i * 7919) % 1000) * 4 * P, 3 * P);
    }
    EXPECT_EQ(1000, dev.creates);
    for (int i = 0; i < 1000; ++i) {
        Send(A + (uint64_t) i * 4 * P + 5, 2 * P);
    }
    EXPECT_EQ(1000, dev.creates) << "every second registration should hit";
    EXPECT_EQ(1000u, cache.stats.hits);
}

TEST_F(Cache, FiniDestroysEverythingEvenInUse)
{
    Send(A, P);
    Get(A + 10 * P, P); // never released
    smsc_knemlike_cache_fini(&cache);
    EXPECT_TRUE(dev.live.empty());
    Init(0, 0); // TearDown finalizes again
}

} // namespace

TEST_F(Cache, TheDevicesRegionLimitEvictsUnusedEntriesAndRetries)
{
    dev.max_live = 2;
    uint64_t a = Send(A, P);
    Send(A + 2 * P, P);
    Send(A + 4 * P, P); // the device is full: the least recently used entry makes room
    EXPECT_EQ(2u, dev.live.size());
    EXPECT_EQ(0u, dev.live.count(a));
    EXPECT_EQ(1u, cache.stats.evictions);
    EXPECT_EQ(0u, cache.stats.failures);
}

TEST_F(Cache, TheDevicesRegionLimitWithEveryEntryInUseFails)
{
    dev.max_live = 2;
    smsc_knemlike_cache_entry *e1 = Get(A, P), *e2 = Get(A + 2 * P, P);
    int err = 0;
    EXPECT_EQ(nullptr, smsc_knemlike_cache_acquire(&cache, A + 4 * P, P, &err));
    EXPECT_EQ(-EMFILE, err);
    EXPECT_EQ(2u, dev.live.size()); // nothing in use was destroyed
    EXPECT_EQ(1u, cache.stats.failures);
    Put(e1);
    Put(e2);
}

TEST_F(Cache, RegistrationsHoldTheirPagesAndCountThem)
{
    smsc_knemlike_cache_entry *e = Get(A, 3 * P);
    EXPECT_TRUE(e->held);
    EXPECT_EQ(3 * P, cache.stats.held_bytes);
    EXPECT_EQ(3 * P, dev.pinned);
    Put(e);
    EXPECT_EQ(3 * P, cache.stats.held_bytes) << "release is lazy: the pages stay held";
    EXPECT_EQ(1u, smsc_knemlike_cache_invalidate(&cache, A, P));
    EXPECT_EQ(0u, cache.stats.held_bytes);
    EXPECT_EQ(0u, dev.pinned);
}

TEST_F(Cache, OverTheMemlockLimitUnusedEntriesAreEvictedLeastRecentlyUsedFirst)
{
    dev.memlock = 4 * P;
    uint64_t a = Send(A, 2 * P), b = Send(A + 10 * P, 2 * P);
    (void) Send(A, 2 * P); // a is now the most recently used
    smsc_knemlike_cache_entry *c = Get(A + 20 * P, 2 * P);
    EXPECT_TRUE(c->held);
    EXPECT_EQ(0u, dev.live.count(b)) << "the least recently used entry goes first";
    EXPECT_EQ(1u, dev.live.count(a));
    EXPECT_EQ(1u, cache.stats.evictions);
    EXPECT_EQ(0u, cache.stats.unheld);
    EXPECT_EQ(4 * P, cache.stats.held_bytes);
    Put(c);
}

TEST_F(Cache, OverTheMemlockLimitWithEverythingInUseTheRegionHoldsNothing)
{
    dev.memlock = 4 * P;
    smsc_knemlike_cache_entry *a = Get(A, 4 * P);
    smsc_knemlike_cache_entry *b = Get(A + 10 * P, 2 * P);
    ASSERT_NE(nullptr, b) << "a registration must not fail for want of locked memory";
    EXPECT_FALSE(b->held);
    EXPECT_TRUE(a->held);
    EXPECT_EQ(1u, cache.stats.unheld);
    EXPECT_EQ(1, dev.unheld_creates);
    EXPECT_EQ(4 * P, cache.stats.held_bytes) << "only held entries count";
    EXPECT_EQ(dev.pinned, cache.stats.held_bytes);
    Put(a);
    Put(b);
}

TEST_F(Cache, ARegionLargerThanTheLimitHoldsNothingAndEvictsEverything)
{
    dev.memlock = 4 * P;
    (void) Send(A, P);
    smsc_knemlike_cache_entry *big = Get(A + 100 * P, 8 * P);
    ASSERT_NE(nullptr, big);
    EXPECT_FALSE(big->held);
    EXPECT_EQ(1u, cache.stats.evictions) << "it tried to make room first";
    EXPECT_EQ(0u, cache.stats.held_bytes);
    Put(big);
}

TEST_F(Cache, MemoryThatCannotBePinnedIsRegisteredWithoutHolding)
{
    dev.fail_hold = EFAULT; // read-only memory, pinned for writing
    smsc_knemlike_cache_entry *e = Get(A, 2 * P);
    ASSERT_NE(nullptr, e);
    EXPECT_FALSE(e->held);
    EXPECT_EQ(1u, cache.stats.unheld);
    EXPECT_EQ(0u, cache.stats.failures);
    Put(e);
}

TEST_F(Cache, WithoutHoldingNothingIsPinned)
{
    smsc_knemlike_cache_fini(&cache);
    Init(0, 0, 0);
    dev.memlock = P;
    smsc_knemlike_cache_entry *e = Get(A, 8 * P);
    EXPECT_FALSE(e->held);
    EXPECT_EQ(0u, cache.stats.unheld) << "not asked to hold: not a refusal";
    EXPECT_EQ(0u, dev.pinned);
    Put(e);
}

// The same cache keeps the mappings of a peer's export (smsc_knemlike_map.c): entries that
// hold no pages, unmapped by their range, and an attachment refused for want of address
// space or mappings (ENOMEM) makes room as a region refused for want of slots does.
TEST_F(Cache, DestroyIsToldTheRangeCreateMade)
{
    smsc_knemlike_cache_fini(&cache);
    Init(1, 0, 0);
    Send(A + 5, 3 * P);
    Send(A + 100 * P, P); // evicts the first: destroy must name its base and length
    EXPECT_EQ(1, dev.destroys);
    EXPECT_EQ(0, dev.wrong_ranges);
}

TEST_F(Cache, AnEntryNamesTheCacheHoldingIt)
{
    smsc_knemlike_cache_entry *e = Get(A, P);
    EXPECT_EQ(&cache, e->cache) << "unmap_peer_region finds the endpoint from its entry";
    Put(e);
}

TEST_F(Cache, OutOfAddressSpaceEvictsUnusedEntriesAndRetries)
{
    smsc_knemlike_cache_fini(&cache);
    Init(0, 0, 0);
    dev.max_bytes_live = 4 * P;
    uint64_t a = Send(A, 2 * P);
    uint64_t b = Send(A + 10 * P, 2 * P);
    (void) Send(A, 2 * P); // a is now the most recently used
    smsc_knemlike_cache_entry *c = Get(A + 20 * P, 2 * P);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(0u, dev.live.count(b)) << "the least recently used mapping goes first";
    EXPECT_EQ(1u, dev.live.count(a));
    EXPECT_EQ(1u, cache.stats.evictions);
    EXPECT_EQ(0u, cache.stats.failures);
    EXPECT_EQ(0u, cache.stats.unheld) << "a mapping never held pages";
    Put(c);
}

TEST_F(Cache, OutOfAddressSpaceWithEveryEntryInUseFails)
{
    smsc_knemlike_cache_fini(&cache);
    Init(0, 0, 0);
    dev.max_bytes_live = 2 * P;
    smsc_knemlike_cache_entry *a = Get(A, 2 * P);
    int err = 0;
    EXPECT_EQ(nullptr, smsc_knemlike_cache_acquire(&cache, A + 10 * P, P, &err));
    EXPECT_EQ(-ENOMEM, err);
    EXPECT_EQ(1u, dev.live.count(a->reg.cookie)) << "a mapping in use is never undone";
    EXPECT_EQ(1u, cache.stats.failures);
    Put(a);
}
