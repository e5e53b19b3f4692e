/*
 * Every operation of /dev/knemlike and every error path: info, create, copy in both
 * directions (within a process and between two), vectors on both sides, single-use,
 * destroy, and the refusals (bad cookie, wrong secret, destroyed region, out of
 * bounds, wrong direction for the protection, zero lengths, too many segments, malformed
 * requests), with the counters that must move.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <sys/mman.h>
#include <sys/wait.h>

/* The structures' sizes are part of the ABI (the ioctl numbers encode them): the same
 * on every architecture, with no implicit padding. */
_Static_assert(sizeof(struct knemlike_segment) == 16, "knemlike_segment");
_Static_assert(sizeof(struct knemlike_info) == 56, "knemlike_info");
_Static_assert(sizeof(struct knemlike_create) == 32, "knemlike_create");
_Static_assert(sizeof(struct knemlike_destroy) == 8, "knemlike_destroy");
_Static_assert(sizeof(struct knemlike_copy) == 48, "knemlike_copy");

static void test_info(int fd)
{
    SECTION("get info: ABI version, feature bits, limits");
    struct knemlike_info info;
    memset(&info, 0xff, sizeof(info));
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, &info), 0, "get info");
    CHECK(KNEMLIKE_ABI_VERSION == info.abi_version, "ABI %u, header says %u", info.abi_version,
          KNEMLIKE_ABI_VERSION);
    CHECK(info.features & KNEMLIKE_FEATURE_FOLLOWS_MAPPING, "feature bits 0x%x", info.features);
    CHECK(info.max_segments >= 64 && info.max_region_bytes >= (1 << 20), "limits too small");
    CHECK(0 == info.reserved[0] && 0 == info.reserved[3], "reserved fields not zeroed");
}

static void test_copy_within_process(int fd)
{
    SECTION("create, copy both ways within one process, destroy");
    size_t len = 3 * 4096 + 123;
    uint8_t *a = malloc(len), *b = malloc(len), *c = malloc(len);
    uint64_t cookie = 0, bytes = 0;
    long long copies = kl_counter("copies");

    kl_fill(a, len, 1);
    kl_fill(c, len, 2);
    CHECK_ERR(kl_create1(fd, a, len, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie), 0,
              "create");
    CHECK(0 != cookie, "cookie is zero");
    CHECK((uint64_t) (uintptr_t) a != cookie, "cookie is the address");
    struct knemlike_segment s = {(uintptr_t) b, len};
    CHECK_ERR(kl_copy(fd, cookie, 0, &s, 1, KNEMLIKE_COPY_FROM_REGION, &bytes), 0, "copy from");
    CHECK(bytes == len, "copy reported %llu bytes, expected %zu", (unsigned long long) bytes, len);
    CHECK(0 == memcmp(a, b, len), "copy from region: data differs");
    CHECK_ERR(kl_copy1(fd, cookie, 0, c, len, KNEMLIKE_COPY_TO_REGION), 0, "copy to");
    CHECK(0 == memcmp(a, c, len), "copy to region: data differs");
    /* Partial copy at an odd offset. */
    memset(b, 0, len);
    CHECK_ERR(kl_copy1(fd, cookie, 4097, b, 5000, KNEMLIKE_COPY_FROM_REGION), 0, "offset copy");
    CHECK(0 == memcmp(a + 4097, b, 5000), "copy at offset 4097: data differs");
    CHECK(kl_counter("copies") >= copies + 3, "copies counter did not move");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy");
    CHECK_ERR(kl_copy1(fd, cookie, 0, b, 1, KNEMLIKE_COPY_FROM_REGION), ENOENT,
              "copy from a destroyed region");
    CHECK_ERR(kl_destroy(fd, cookie), ENOENT, "destroy twice");
    free(a);
    free(b);
    free(c);
}

/* The child owns a region and hands its cookie over a pipe; the parent copies both ways,
 * then the child checks what the parent wrote. */
static void test_copy_between_processes(void)
{
    SECTION("copy both ways between two processes");
    size_t len = 1 << 20;
    int to_parent[2], to_child[2];
    CHECK(0 == pipe(to_parent) && 0 == pipe(to_child), "pipe");
    pid_t pid = fork();
    if (0 == pid) {
        int cfd = kl_open();
        uint8_t *mem = malloc(len);
        uint64_t cookie = 0;
        char go;
        kl_fill(mem, len, 3);
        if (kl_create1(cfd, mem, len, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie)) {
            _exit(3);
        }
        if (write(to_parent[1], &cookie, sizeof(cookie)) != sizeof(cookie) ||
            read(to_child[0], &go, 1) != 1) {
            _exit(4);
        }
        uint8_t *want = malloc(len);
        kl_fill(want, len, 3);
        kl_fill(want + 1000, 70000, 4);
        _exit(memcmp(mem, want, len) ? 5 : 0);
    }
    int fd = kl_open();
    uint64_t cookie = 0;
    uint8_t *buf = malloc(len), *want = malloc(len);
    CHECK(read(to_parent[0], &cookie, sizeof(cookie)) == sizeof(cookie), "cookie from child");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, len, KNEMLIKE_COPY_FROM_REGION), 0,
              "copy from the child's region");
    kl_fill(want, len, 3);
    CHECK(0 == memcmp(buf, want, len), "data read from the child differs");
    kl_fill(buf, 70000, 4);
    CHECK_ERR(kl_copy1(fd, cookie, 1000, buf, 70000, KNEMLIKE_COPY_TO_REGION), 0,
              "copy into the child's region");
    CHECK(1 == write(to_child[1], "g", 1), "go to child");
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "child saw wrong data after the parent's write (status %d)", status);
    close(fd);
    free(buf);
    free(want);
}

/* Vectors on both sides, with odd lengths, unaligned addresses and empty local pieces. */
static void test_vectors(int fd)
{
    SECTION("vectors on both sides, unaligned, with empty local pieces");
    uint8_t *mem = malloc(200000), *out = malloc(200000), *flat = malloc(200000);
    struct knemlike_segment remote[3] = {
        {(uintptr_t) mem + 3, 5000}, {(uintptr_t) mem + 9001, 77}, {(uintptr_t) mem + 20011, 100000}};
    uint64_t cookie = 0, bytes = 0;
    size_t total = 5000 + 77 + 100000, at = 0;

    kl_fill(mem, 200000, 5);
    for (int i = 0; i < 3; ++i) { /* the region's bytes, in region order */
        memcpy(flat + at, (void *) (uintptr_t) remote[i].addr, remote[i].len);
        at += remote[i].len;
    }
    CHECK_ERR(kl_create(fd, remote, 3, KNEMLIKE_PROT_READ, 0, &cookie), 0, "create vector");
    struct knemlike_segment local[4] = {
        {(uintptr_t) out + 1, 4000}, {(uintptr_t) out + 5000, 0}, {(uintptr_t) out + 6001, 1100},
        {(uintptr_t) out + 9000, total - 11 - 5100}};
    memset(out, 0, 200000);
    CHECK_ERR(kl_copy(fd, cookie, 11, local, 4, KNEMLIKE_COPY_FROM_REGION, &bytes), 0,
              "vector to vector copy");
    CHECK(bytes == total - 11, "vector copy reported %llu bytes", (unsigned long long) bytes);
    CHECK(0 == memcmp(out + 1, flat + 11, 4000) && 0 == memcmp(out + 6001, flat + 4011, 1100) &&
              0 == memcmp(out + 9000, flat + 5111, total - 11 - 5100),
          "vector to vector copy: data differs");
    CHECK(0 == out[0] && 0 == out[4001] && 0 == out[6000], "bytes between local pieces written");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy vector region");
    free(mem);
    free(out);
    free(flat);
}

static void test_single_use(int fd)
{
    SECTION("single-use regions: gone after the first successful copy");
    char src[100] = "single use", dst[100];
    uint64_t cookie = 0;
    long long live = kl_counter("regions_live");
    CHECK_ERR(kl_create1(fd, src, sizeof(src), KNEMLIKE_PROT_READ, KNEMLIKE_FLAG_SINGLE_USE,
                         &cookie), 0, "create single-use");
    CHECK_ERR(kl_copy1(fd, cookie, 0, dst, 10, KNEMLIKE_COPY_TO_REGION), EACCES,
              "a refused copy does not use it up");
    CHECK_ERR(kl_copy1(fd, cookie, 0, (void *) 16, 10, KNEMLIKE_COPY_FROM_REGION), EFAULT,
              "a failed copy does not use it up");
    CHECK(kl_counter("regions_live") == live + 1, "single-use region gone before any copy");
    CHECK_ERR(kl_copy1(fd, cookie, 0, dst, sizeof(dst), KNEMLIKE_COPY_FROM_REGION), 0,
              "first copy of a single-use region");
    CHECK(0 == strcmp(dst, "single use"), "single-use copy data");
    CHECK(kl_counter("regions_live") == live, "a used-up single-use region is still live");
    CHECK_ERR(kl_copy1(fd, cookie, 0, dst, sizeof(dst), KNEMLIKE_COPY_FROM_REGION), ENOENT,
              "second copy of a single-use region");
    CHECK_ERR(kl_destroy(fd, cookie), ENOENT, "destroy of a used-up single-use region");

    /* Used up by a zero-length copy too: "the first copy" is the first one that succeeds. */
    CHECK_ERR(kl_create1(fd, src, sizeof(src), KNEMLIKE_PROT_WRITE, KNEMLIKE_FLAG_SINGLE_USE,
                         &cookie), 0, "create single-use, writable");
    CHECK_ERR(kl_copy1(fd, cookie, 5, dst, 0, KNEMLIKE_COPY_TO_REGION), 0,
              "zero-length copy into a single-use region");
    CHECK_ERR(kl_copy1(fd, cookie, 0, dst, 1, KNEMLIKE_COPY_TO_REGION), ENOENT,
              "single-use region after a zero-length copy");
    CHECK(kl_counter("regions_live") == live, "regions_live %lld, expected %lld",
          kl_counter("regions_live"), live);
}

static void test_refusals(int fd)
{
    SECTION("refusals: bad cookie, secret, bounds, direction, zero lengths, malformed");
    char buf[8192];
    uint64_t cookie = 0, bytes = 99;
    struct knemlike_segment seg = {(uintptr_t) buf, sizeof(buf)};
    long long refused = kl_counter("refused_no_region");

    CHECK_ERR(kl_create1(fd, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &cookie), 0, "create");
    CHECK_ERR(kl_copy1(fd, cookie ^ 0xdeadbeef00000000ull, 0, buf, 1, 0), ENOENT, "forged secret");
    CHECK_ERR(kl_copy1(fd, cookie ^ (1ull << 24), 0, buf, 1, 0), ENOENT, "wrong secret above the index");
    CHECK_ERR(kl_copy1(fd, cookie + 1, 0, buf, 1, 0), ENOENT, "neighbouring index");
    CHECK_ERR(kl_copy1(fd, 0, 0, buf, 1, 0), ENOENT, "zero cookie");
    CHECK(kl_counter("refused_no_region") >= refused + 4, "refused_no_region did not count");
    CHECK_ERR(kl_copy1(fd, cookie, 8192, buf, 1, 0), ERANGE, "offset at the end");
    CHECK_ERR(kl_copy1(fd, cookie, 8000, buf, 193, 0), ERANGE, "length past the end");
    CHECK_ERR(kl_copy1(fd, cookie, UINT64_MAX - 1, buf, 4, 0), ERANGE, "offset + length wraps");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, 1, KNEMLIKE_COPY_TO_REGION), EACCES,
              "write into a read-only region");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, 1, 2), EINVAL, "unknown direction");
    CHECK_ERR(kl_copy(fd, cookie, 100, &seg, 0, 0, &bytes), 0, "zero-length copy");
    CHECK(0 == bytes, "zero-length copy reported %llu bytes", (unsigned long long) bytes);
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, 0, 0), 0, "zero-length segment copy");
    struct knemlike_copy c = {.cookie = cookie, .local_segments = (uintptr_t) &seg,
                              .nr_local_segments = 1, .flags = 1};
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_COPY, &c), EINVAL, "copy with unknown flags");
    c.flags = 0;
    c.reserved = 1;
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_COPY, &c), EINVAL, "copy with reserved set");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy");

    CHECK_ERR(kl_create1(fd, buf, 0, KNEMLIKE_PROT_READ, 0, NULL), EINVAL, "zero-length region");
    CHECK_ERR(kl_create(fd, &seg, 0, KNEMLIKE_PROT_READ, 0, NULL), EINVAL, "no segments");
    CHECK_ERR(kl_create(fd, &seg, 1, 0, 0, NULL), EINVAL, "no protection");
    CHECK_ERR(kl_create(fd, &seg, 1, 4, 0, NULL), EINVAL, "unknown protection");
    CHECK_ERR(kl_create(fd, &seg, 1, KNEMLIKE_PROT_READ, 0x80, NULL), EINVAL, "unknown flag");
    struct knemlike_create cr = {.segments = (uintptr_t) &seg, .nr_segments = 1,
                                 .prot = KNEMLIKE_PROT_READ, .reserved = 7};
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_CREATE, &cr), EINVAL, "create with reserved set");
}

/* Many segments: up to the limit works, one more is refused. */
static void test_many_segments(int fd)
{
    SECTION("many segments: max_segments works, one more is refused");
    struct knemlike_info info;
    kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, &info);
    uint32_t n = info.max_segments;
    uint8_t *mem = malloc((size_t) n * 3), *out = malloc(n);
    struct knemlike_segment *segs = calloc(n + 1, sizeof(*segs));
    uint64_t cookie = 0;
    kl_fill(mem, (size_t) n * 3, 6);
    for (uint32_t i = 0; i <= n; ++i) {
        segs[i].addr = (uintptr_t) mem + 3 * (i % n) + 1;
        segs[i].len = 1;
    }
    CHECK_ERR(kl_create(fd, segs, n, KNEMLIKE_PROT_READ, 0, &cookie), 0, "max_segments segments");
    CHECK_ERR(kl_copy1(fd, cookie, 0, out, n, KNEMLIKE_COPY_FROM_REGION), 0,
              "copy from a region of max_segments pieces");
    int bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
        bad += out[i] != mem[3 * i + 1];
    }
    CHECK(0 == bad, "%d bytes wrong gathering %u one-byte segments", bad, n);
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy");
    CHECK_ERR(kl_create(fd, segs, n + 1, KNEMLIKE_PROT_READ, 0, NULL), E2BIG,
              "max_segments + 1 segments");
    free(mem);
    free(out);
    free(segs);
}

/* Limits are module parameters root may change at run time, within bounds. */
static void test_limits(int fd)
{
    SECTION("limits: parameters bounded at run time, max_regions_per_file enforced");
    char buf[64];
    long long old_regions = kl_get_param("max_regions_per_file");
    long long old_segments = kl_get_param("max_segments");
    CHECK(old_regions > 0 && old_segments > 0, "parameters not readable");
    CHECK_ERR(kl_set_param("max_segments", "0"), EINVAL, "max_segments=0 at run time");
    CHECK_ERR(kl_set_param("max_segments", "2000000"), EINVAL, "max_segments above its hard limit");
    CHECK_ERR(kl_set_param("max_regions_per_file", "0"), EINVAL, "max_regions_per_file=0");
    CHECK_ERR(kl_set_param("max_regions_per_file", "16777216"), EINVAL,
              "max_regions_per_file beyond the cookie's index space");
    CHECK_ERR(kl_set_param("max_region_mb", "-1"), EINVAL, "max_region_mb=-1");
    CHECK_ERR(kl_set_param("max_region_mb", "junk"), EINVAL, "max_region_mb=junk");
    CHECK(kl_get_param("max_segments") == old_segments, "a refused value was applied");

    int fd2 = kl_open();
    uint64_t c[4], extra = 0;
    CHECK_ERR(kl_set_param("max_regions_per_file", "3"), 0, "max_regions_per_file=3");
    struct knemlike_info info;
    CHECK_ERR(kl_ioctl(fd2, KNEMLIKE_IOC_GET_INFO, &info), 0, "get info");
    CHECK(3 == info.max_regions_per_file, "info says max_regions_per_file %u, expected 3",
          info.max_regions_per_file);
    for (int i = 0; i < 3; ++i) {
        CHECK_ERR(kl_create1(fd2, buf, sizeof(buf), KNEMLIKE_PROT_READ,
                             0 == i ? KNEMLIKE_FLAG_SINGLE_USE : 0, &c[i]), 0,
                  "create up to max_regions_per_file");
    }
    CHECK_ERR(kl_create1(fd2, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &c[3]), EMFILE,
              "one region more than max_regions_per_file");
    CHECK_ERR(kl_create1(fd, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &extra), 0,
              "the limit is per open file: another file still creates");
    CHECK_ERR(kl_destroy(fd, extra), 0, "destroy");
    CHECK_ERR(kl_destroy(fd2, c[1]), 0, "destroy one");
    CHECK_ERR(kl_create1(fd2, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &c[1]), 0,
              "create again after a destroy");
    CHECK_ERR(kl_copy1(fd2, c[0], 0, buf, 8, KNEMLIKE_COPY_FROM_REGION), 0,
              "use up the single-use region");
    CHECK_ERR(kl_create1(fd2, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &c[3]), 0,
              "a used-up single-use region no longer counts against the limit");
    close(fd2);
    snprintf(buf, sizeof(buf), "%lld", old_regions);
    CHECK_ERR(kl_set_param("max_regions_per_file", buf), 0, "restore max_regions_per_file");

    long long old_mb = kl_get_param("max_region_mb");
    CHECK_ERR(kl_set_param("max_region_mb", "1"), 0, "max_region_mb=1");
    uint8_t *big = malloc((1 << 20) + 1);
    CHECK_ERR(kl_create1(fd, big, 1 << 20, KNEMLIKE_PROT_READ, 0, &extra), 0,
              "region of exactly max_region_mb");
    CHECK_ERR(kl_destroy(fd, extra), 0, "destroy");
    CHECK_ERR(kl_create1(fd, big, (1 << 20) + 1, KNEMLIKE_PROT_READ, 0, NULL), E2BIG,
              "region one byte over max_region_mb");
    snprintf(buf, sizeof(buf), "%lld", old_mb);
    CHECK_ERR(kl_set_param("max_region_mb", buf), 0, "restore max_region_mb");
    free(big);

    /* The kernel memory one user's regions take, whatever the files: a region of n
     * segments costs over 16 n bytes, so 64 KiB holds at most 4096 / n of them. */
    long long old_kb = kl_get_param("max_user_kb");
    CHECK(old_kb >= 1024, "max_user_kb %lld: the default is 1/32 of RAM, at least 1 MiB", old_kb);
    CHECK_ERR(kl_set_param("max_user_kb", "0"), EINVAL, "max_user_kb=0");
    CHECK_ERR(kl_set_param("max_user_kb", "64"), 0, "max_user_kb=64");
    static struct knemlike_segment segs[1000];
    uint32_t nseg = (uint32_t) (kl_get_param("max_segments") < 1000 ? kl_get_param("max_segments")
                                                                    : 1000);
    for (uint32_t i = 0; i < nseg; ++i) {
        segs[i].addr = (uintptr_t) buf;
        segs[i].len = 8;
    }
    static uint64_t mine[4097];
    int made = 0, rc = 0, fd3 = kl_open();
    long long refused = kl_counter("refused_limit");
    while (made < 4097 && 0 == (rc = kl_create(fd3, segs, nseg, KNEMLIKE_PROT_READ, 0,
                                               &mine[made]))) {
        made++;
    }
    CHECK(-ENOSPC == rc && made >= 1 && made <= (int) (4096 / nseg),
          "max_user_kb=64: %d regions of %u segments, then %s (expected 1-%u, then ENOSPC)",
          made, nseg, strerror(-rc), 4096 / nseg);
    CHECK(kl_counter("refused_limit") == refused + 1, "ENOSPC not counted in refused_limit");
    if (-ENOSPC == rc) {
        printf("  ok: max_user_kb=64 -> %d regions of %u segments, then ENOSPC\n", made, nseg);
    }
    pid_t pid = fork();
    if (0 == pid) {
        uint64_t theirs;
        int ok = 0 == setgid(65534) && 0 == setuid(65534) &&
                 0 == kl_create(kl_open(), segs, nseg, KNEMLIKE_PROT_READ, 0, &theirs);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "another user could not create a region while this one is at max_user_kb");
    if (made >= 2) {
        CHECK_ERR(kl_destroy(fd3, mine[1]), 0, "destroy one");
        CHECK_ERR(kl_create(fd, segs, nseg, KNEMLIKE_PROT_READ, 0, &mine[1]), 0,
                  "create again within max_user_kb after a destroy (through another file)");
        CHECK_ERR(kl_destroy(fd, mine[1]), 0, "destroy");
    }
    close(fd3);
    snprintf(buf, sizeof(buf), "%lld", old_kb);
    CHECK_ERR(kl_set_param("max_user_kb", buf), 0, "restore max_user_kb");
}

/* The region's owner is a process that has exited while the file that holds the region
 * stays open in another: copies report the owner gone (ESRCH), not a stale mapping. */
static void test_owner_gone(int fd)
{
    SECTION("owner gone: its address space no longer exists -> ESRCH");
    int up[2];
    uint64_t cookie = 0;
    char buf[16];
    CHECK(0 == pipe(up), "pipe");
    pid_t pid = fork();
    if (0 == pid) {
        static char mem[4096] = "child's memory";
        if (kl_create1(fd, mem, sizeof(mem), KNEMLIKE_PROT_READ, 0, &cookie)) {
            _exit(3);
        }
        kl_xwrite(up[1], &cookie, sizeof(cookie));
        _exit(0);
    }
    kl_xread(up[0], &cookie, sizeof(cookie));
    waitpid(pid, NULL, 0);
    long long gone = kl_counter("refused_owner_gone");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_FROM_REGION), ESRCH,
              "copy from a region whose owner exited (file still open)");
    CHECK(kl_counter("refused_owner_gone") == gone + 1, "refused_owner_gone did not count");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "the open file still destroys it");
    close(up[0]);
    close(up[1]);
}

/* CREATE whose result cannot be written back: the region is taken back, not leaked. */
static void test_create_undone(int fd)
{
    SECTION("create whose result cannot be written back is undone");
    char buf[64];
    struct knemlike_segment seg = {(uintptr_t) buf, sizeof(buf)};
    struct knemlike_create *req = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long long live = kl_counter("regions_live"), destroyed = kl_counter("regions_destroyed");
    req->segments = (uintptr_t) &seg;
    req->nr_segments = 1;
    req->prot = KNEMLIKE_PROT_READ;
    mprotect(req, 4096, PROT_READ);
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_CREATE, req), EFAULT, "create with a read-only argument");
    CHECK(kl_counter("regions_live") == live, "the region of a failed create stayed live");
    CHECK(kl_counter("regions_destroyed") == destroyed + 1, "the region was not destroyed");
    munmap(req, 4096);
}

/* A region's protection cannot exceed its owner's mapping: copies go through the
 * owner's page tables with the owner's rights, never FOLL_FORCE. */
static void test_owner_protection(int fd)
{
    SECTION("copies respect the owner's current page protection");
    uint64_t cookie = 0;
    uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t buf[8192], before[8192];
    kl_fill(p, 8192, 30);
    memcpy(before, p, sizeof(before));
    CHECK_ERR(kl_create1(fd, p, 8192, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie), 0,
              "create");
    mprotect(p, 8192, PROT_READ);
    kl_fill(buf, sizeof(buf), 31);
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_TO_REGION), ESTALE,
              "write into a region the owner has since made read-only");
    CHECK(0 == memcmp(p, before, sizeof(before)), "a read-only page was written");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_FROM_REGION), 0,
              "read from the read-only region");
    mprotect(p, 8192, PROT_NONE);
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_FROM_REGION), ESTALE,
              "read from a region the owner made PROT_NONE");
    mprotect(p, 8192, PROT_READ | PROT_WRITE);
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_TO_REGION), 0,
              "write once the owner made it writable again");
    CHECK(0 == memcmp(p, buf, sizeof(buf)), "write after mprotect: data differs");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy");
    munmap(p, 8192);

    /* A file its owner may only read: a PROT_WRITE region over it cannot change it. */
    char path[] = "/tmp/knemlike-ro-XXXXXX";
    int tfd = mkstemp(path);
    CHECK(tfd >= 0 && 4096 == write(tfd, before, 4096), "temporary file");
    close(tfd);
    tfd = open(path, O_RDONLY);
    uint8_t *f = mmap(NULL, 4096, PROT_READ, MAP_SHARED, tfd, 0);
    CHECK(MAP_FAILED != f, "mmap the file read-only");
    CHECK_ERR(kl_create1(fd, f, 4096, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie), 0,
              "create over a read-only shared file mapping");
    CHECK_ERR(kl_copy1(fd, cookie, 0, buf, 4096, KNEMLIKE_COPY_TO_REGION), ESTALE,
              "write through the region into the read-only file");
    CHECK(0 == memcmp(f, before, 4096), "the read-only file was written");
    CHECK_ERR(kl_destroy(fd, cookie), 0, "destroy");
    munmap(f, 4096);
    close(tfd);
    unlink(path);
}

int main(void)
{
    int fd = kl_open();
    long long live = kl_counter("regions_live");
    CHECK(live >= 0, "counters missing from /sys/class/misc/knemlike/stats");

    test_info(fd);
    test_copy_within_process(fd);
    test_copy_between_processes();
    test_vectors(fd);
    test_single_use(fd);
    test_refusals(fd);
    test_many_segments(fd);
    test_limits(fd);
    test_owner_gone(fd);
    test_create_undone(fd);
    test_owner_protection(fd);
    close(fd);
    CHECK(kl_counter("regions_live") == live, "regions_live %lld after closing, was %lld",
          kl_counter("regions_live"), live);
    return kl_verdict("kmod_ops");
}
