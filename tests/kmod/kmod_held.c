/*
 * Regions that hold their pages (KNEMLIKE_FLAG_HOLD_PAGES):
 * - a repeated copy pins nothing of the owner's (the module's pages_pinned counter stays
 *   put) and the held pages are charged to the owner (VmPin) and given back by DESTROY;
 * - every change of the owner's mapping drops them (held_drops), and the next copy sees
 *   the mapping as it is then: munmap, MAP_FIXED over it, mremap away and back,
 *   MADV_DONTNEED, mprotect, fork (copy-on-write), a THP split, the owner's exit; a
 *   change between a region's segments drops nothing;
 * - over the owner's RLIMIT_MEMLOCK, CREATE fails with EDQUOT and nothing stays charged.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define LEN (1 << 20)
#define PAGE 4096
#define RW (KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE)
#define HOLD KNEMLIKE_FLAG_HOLD_PAGES

/* This process's pinned memory in KiB (VmPin), or -1. */
static long vm_pin_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmPin: %ld kB", &kb)) {
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Dropped pages are given back by a work item: wait (at most 5 s) for a counter. */
static long long counter_settles(const char *name, long long want)
{
    long long v = kl_counter(name);
    for (int i = 0; i < 500 && v != want; i++) {
        usleep(10000);
        v = kl_counter(name);
    }
    return v;
}

static uint8_t *got, *want;

/* Copy len bytes from the region and compare with what the owner's memory holds now
 * (expect: a copy of it taken by the caller, since the owner may be this process). */
static void expect_contents(int fd, uint64_t cookie, const uint8_t *expect, size_t len,
                            const char *when)
{
    memset(got, 0xee, len);
    CHECK_ERR(kl_copy1(fd, cookie, 0, got, len, KNEMLIKE_COPY_FROM_REGION), 0, when);
    CHECK(0 == memcmp(got, expect, len), "%s: the copy does not see the owner's current data",
          when);
}

static void test_holds(int fd)
{
    SECTION("a held region: pinned once, charged to its owner, given back by DESTROY");
    uint8_t *p = kl_map_filled(NULL, LEN, 1);
    uint64_t cookie = 0;
    long pin0 = vm_pin_kb(getpid());
    long long held0 = kl_counter("held_pages"), takes0 = kl_counter("held_takes");
    CHECK_ERR(kl_create1(fd, p, LEN, RW, HOLD, &cookie), 0, "create with HOLD_PAGES");
    CHECK(kl_counter("held_pages") == held0 + LEN / PAGE, "held_pages: %lld, expected %lld",
          kl_counter("held_pages"), held0 + LEN / PAGE);
    CHECK(vm_pin_kb(getpid()) == pin0 + LEN / 1024, "VmPin %ld kB, expected %ld",
          vm_pin_kb(getpid()), pin0 + LEN / 1024);
    long long pinned0 = kl_counter("pages_pinned");
    for (int i = 0; i < 10; i++) {
        expect_contents(fd, cookie, p, LEN, "repeated copy from a held region");
    }
    kl_fill(want, LEN, 2);
    for (int i = 0; i < 3; i++) {
        CHECK_ERR(kl_copy1(fd, cookie, 0, want, LEN, KNEMLIKE_COPY_TO_REGION), 0,
                  "repeated copy into a held region");
    }
    CHECK(0 == memcmp(p, want, LEN), "a copy into the held region did not reach the owner");
    CHECK(kl_counter("pages_pinned") == pinned0,
          "13 copies pinned %lld pages of the owner's (a held region should pin none)",
          kl_counter("pages_pinned") - pinned0);
    CHECK(kl_counter("held_takes") == takes0 + 1, "held_takes %lld, expected one take",
          kl_counter("held_takes") - takes0);
    /* Unaligned pieces, across page boundaries, at odd offsets. */
    uint8_t piece[3 * PAGE + 7];
    struct knemlike_segment s = {(uintptr_t) piece + 1, sizeof(piece) - 1};
    CHECK_ERR(kl_copy(fd, cookie, PAGE - 3, &s, 1, KNEMLIKE_COPY_FROM_REGION, NULL), 0,
              "unaligned copy from a held region");
    CHECK(0 == memcmp(piece + 1, p + PAGE - 3, sizeof(piece) - 1), "unaligned copy: wrong bytes");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy a held region");
    CHECK(kl_counter("held_pages") == held0, "held_pages %lld after DESTROY, expected %lld",
          kl_counter("held_pages"), held0);
    CHECK(vm_pin_kb(getpid()) == pin0, "VmPin %ld kB after DESTROY, expected %ld",
          vm_pin_kb(getpid()), pin0);
    munmap(p, LEN);
}

static void test_vector(int fd)
{
    SECTION("a held region of three segments, one sharing a page with another");
    uint8_t *p = kl_map_filled(NULL, 4 * PAGE, 3);
    struct knemlike_segment segs[3] = {
        {(uintptr_t) p + 100, 200}, {(uintptr_t) p + 1000, 2 * PAGE}, {(uintptr_t) p + 3 * PAGE + 5, 10}};
    uint8_t expect[200 + 2 * PAGE + 10];
    memcpy(expect, p + 100, 200);
    memcpy(expect + 200, p + 1000, 2 * PAGE);
    memcpy(expect + 200 + 2 * PAGE, p + 3 * PAGE + 5, 10);
    uint64_t cookie = 0;
    CHECK_ERR(kl_create(fd, segs, 3, RW, HOLD, &cookie), 0, "create a held vector");
    expect_contents(fd, cookie, expect, sizeof(expect), "copy of a held vector");
    CHECK_ERR(kl_copy1(fd, cookie, 150, got, 100, KNEMLIKE_COPY_FROM_REGION), 0,
              "copy across two held segments");
    CHECK(0 == memcmp(got, expect + 150, 100), "copy across two held segments: wrong bytes");
    kl_destroy(fd, cookie);
    munmap(p, 4 * PAGE);
}

/* Changes between a held region's segments leave its pages held (the notifier spans the
 * gaps); a change inside a segment still drops them. */
static void test_gaps(int fd)
{
    SECTION("a held region of two segments with pages between them: changes there keep it");
    uint8_t *p = kl_map_filled(NULL, 8 * PAGE, 9);
    struct knemlike_segment segs[2] = {{(uintptr_t) p + 5 * PAGE + 3, PAGE}, {(uintptr_t) p + 17, 100}};
    uint8_t expect[PAGE + 100];
    memcpy(expect, p + 5 * PAGE + 3, PAGE);
    memcpy(expect + PAGE, p + 17, 100);
    uint64_t cookie = 0;
    CHECK_ERR(kl_create(fd, segs, 2, RW, HOLD, &cookie), 0,
              "create a held vector of pages 5-6 and 0, in that order");
    long long drops = kl_counter("held_drops"), pinned = kl_counter("pages_pinned");
    CHECK(0 == madvise(p + 2 * PAGE, PAGE, MADV_DONTNEED), "madvise page 2");
    CHECK(0 == munmap(p + 3 * PAGE, PAGE), "munmap page 3");
    CHECK(0 == mprotect(p + PAGE, PAGE, PROT_NONE), "mprotect page 1");
    CHECK(MAP_FAILED != mmap(p + 4 * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                             -1, 0), "MAP_FIXED over page 4");
    CHECK(kl_counter("held_drops") == drops,
          "changes of pages 1-4, between the segments, dropped the held pages (%lld drops)",
          kl_counter("held_drops") - drops);
    expect_contents(fd, cookie, expect, sizeof(expect), "copy after changes between segments");
    CHECK(kl_counter("pages_pinned") == pinned,
          "a copy after changes between the segments pinned %lld pages (the held ones went)",
          kl_counter("pages_pinned") - pinned);
    CHECK(0 == madvise(p + 6 * PAGE, PAGE, MADV_DONTNEED), "madvise page 6");
    CHECK(kl_counter("held_drops") > drops,
          "MADV_DONTNEED of page 6, in the first segment, did not drop the held pages");
    memset(expect + PAGE - 3, 0, 3); /* the segment's last 3 bytes were on page 6 */
    expect_contents(fd, cookie, expect, sizeof(expect), "copy after a change inside a segment");
    kl_destroy(fd, cookie);
    munmap(p, 8 * PAGE);
}

/* Create a held region over p, apply change(), then check the copy against check. */
typedef void (*change_fn)(uint8_t *p);

static void mapping_change(int fd, const char *what, change_fn change, int copy_err,
                           void (*after)(int fd, uint64_t cookie, uint8_t *p))
{
    SECTION("held region, then the owner's mapping changes: %s", what);
    uint8_t *p = kl_map_filled(NULL, LEN, 4);
    uint64_t cookie = 0;
    CHECK_ERR(kl_create1(fd, p, LEN, RW, HOLD, &cookie), 0, "create with HOLD_PAGES");
    expect_contents(fd, cookie, p, LEN, "copy before the change");
    long long drops = kl_counter("held_drops");
    change(p);
    CHECK(kl_counter("held_drops") > drops, "%s: the held pages were not dropped", what);
    if (copy_err) {
        CHECK_ERR(kl_copy1(fd, cookie, 0, got, LEN, KNEMLIKE_COPY_FROM_REGION), copy_err,
                  what);
    } else {
        memcpy(want, p, LEN);
        expect_contents(fd, cookie, want, LEN, what);
    }
    if (after) {
        after(fd, cookie, p);
    }
    kl_destroy(fd, cookie);
    munmap(p, LEN);
}

static void change_munmap(uint8_t *p)
{
    munmap(p, LEN);
}

static void after_munmap(int fd, uint64_t cookie, uint8_t *p)
{
    char c = 1;
    CHECK_ERR(kl_copy1(fd, cookie, 0, &c, 1, KNEMLIKE_COPY_TO_REGION), ESTALE,
              "write into a held region after munmap");
    long long takes = kl_counter("held_takes");
    kl_map_filled(p, LEN, 5);
    memcpy(want, p, LEN);
    expect_contents(fd, cookie, want, LEN, "copy after new memory was mapped there");
    CHECK(kl_counter("held_takes") == takes + 1, "the new pages were not taken and held");
    kl_fill(want, PAGE, 6);
    CHECK_ERR(kl_copy1(fd, cookie, 5 * PAGE, want, PAGE, KNEMLIKE_COPY_TO_REGION), 0,
              "write into the new pages");
    CHECK(0 == memcmp(p + 5 * PAGE, want, PAGE), "the write went to the old pages");
}

static void change_map_fixed(uint8_t *p)
{
    kl_map_filled(p, LEN, 7);
}

static uint8_t *elsewhere;

static void change_mremap_away(uint8_t *p)
{
    void *q = mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, elsewhere);
    CHECK(q == elsewhere, "mremap");
}

static void after_mremap_away(int fd, uint64_t cookie, uint8_t *p)
{
    /* Move them back: the same data, at the region's address again. */
    void *q = mremap(elsewhere, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, p);
    CHECK(q == p, "mremap back");
    memcpy(want, p, LEN);
    expect_contents(fd, cookie, want, LEN, "copy after the pages were moved back");
    elsewhere = mmap(elsewhere, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static void change_dontneed(uint8_t *p)
{
    CHECK(0 == madvise(p + PAGE, 3 * PAGE, MADV_DONTNEED), "madvise");
    CHECK(0 == p[PAGE] && 0 == p[4 * PAGE - 1], "MADV_DONTNEED did not zero the pages");
}

static void after_dontneed(int fd, uint64_t cookie, uint8_t *p)
{
    kl_fill(want, 3 * PAGE, 8);
    CHECK_ERR(kl_copy1(fd, cookie, PAGE, want, 3 * PAGE, KNEMLIKE_COPY_TO_REGION), 0,
              "write into pages MADV_DONTNEED gave back");
    CHECK(0 == memcmp(p + PAGE, want, 3 * PAGE), "the write went to the discarded pages");
}

static void change_readonly(uint8_t *p)
{
    CHECK(0 == mprotect(p, LEN, PROT_READ), "mprotect");
}

static void after_readonly(int fd, uint64_t cookie, uint8_t *p)
{
    char c = 1;
    CHECK_ERR(kl_copy1(fd, cookie, 0, &c, 1, KNEMLIKE_COPY_TO_REGION), ESTALE,
              "write into a held region its owner made read-only");
    CHECK(p[0] == want[0], "a refused write changed the owner's memory");
    CHECK(0 == mprotect(p, LEN, PROT_READ | PROT_WRITE), "mprotect back");
    kl_fill(want, PAGE, 9);
    CHECK_ERR(kl_copy1(fd, cookie, 0, want, PAGE, KNEMLIKE_COPY_TO_REGION), 0,
              "write once the owner made it writable again");
    CHECK(0 == memcmp(p, want, PAGE), "the write after mprotect did not arrive");
}

static void change_none(uint8_t *p)
{
    CHECK(0 == mprotect(p, LEN, PROT_NONE), "mprotect");
}

static void after_none(int fd, uint64_t cookie, uint8_t *p)
{
    CHECK(0 == mprotect(p, LEN, PROT_READ | PROT_WRITE), "mprotect back");
    memcpy(want, p, LEN);
    expect_contents(fd, cookie, want, LEN, "copy once the owner made it readable again");
}

/* The owner forks; its child keeps the old pages while the owner writes new data. The
 * copy must see the owner's pages, in both directions, and never touch the child's. */
static void test_fork(int fd)
{
    SECTION("held region, then the owner forks (copy-on-write) and writes");
    uint8_t *p = kl_map_filled(NULL, LEN, 10);
    uint64_t cookie = 0;
    int up[2], down[2];
    char c;
    CHECK(0 == pipe(up) && 0 == pipe(down), "pipe");
    CHECK_ERR(kl_create1(fd, p, LEN, RW, HOLD, &cookie), 0, "create with HOLD_PAGES");
    expect_contents(fd, cookie, p, LEN, "copy before fork");
    long long drops = kl_counter("held_drops");
    pid_t pid = fork();
    if (0 == pid) {
        /* The child's memory keeps the data of before the fork. */
        kl_xread(down[0], &c, 1);
        kl_fill(want, LEN, 10);
        c = 0 == memcmp(p, want, LEN) ? 'y' : 'n';
        kl_xwrite(up[1], &c, 1);
        _exit(0);
    }
    kl_fill(p, LEN, 11); /* the owner writes after the fork: its pages are its own */
    CHECK(kl_counter("held_drops") > drops, "fork: the held pages were not dropped");
    memcpy(want, p, LEN);
    expect_contents(fd, cookie, want, LEN, "copy after fork and the owner's writes");
    kl_fill(want, PAGE, 12);
    CHECK_ERR(kl_copy1(fd, cookie, 7 * PAGE, want, PAGE, KNEMLIKE_COPY_TO_REGION), 0,
              "write into the region after fork");
    CHECK(0 == memcmp(p + 7 * PAGE, want, PAGE), "after fork, a write missed the owner's pages");
    kl_xwrite(down[1], "g", 1);
    kl_xread(up[0], &c, 1);
    CHECK('y' == c, "after fork, the child's copy of the memory changed");
    waitpid(pid, NULL, 0);
    kl_destroy(fd, cookie);
    munmap(p, LEN);
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
}

/* A transparent huge page under the region, split by a change of one small page in it. */
static void test_thp(int fd)
{
    SECTION("held region over a huge page, split by MADV_DONTNEED of one 4 KiB page");
    size_t huge = 2 << 20;
    uint8_t *raw = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    CHECK(MAP_FAILED != raw, "mmap");
    uint8_t *p = (uint8_t *) (((uintptr_t) raw + huge - 1) & ~(huge - 1));
    madvise(p, huge, MADV_HUGEPAGE);
    kl_fill(p, huge, 13);
    uint64_t cookie = 0;
    CHECK_ERR(kl_create1(fd, p, huge, RW, HOLD, &cookie), 0, "create over a huge page");
    expect_contents(fd, cookie, p, huge, "copy of a huge page");
    CHECK(0 == madvise(p + 5 * PAGE, PAGE, MADV_DONTNEED), "madvise");
    memcpy(want, p, huge);
    CHECK(0 == want[5 * PAGE], "MADV_DONTNEED did not zero the page");
    expect_contents(fd, cookie, want, huge, "copy after the huge page was split");
    kl_destroy(fd, cookie);
    munmap(raw, 2 * huge);
}

/* The owner's address space goes while another process keeps its file open: the pages
 * are given back at once, and copies say the owner is gone. */
static void test_owner_exit(void)
{
    SECTION("the owner exits while its region's file stays open elsewhere");
    int fd = kl_open();
    int up[2];
    uint64_t cookie = 0;
    long long held0 = kl_counter("held_pages");
    CHECK(0 == pipe(up), "pipe");
    pid_t pid = fork();
    if (0 == pid) {
        uint8_t *p = kl_map_filled(NULL, LEN, 14);
        if (kl_create1(fd, p, LEN, KNEMLIKE_PROT_READ, HOLD, &cookie)) {
            _exit(3);
        }
        kl_xwrite(up[1], &cookie, sizeof(cookie));
        _exit(0);
    }
    kl_xread(up[0], &cookie, sizeof(cookie));
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status), "owner");
    CHECK(counter_settles("held_pages", held0) == held0,
          "the exited owner's pages are still held (%lld)", kl_counter("held_pages") - held0);
    CHECK_ERR(kl_copy1(fd, cookie, 0, got, LEN, KNEMLIKE_COPY_FROM_REGION), ESRCH,
              "copy from a held region whose owner exited");
    close(fd);
    close(up[0]), close(up[1]);
}

/* A process without CAP_IPC_LOCK and a small RLIMIT_MEMLOCK. */
static void test_limit(void)
{
    SECTION("RLIMIT_MEMLOCK 64 KiB, no CAP_IPC_LOCK: held regions are charged and refused");
    pid_t pid = fork();
    if (0 == pid) {
        struct rlimit r = {64 << 10, 64 << 10};
        if (setrlimit(RLIMIT_MEMLOCK, &r) || setgid(65534) || setuid(65534)) {
            perror("setrlimit/setuid");
            _exit(2);
        }
        int fd = kl_open();
        uint8_t *p = kl_map_filled(NULL, LEN, 15);
        uint64_t a = 0, b = 0;
        long long refused = kl_counter("refused_limit");
        CHECK_ERR(kl_create1(fd, p, 32 << 10, KNEMLIKE_PROT_READ, HOLD, &a), 0,
                  "hold 32 KiB under a 64 KiB limit");
        CHECK(vm_pin_kb(getpid()) == 32, "VmPin %ld kB, expected 32", vm_pin_kb(getpid()));
        CHECK_ERR(kl_create1(fd, p + LEN / 2, 64 << 10, KNEMLIKE_PROT_READ, HOLD, &b), EDQUOT,
                  "hold 64 KiB more");
        CHECK(kl_counter("refused_limit") == refused + 1, "refused_limit did not count");
        CHECK(vm_pin_kb(getpid()) == 32, "VmPin %ld kB after a refusal, expected 32",
              vm_pin_kb(getpid()));
        CHECK_ERR(kl_create1(fd, p, LEN, KNEMLIKE_PROT_READ, 0, &b), 0,
                  "a region that holds nothing is not charged");
        kl_destroy(fd, b);
        CHECK_ERR(kl_destroy(fd, a), 0, "destroy");
        CHECK_ERR(kl_create1(fd, p + LEN / 2, 64 << 10, KNEMLIKE_PROT_READ, HOLD, &b), 0,
                  "hold 64 KiB once the first is destroyed");
        close(fd);
        CHECK(vm_pin_kb(getpid()) == 0, "VmPin %ld kB after close", vm_pin_kb(getpid()));
        fflush(stdout);
        _exit(kl_failures ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "the limited process failed (wait status 0x%x)", status);
}

static void test_create_refusals(int fd)
{
    SECTION("CREATE with HOLD_PAGES needs the memory mapped, and writable for PROT_WRITE");
    uint8_t *p = kl_map_filled(NULL, 4 * PAGE, 16);
    uint64_t cookie = 0;
    long long held0 = kl_counter("held_pages");
    munmap(p + 2 * PAGE, PAGE);
    CHECK_ERR(kl_create1(fd, p, 4 * PAGE, KNEMLIKE_PROT_READ, HOLD, &cookie), EFAULT,
              "hold over a hole");
    mprotect(p, 2 * PAGE, PROT_READ);
    CHECK_ERR(kl_create1(fd, p, 2 * PAGE, RW, HOLD, &cookie), EFAULT,
              "hold read-only memory for PROT_WRITE");
    CHECK_ERR(kl_create1(fd, p, 2 * PAGE, KNEMLIKE_PROT_READ, HOLD, &cookie), 0,
              "hold read-only memory for PROT_READ");
    kl_destroy(fd, cookie);
    CHECK(kl_counter("held_pages") == held0, "refused creations left pages held");
    munmap(p, 4 * PAGE);
}

int main(void)
{
    int fd = kl_open();
    struct knemlike_info info;
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, &info), 0, "GET_INFO");
    if (!(info.features & KNEMLIKE_FEATURE_HOLD_PAGES)) {
        /* Every kernel the tests boot has MMU notifiers: not a reason to skip. */
        CHECK(0, "the module does not offer KNEMLIKE_FEATURE_HOLD_PAGES");
        return kl_verdict("kmod_held");
    }
    got = malloc(2 << 20);
    want = malloc(2 << 20);
    elsewhere = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    test_holds(fd);
    test_vector(fd);
    test_gaps(fd);
    mapping_change(fd, "munmap", change_munmap, ESTALE, after_munmap);
    mapping_change(fd, "new memory mapped over it (MAP_FIXED)", change_map_fixed, 0, NULL);
    mapping_change(fd, "mremap away", change_mremap_away, ESTALE, after_mremap_away);
    mapping_change(fd, "MADV_DONTNEED of three pages", change_dontneed, 0, after_dontneed);
    mapping_change(fd, "mprotect read-only", change_readonly, 0, after_readonly);
    mapping_change(fd, "mprotect PROT_NONE", change_none, ESTALE, after_none);
    test_fork(fd);
    test_thp(fd);
    test_owner_exit();
    test_limit();
    test_create_refusals(fd);
    close(fd);
    CHECK(counter_settles("held_pages", 0) == 0, "held_pages %lld with no region left",
          kl_counter("held_pages"));
    return kl_verdict("kmod_held");
}
