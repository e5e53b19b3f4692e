// Unit tests of btl/smx's clock (opal/mca/btl/smx/btl_smx_clock.c): a stamp's age is the
// time since it was taken, in this process or in another one, on either clock.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

extern "C" {
#include "../../opal/mca/btl/smx/btl_smx_clock.h"
}

namespace {

constexpr uint64_t kSleepNs = 20000000; // 20 ms

void sleep_ns(uint64_t ns)
{
    struct timespec t = {static_cast<time_t>(ns / 1000000000u),
                         static_cast<long>(ns % 1000000000u)};
    while (0 != nanosleep(&t, &t)) {
    }
}

// The age must lie between what CLOCK_MONOTONIC saw inside and around the stamp's life,
// within 2 % (the rate's measurement) and 50 us (a clock read that is a system call).
void expect_age_between(uint32_t age, uint64_t inner_ns, uint64_t outer_ns)
{
    EXPECT_GE(static_cast<double>(age), 0.98 * static_cast<double>(inner_ns) - 50000.0);
    EXPECT_LE(static_cast<double>(age), 1.02 * static_cast<double>(outer_ns) + 50000.0);
}

class Clock : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override { mca_btl_smx_clock_init(GetParam()); }
    void TearDown() override { mca_btl_smx_clock_init(false); }
};

TEST_P(Clock, AStampsAgeIsTheTimeSinceItWasTaken)
{
    if (GetParam()) {
        ASSERT_EQ(mca_btl_smx_clock_tsc_invariant(), mca_btl_smx_clock.tsc);
    } else {
        ASSERT_FALSE(mca_btl_smx_clock.tsc);
    }
    const uint64_t before = mca_btl_smx_clock_ns();
    const uint32_t stamp = mca_btl_smx_stamp_now();
    const uint64_t taken = mca_btl_smx_clock_ns();
    sleep_ns(kSleepNs);
    const uint64_t ending = mca_btl_smx_clock_ns();
    const uint32_t age = mca_btl_smx_stamp_age_ns(stamp);
    const uint64_t after = mca_btl_smx_clock_ns();
    EXPECT_NE(0u, stamp); // 0 means "not timed"
    expect_age_between(age, ending - taken, after - before);
}

TEST_P(Clock, AStampTakenInAnotherProcessAgesAlike)
{
    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    const uint64_t before = mca_btl_smx_clock_ns();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (0 == child) {
        const uint32_t stamp = mca_btl_smx_stamp_now();
        const uint64_t taken = mca_btl_smx_clock_ns();
        const bool ok = sizeof(stamp) == write(fds[1], &stamp, sizeof(stamp))
                        && sizeof(taken) == write(fds[1], &taken, sizeof(taken));
        _exit(ok ? 0 : 1);
    }
    uint32_t stamp = 0;
    uint64_t taken = 0;
    ASSERT_EQ(static_cast<ssize_t>(sizeof(stamp)), read(fds[0], &stamp, sizeof(stamp)));
    ASSERT_EQ(static_cast<ssize_t>(sizeof(taken)), read(fds[0], &taken, sizeof(taken)));
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    sleep_ns(kSleepNs);
    const uint64_t ending = mca_btl_smx_clock_ns();
    const uint32_t age = mca_btl_smx_stamp_age_ns(stamp);
    const uint64_t after = mca_btl_smx_clock_ns();
    close(fds[0]);
    close(fds[1]);
    expect_age_between(age, ending - taken, after - before);
}

TEST_P(Clock, AStampOfSecondsAgoIsNotAMessagesTime)
{
    // a stamp from about 2^31 units ago: more than 2 s on either clock, short of a wrap
    const uint32_t stamp = mca_btl_smx_stamp_now() - UINT32_C(0x80000000);
    EXPECT_GT(mca_btl_smx_stamp_age_ns(stamp), UINT32_C(2000000000));
}

INSTANTIATE_TEST_SUITE_P(BothClocks, Clock, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &info) {
                             return info.param ? "Tsc" : "Monotonic";
                         });

} // namespace
