/*
 * Coherence with the owner's mapping: a region's memory is unmapped, then different data
 * is mapped at the same address. A copy through the old cookie must never return the old
 * contents: after munmap it fails with ESTALE, after the remap it sees the new data. The
 * same through a second process. And a copy already running when the owner destroys the
 * region stops (ENOENT) instead of going on through the revoked cookie.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/wait.h>

#define LEN (1 << 20)

/* Allocated before any region is unmapped: a buffer malloc'd after munmap could land at
 * the very address being tested. */
static uint8_t *got, *want;

/* Copy the whole region and say whose data came back. */
static int copy_and_compare(int fd, uint64_t cookie, unsigned old_seed, unsigned new_seed,
                            const char *when)
{
    memset(got, 0, LEN);
    int rc = kl_copy1(fd, cookie, 0, got, LEN, KNEMLIKE_COPY_FROM_REGION);
    if (0 == rc) {
        kl_fill(want, LEN, old_seed);
        CHECK(0 != memcmp(got, want, LEN), "%s: the OLD contents came back", when);
        kl_fill(want, LEN, new_seed);
        CHECK(0 == memcmp(got, want, LEN), "%s: neither the old nor the new contents", when);
    }
    return rc;
}

static void test_same_process(int fd)
{
    SECTION("owner unmaps, then maps other data at the same address (MAP_FIXED)");
    uint8_t *p = kl_map_filled(NULL, LEN, 10);
    uint64_t cookie = 0;
    CHECK_ERR(kl_create1(fd, p, LEN, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie), 0,
              "create");
    munmap(p, LEN);
    long long stale = kl_counter("refused_stale");
    CHECK_ERR(copy_and_compare(fd, cookie, 10, 10, "after munmap"), ESTALE, "copy after munmap");
    CHECK(kl_counter("refused_stale") == stale + 1, "refused_stale did not count");
    char c = 1;
    CHECK_ERR(kl_copy1(fd, cookie, 0, &c, 1, KNEMLIKE_COPY_TO_REGION), ESTALE,
              "write after munmap");
    uint8_t *q = kl_map_filled(p, LEN, 11);
    CHECK(q == p, "remap landed elsewhere");
    CHECK_ERR(copy_and_compare(fd, cookie, 10, 11, "after remap"), 0, "copy after remap");
    /* Writes follow the new mapping too. */
    uint8_t pattern[4096];
    kl_fill(pattern, sizeof(pattern), 12);
    CHECK_ERR(kl_copy1(fd, cookie, 8192, pattern, sizeof(pattern), KNEMLIKE_COPY_TO_REGION), 0,
              "write after remap");
    CHECK(0 == memcmp(q + 8192, pattern, sizeof(pattern)), "write went to the old pages");
    kl_destroy(fd, cookie);
    munmap(q, LEN);
}

/* The owner is another process: it remaps between the peer's two copies. */
static void test_other_process(void)
{
    SECTION("the owner is another process and remaps between two copies");
    int up[2], down[2];
    CHECK(0 == pipe(up) && 0 == pipe(down), "pipe");
    pid_t pid = fork();
    if (0 == pid) {
        int cfd = kl_open();
        uint8_t *p = kl_map_filled(NULL, LEN, 20);
        uint64_t cookie = 0;
        char go;
        if (kl_create1(cfd, p, LEN, KNEMLIKE_PROT_READ, 0, &cookie)) {
            _exit(3);
        }
        kl_xwrite(up[1], &cookie, sizeof(cookie));
        kl_xread(down[0], &go, 1);
        munmap(p, LEN);
        kl_map_filled(p, LEN, 21);
        kl_xwrite(up[1], "r", 1);
        kl_xread(down[0], &go, 1);
        _exit(0);
    }
    int fd = kl_open();
    uint64_t cookie = 0;
    char ack;
    kl_xread(up[0], &cookie, sizeof(cookie));
    CHECK_ERR(copy_and_compare(fd, cookie, 0, 20, "before the owner remaps"), 0, "first copy");
    kl_xwrite(down[1], "g", 1);
    kl_xread(up[0], &ack, 1);
    CHECK_ERR(copy_and_compare(fd, cookie, 20, 21, "after the owner remapped"), 0,
              "copy after the owner remapped");
    kl_xwrite(down[1], "g", 1);
    waitpid(pid, NULL, 0);
    CHECK_ERR(kl_copy1(fd, cookie, 0, &ack, 1, KNEMLIKE_COPY_FROM_REGION), ENOENT,
              "copy after the owner exited");
    close(fd);
}

/* The copy fills dst in order with 0x5a: how many bytes have arrived (a binary search
 * for the end of that prefix, read while the kernel may still be writing). */
static size_t arrived(const volatile uint8_t *dst, size_t len)
{
    size_t lo = 0, hi = len; /* dst[0, lo) arrived; dst[hi, len) has not */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (0x5a == dst[mid]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void test_destroy_stops_a_running_copy(int fd)
{
    SECTION("DESTROY stops a copy already running: nothing moves once it has returned");
    /* The module copies 128 pages a step (KNEMLIKE_CHUNK_PAGES) and DESTROY waits for the
     * step under way: the copy's bytes after DESTROY returned are none. A copy within a
     * step of its end when DESTROY returned is not counted as stopped. */
    const size_t slack = 2 * 128 * 4096;
    for (size_t len = 64 << 20; len <= 512 << 20; len *= 2) {
        uint8_t *src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint8_t *dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(MAP_FAILED != src && MAP_FAILED != dst, "mmap %zu MiB", len >> 20);
        if (MAP_FAILED == src || MAP_FAILED == dst) {
            return;
        }
        memset(src, 0x5a, len);
        memset(dst, 0, len); /* resident: the copy's time is the copy's */
        struct kl_copier r = {.fd = fd, .local = dst, .len = len,
                              .dir = KNEMLIKE_COPY_FROM_REGION, .rc = -1};
        CHECK_ERR(kl_create1(fd, src, len, KNEMLIKE_PROT_READ, 0, &r.cookie), 0, "create");
        pthread_t t;
        CHECK(0 == pthread_create(&t, NULL, kl_copier_run, &r), "pthread_create");
        usleep(20000);
        CHECK_ERR(kl_destroy(fd, r.cookie), 0, "destroy during the copy");
        size_t at_destroy = arrived(dst, len);
        pthread_join(t, NULL);
        size_t at_end = arrived(dst, len);
        munmap(src, len);
        munmap(dst, len);
        if (0 == at_end || len - at_destroy <= slack) {
            continue; /* not under way when DESTROY returned (not begun, or ending) */
        }
        printf("  DESTROY returned with %zu of %zu MiB copied; the copy ended with %zu KiB "
               "more, status %s\n", at_destroy >> 20, len >> 20, (at_end - at_destroy) >> 10,
               r.rc ? kl_errno_name(-r.rc) : "0");
        CHECK(-ENOENT == r.rc, "the copy went on after DESTROY: status %s, not ENOENT",
              r.rc ? kl_errno_name(-r.rc) : "0 (success)");
        CHECK(at_end == at_destroy, "%zu bytes arrived after DESTROY returned",
              at_end - at_destroy);
        return;
    }
    CHECK(0, "no copy up to 512 MiB was under way when DESTROY returned: nothing was tested");
}

int main(void)
{
    int fd = kl_open();
    got = malloc(LEN);
    want = malloc(LEN);
    test_same_process(fd);
    test_other_process();
    test_destroy_stops_a_running_copy(fd);
    close(fd);
    return kl_verdict("kmod_stale");
}
