// SPDX-License-Identifier: BSD-3-Clause
// A pair ring's room rule (smx_ring_room, btl_smx_fifo.h, and sendi's inline case
// smx_ring_quick, which must agree with it), driven the way btl_smx_send.c drives it: a
// writer that asks for room, then advances its head past the SKIP and the record, and a
// reader that reports the lines it is through with. Single-threaded: what is checked is
// where records go and that none overwrites a line the reader still needs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#define _Static_assert static_assert /* the layout header is C11 */
extern "C" {
#include "../../opal/mca/btl/smx/btl_smx_fifo.h"
}

namespace {

class Ring {
public:
    explicit Ring(uint32_t lines)
        : lines_(lines), mem_(sizeof(struct smx_pair_ring) + (size_t) lines * SMX_CACHE_LINE)
    {
        ring_ = reinterpret_cast<struct smx_pair_ring *>(mem_.data());
        ring_->lines = lines;
        ring_->consumed = 0;
    }

    // Ask for a record of 'lines' lines; on success, write it (head moves past the SKIP
    // and the record) and return the ring index it starts at; -1 when there is no room.
    long write(uint32_t lines, uint32_t *skip_out = nullptr)
    {
        uint32_t skip = 0;
        // sendi's inline case (smx_ring_quick) must agree with the room rule wherever it
        // takes a record: the same line and span (a record the ring carries inline takes
        // its gap too, as mca_btl_smx_post_begin gives it), no SKIP
        uint64_t quick_seen = seen_;
        uint32_t quick_lines = lines;
        struct smx_record *quick = smx_ring_quick(ring_, lines_, head_, &quick_seen, &quick_lines);
        lines = span(lines);
        if (!smx_ring_room(ring_, lines_, head_, &seen_, lines, &skip)) {
            EXPECT_EQ(nullptr, quick) << "the inline case took a record the room rule refuses";
            return -1;
        }
        const uint64_t start = head_ + skip;
        if (nullptr != quick) {
            EXPECT_EQ(lines, quick_lines);
            EXPECT_EQ(0u, skip);
            EXPECT_EQ(smx_ring_line(ring_, lines_, start), quick);
            quick_++;
        }
        // what the room rule promises: the SKIP and the record cover only lines the
        // reader is through with, and a record never runs past the ring's end
        EXPECT_LE(start + lines - ring_->consumed, lines_);
        EXPECT_LE((start & (lines_ - 1)) + lines, lines_);
        if (0 != skip) { // a SKIP runs exactly to the ring's end
            EXPECT_EQ(0u, start & (lines_ - 1));
        }
        head_ = start + lines;
        pending_.push_back(head_);
        if (nullptr != skip_out) {
            *skip_out = skip;
        }
        return (long) (start & (lines_ - 1));
    }

    // The reader takes the oldest 'n' records still unread.
    void read(size_t n)
    {
        while (n-- > 0 && !pending_.empty()) {
            ring_->consumed = pending_.front();
            pending_.erase(pending_.begin());
        }
    }

    void read_all() { read(pending_.size()); }

    // A ping-pong of 'n' records of 'lines' lines, each read before the next is written:
    // the furthest ring line one started at; -1 if one found no room.
    long furthest(uint32_t lines, int n)
    {
        long most = 0;
        for (int i = 0; i < n; ++i) {
            const long at = write(lines);
            if (at < 0) {
                return -1;
            }
            most = at > most ? at : most;
            read_all();
        }
        return most;
    }

    size_t unread() const { return pending_.size(); }
    unsigned quick() const { return quick_; } // records the inline case would have taken
    // the lines a record of 'lines' lines takes: its gap too where the ring carries it inline
    uint32_t span(uint32_t lines) const
    {
        return smx_ring_carries(lines_, lines) ? smx_record_span(lines) : lines;
    }

private:
    uint32_t lines_;
    std::vector<unsigned char> mem_;
    struct smx_pair_ring *ring_;
    uint64_t head_ = 0, seen_ = 0;
    std::vector<uint64_t> pending_;
    unsigned quick_ = 0;
};

const uint32_t kLines = 2048; // 128 KiB: the smaller ring 'auto' makes (a process's fifth on)

} // namespace

// A ping-pong of small messages stays in the ring's first lines (what keeps it in cache).
TEST(SmxRing, SmallRecordsOfAPingPongStayInTheFirstLap)
{
    for (uint32_t lines : {4u, 8u}) {
        Ring r(kLines);
        for (int i = 0; i < 10000; ++i) {
            const long at = r.write(lines);
            ASSERT_GE(at, 0) << "record " << i << " of " << lines << " lines";
            EXPECT_LT(at, (long) (SMX_RING_LAP + SMX_RING_SMALL));
            r.read_all();
        }
        // and all but the record that goes back to the start each lap take sendi's
        // inline case
        EXPECT_GE(r.quick(), 10000u - 10000u / (SMX_RING_LAP / lines) - 1) << lines << " lines";
    }
}

// A 4-32 KiB message goes on through the ring and is sent back only at its end: no SKIP
// (nor a wait for the reader) per message.
TEST(SmxRing, LargerRecordsGoBackOnlyAtTheEnd)
{
    for (uint32_t lines : {68u, 132u, 260u, 516u}) {
        Ring r(kLines);
        unsigned skips = 0;
        const int n = 1000;
        for (int i = 0; i < n; ++i) {
            uint32_t skip = 0;
            ASSERT_GE(r.write(lines, &skip), 0);
            skips += 0 != skip;
            r.read_all();
        }
        // one SKIP per trip round the ring (which holds kLines / span of them), no more
        const unsigned trips = (unsigned) n / (kLines / r.span(lines));
        EXPECT_LE(skips, trips + 1) << lines << " lines";
        EXPECT_GE(skips + 1, trips) << lines << " lines";
        // sendi's inline case takes every record but those after a SKIP, where the ring
        // carries them inline (up to a sixteenth of it, at most a medium record)
        EXPECT_EQ(smx_ring_carries(kLines, lines) ? n - skips : 0u, r.quick())
            << lines << " lines";
    }
}

// In a 512 KiB ring (what 'auto' gives a process's first rings), a ping-pong of medium
// records (spans of 9-60 lines: payloads of 497 B to about 3.2 KiB) keeps to the ring's
// first 10 KiB, two to eight records, with one SKIP a lap; a record of more is not carried
// inline (it goes in a chunk, and the ring takes only the small record that points to it).
TEST(SmxRing, MediumRecordsOfAPingPongStayInTheMediumLap)
{
    const uint32_t size = 8192;
    for (uint32_t lines : {12u, 20u, 36u, 44u, 52u}) {
        Ring r(size);
        ASSERT_LE(r.span(lines), SMX_RING_MEDIUM);
        unsigned skips = 0;
        const int n = 5000;
        for (int i = 0; i < n; ++i) {
            uint32_t skip = 0;
            const long at = r.write(lines, &skip);
            ASSERT_GE(at, 0) << "record " << i << " of " << lines << " lines";
            EXPECT_LT(at, (long) (SMX_RING_MEDIUM_LAP + SMX_RING_MEDIUM)) << lines << " lines";
            skips += 0 != skip;
            r.read_all();
        }
        const unsigned per_lap = (SMX_RING_MEDIUM_LAP + r.span(lines) - 1) / r.span(lines);
        const unsigned laps = (unsigned) n / per_lap;
        EXPECT_LE(skips, laps + 1) << lines << " lines";
        EXPECT_GE(skips + 1, laps) << lines << " lines";
        EXPECT_EQ(n - skips, r.quick()) << lines << " lines"; // the inline case takes the rest
    }
    for (uint32_t lines : {53u, 56u, 68u, 132u, 256u}) {
        ASSERT_GT(smx_record_span(lines), SMX_RING_MEDIUM);
        EXPECT_FALSE(smx_ring_carries(size, lines)) << lines << " lines";
    }
}

// A medium record whose lap's start the reader is not through with goes on past the lap
// (no wait); rings of 128 and 256 KiB (what 'auto' gives later rings) keep a ping-pong in
// the lap as a 512 KiB one does.
TEST(SmxRing, MediumLapOnlyWhereTheReaderIsThrough)
{
    Ring r(8192);
    const uint32_t lines = 20; // a 1 KiB message
    long at;
    do {
        at = r.write(lines);
        ASSERT_GE(at, 0);
    } while (at < (long) SMX_RING_MEDIUM_LAP - (long) r.span(lines));
    // nothing read: the next record cannot go back to the start; it goes on past the lap
    EXPECT_GE(r.write(lines), (long) SMX_RING_MEDIUM_LAP);
    r.read_all();
    for (uint32_t size : {2048u, 4096u}) {
        Ring small(size);
        const long furthest = small.furthest(lines, 1000);
        ASSERT_GE(furthest, 0);
        EXPECT_LT(furthest, (long) (SMX_RING_MEDIUM_LAP + SMX_RING_MEDIUM)) << size << " lines";
    }
}

// A ring carries inline a record of up to a sixteenth of it, and at most a medium one
// however large the ring ('auto' rings are 128-512 KiB).
TEST(SmxRing, InlineUpToASixteenthAndAtMostAMediumRecord)
{
    const uint32_t most = SMX_RING_MEDIUM - SMX_RECORD_GAP;
    for (uint32_t size : {64u, 2048u, 4096u, 8192u, 65536u}) {
        const uint32_t limit = size / 16 < most ? size / 16 : most;
        EXPECT_TRUE(smx_ring_carries(size, limit)) << size << " lines";
        EXPECT_FALSE(smx_ring_carries(size, limit + 1)) << size << " lines";
    }
}

// Records of more than SMX_RING_SMALL lines carried inline are followed by an empty gap
// (what a reader's prefetchers take beyond a record is then nobody's); small ones and
// records larger than the ring carries inline are not.
TEST(SmxRing, LargerInlineRecordsLeaveAGap)
{
    Ring r(kLines);
    const long small1 = r.write(4), small2 = r.write(4);
    EXPECT_EQ(4, small2 - small1);
    const long mid1 = r.write(20), mid2 = r.write(20);
    EXPECT_EQ(20 + (long) SMX_RECORD_GAP, mid2 - mid1);
    const long big1 = r.write(kLines / 8), big2 = r.write(4);
    EXPECT_EQ((long) kLines / 8, big2 - big1);
}

// A stream of small records (a double copy's chunk references) that the reader is behind
// on goes on to the ring's end instead of waiting at the lap for the reader to catch up.
TEST(SmxRing, AStreamTheReaderIsBehindOnDoesNotStopAtTheLap)
{
    Ring r(kLines);
    // the reader reads nothing: every record must still find room until the ring is full
    for (uint32_t i = 0; i < kLines / 4; ++i) {
        ASSERT_GE(r.write(4), 0) << "stopped at record " << i << " of a 4-line stream";
    }
    EXPECT_EQ(-1, r.write(4)); // full: no room until the reader moves
    r.read(1);
    EXPECT_EQ(0, r.write(4)); // the freed lines at the start
}

// Random record sizes and a reader that lags by random amounts: the room rule never lets
// the writer cover an unread line (checked in Ring::write) and never refuses a record
// once the reader has read everything.
TEST(SmxRing, RandomTrafficNeverOverwritesUnreadLines)
{
    std::mt19937 rng(20261125);
    for (uint32_t lines : {64u, 128u, 256u, 2048u, 8192u}) {
        Ring r(lines);
        for (int i = 0; i < 200000; ++i) {
            const uint32_t most = lines / 2;
            uint32_t want = 4 * (1 + rng() % (most / 4));
            if (rng() % 4 != 0) {
                want = 4 * (1 + rng() % 2); // mostly small ones
            }
            if (r.write(want) < 0) {
                ASSERT_GT(r.unread(), 0u) << "refused with nothing unread";
                r.read(1 + rng() % r.unread());
            } else if (rng() % 3 == 0) {
                r.read(rng() % (r.unread() + 1));
            }
        }
        r.read_all();
        for (uint32_t want : {4u, lines / 2}) { // all read: any size fits
            ASSERT_GE(r.write(want), 0);
            r.read_all();
        }
    }
}
