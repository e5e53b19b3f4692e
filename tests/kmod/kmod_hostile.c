/*
 * A hostile caller: bad and kernel addresses, huge counts, overflowing lengths, ioctls of
 * the wrong size and unknown ones, randomized requests, a cookie used by another user,
 * destroy / close / kill -9 racing copies, and thousands of create/destroy cycles. The
 * module must refuse each with the documented errno, never crash, and leave its counters
 * where they started. (The harness then checks the kernel log for warnings.)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define KERNEL_PTR 0xffff888000000000ull

static void test_bad_addresses(int fd)
{
    SECTION("bad and kernel addresses as pointers");
    char buf[4096];
    struct knemlike_segment seg = {(uintptr_t) buf, sizeof(buf)};
    struct knemlike_segment kseg = {KERNEL_PTR, 4096};
    uint64_t cookie = 0;

    struct knemlike_create c = {.segments = KERNEL_PTR, .nr_segments = 1,
                                .prot = KNEMLIKE_PROT_READ};
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_CREATE, &c), EFAULT, "segment vector at a kernel address");
    c.segments = 0;
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_CREATE, &c), EFAULT, "NULL segment vector");
    CHECK_ERR(kl_create(fd, &kseg, 1, KNEMLIKE_PROT_READ, 0, NULL), EFAULT,
              "region over kernel memory");
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_CREATE, (void *) (uintptr_t) KERNEL_PTR), EFAULT,
              "ioctl argument at a kernel address");
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, NULL), EFAULT, "NULL info argument");

    CHECK_ERR(kl_create(fd, &seg, 1, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &cookie), 0,
              "create");
    CHECK_ERR(kl_copy(fd, cookie, 0, &kseg, 1, KNEMLIKE_COPY_FROM_REGION, NULL), EFAULT,
              "copy from a region into kernel memory");
    CHECK_ERR(kl_copy(fd, cookie, 0, &kseg, 1, KNEMLIKE_COPY_TO_REGION, NULL), EFAULT,
              "copy from kernel memory into a region");
    struct knemlike_copy cp = {.cookie = cookie, .local_segments = KERNEL_PTR,
                               .nr_local_segments = 1};
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_COPY, &cp), EFAULT, "local vector at a kernel address");
    struct knemlike_segment unmapped = {0x100000, 4096}; /* below any mapping */
    CHECK_ERR(kl_copy(fd, cookie, 0, &unmapped, 1, KNEMLIKE_COPY_FROM_REGION, NULL), EFAULT,
              "copy into unmapped local memory");
    /* A read-only local page must not be written through the kernel. */
    void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct knemlike_segment roseg = {(uintptr_t) ro, 4096};
    CHECK_ERR(kl_copy(fd, cookie, 0, &roseg, 1, KNEMLIKE_COPY_FROM_REGION, NULL), EFAULT,
              "copy into a read-only local page");
    munmap(ro, 4096);
    kl_destroy(fd, cookie);
}

/* The lowest address of this process's main stack, from /proc/self/maps; 0 if none. */
static uintptr_t stack_start(void)
{
    char line[512];
    uintptr_t lo = 0, hi;
    FILE *f = fopen("/proc/self/maps", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (strstr(line, "[stack]") && 2 == sscanf(line, "%lx-%lx", &lo, &hi)) {
            break;
        }
        lo = 0;
    }
    if (f) {
        fclose(f);
    }
    return lo;
}

/* Addresses in the guard gap below a stack, on either side of a copy: refused before any
 * page is looked up (since 6.5 the kernel's page pinning prints a warning with a stack
 * dump for them, and the kernel log is checked after this program). */
static void test_guard_gap(int fd)
{
    SECTION("addresses in the stack's guard gap: refused, kernel log clean");
    static char buf[4096];
    uintptr_t gap = stack_start() - 2 * 4096;
    uint64_t cookie, gap_cookie;

    CHECK(gap > 4096, "no [stack] in /proc/self/maps");
    CHECK_ERR(kl_create1(fd, buf, sizeof(buf), KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0,
                         &cookie), 0, "create");
    CHECK_ERR(kl_copy1(fd, cookie, 0, (void *) gap, 4096, KNEMLIKE_COPY_FROM_REGION), EFAULT,
              "copy from a region into the guard gap");
    CHECK_ERR(kl_copy1(fd, cookie, 0, (void *) gap, 4096, KNEMLIKE_COPY_TO_REGION), EFAULT,
              "copy to a region from the guard gap");
    if (kl_region_flags() & KNEMLIKE_FLAG_HOLD_PAGES) {
        /* A region that holds its pages takes them at CREATE: there are none there. */
        CHECK_ERR(kl_create1(fd, (void *) gap, 4096, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE,
                             0, &gap_cookie), EFAULT, "create a held region over the guard gap");
        kl_destroy(fd, cookie);
        return;
    }
    CHECK_ERR(kl_create1(fd, (void *) gap, 4096, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0,
                         &gap_cookie), 0, "create a region over the guard gap");
    CHECK_ERR(kl_copy1(fd, gap_cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_FROM_REGION), ESTALE,
              "copy from a region in the guard gap");
    CHECK_ERR(kl_copy1(fd, gap_cookie, 0, buf, sizeof(buf), KNEMLIKE_COPY_TO_REGION), ESTALE,
              "copy to a region in the guard gap");
    kl_destroy(fd, gap_cookie);
    kl_destroy(fd, cookie);
}

static void test_sizes_and_counts(int fd)
{
    SECTION("huge counts and overflowing lengths");
    char buf[64];
    struct knemlike_segment seg = {(uintptr_t) buf, sizeof(buf)};
    struct knemlike_segment wrap = {0xfffffffffffff000ull, 0x2000};
    struct knemlike_segment huge[2] = {{(uintptr_t) buf, 1ull << 63}, {(uintptr_t) buf, 1ull << 63}};
    uint64_t cookie = 0;

    CHECK_ERR(kl_create(fd, &seg, 0xffffffffu, KNEMLIKE_PROT_READ, 0, NULL), E2BIG,
              "4G segments");
    CHECK_ERR(kl_create(fd, &wrap, 1, KNEMLIKE_PROT_READ, 0, NULL), EINVAL,
              "segment whose end wraps around");
    /* Each owner segment must lie in user space, so no sum of them can wrap: the first
     * 2^63-byte segment is refused as out of the address space. */
    CHECK_ERR(kl_create(fd, huge, 2, KNEMLIKE_PROT_READ, 0, NULL), EFAULT,
              "segments larger than the user address space");
    struct knemlike_segment toolong = {(uintptr_t) buf, 1ull << 46};
    int rc = kl_create(fd, &toolong, 1, KNEMLIKE_PROT_READ, 0, NULL);
    CHECK(-E2BIG == rc || -EFAULT == rc, "64 TiB region: got %d", rc);

    CHECK_ERR(kl_create(fd, &seg, 1, KNEMLIKE_PROT_READ, 0, &cookie), 0, "create");
    CHECK_ERR(kl_copy(fd, cookie, 0, &seg, 0xffffffffu, 0, NULL), E2BIG, "4G local segments");
    CHECK_ERR(kl_copy(fd, cookie, 0, &wrap, 1, 0, NULL), EINVAL, "local segment that wraps");
    CHECK_ERR(kl_copy(fd, cookie, 0, huge, 2, 0, NULL), EINVAL, "local lengths past 2^64");
    kl_destroy(fd, cookie);
}

static void test_bad_commands(int fd)
{
    SECTION("truncated and oversized structures, unknown commands");
    uint8_t arg[512] = {0};
    CHECK_ERR(kl_ioctl(fd, _IOWR(KNEMLIKE_IOC_MAGIC, 0x01, uint32_t), arg), ENOTTY,
              "create with a truncated structure");
    CHECK_ERR(kl_ioctl(fd, _IOWR(KNEMLIKE_IOC_MAGIC, 0x03, uint8_t[sizeof(struct knemlike_copy) + 8]),
                       arg), ENOTTY, "copy with an oversized structure");
    CHECK_ERR(kl_ioctl(fd, _IOR(KNEMLIKE_IOC_MAGIC, 0x00, uint64_t), arg), ENOTTY,
              "info with a truncated structure");
    CHECK_ERR(kl_ioctl(fd, _IO(KNEMLIKE_IOC_MAGIC, 0x7f), arg), ENOTTY, "unknown command");
    CHECK_ERR(kl_ioctl(fd, 0, arg), ENOTTY, "command 0");
    CHECK_ERR(kl_ioctl(fd, 0xffffffffu, arg), ENOTTY, "command ~0");
}

/* Randomized requests. Pointers are invalid, kernel, or into a scratch area of our own, so
 * even a request that succeeds only moves bytes inside the scratch area. */
static uint64_t pick_address(uint8_t *scratch, size_t scratch_len)
{
    switch (rand() % 5) {
    case 0: return 0;
    case 1: return KERNEL_PTR + (uint64_t) rand() * 4096;
    case 2: return 0xfffffffffffff000ull + (uint64_t) (rand() % 4096);
    default: return (uintptr_t) scratch + (uint64_t) (rand() % (int) scratch_len);
    }
}

static void test_random_requests(int fd, int rounds)
{
    SECTION("randomized requests: only documented errnos, no crash");
    static const int allowed[] = {0, EINVAL, E2BIG, EMFILE, ENOENT, EPERM, EACCES, ERANGE,
                                  EFAULT, ESTALE, ESRCH, ENOTTY, ENOMEM};
    const size_t scratch_len = 1 << 16;
    uint8_t *scratch = malloc(scratch_len);
    struct knemlike_segment segs[8];
    uint64_t cookies[16] = {0};
    int unexpected = 0, succeeded = 0;
    long long live = kl_counter("regions_live");

    srand(12345);
    for (int r = 0; r < rounds; ++r) {
        union {
            struct knemlike_create create;
            struct knemlike_copy copy;
            struct knemlike_destroy destroy;
            uint8_t bytes[64];
        } arg;
        for (size_t i = 0; i < sizeof(arg.bytes); ++i) {
            arg.bytes[i] = (uint8_t) rand();
        }
        for (int i = 0; i < 8; ++i) {
            segs[i].addr = pick_address(scratch, scratch_len);
            segs[i].len = rand() % 3 ? (uint64_t) (rand() % 8192) : (uint64_t) rand() << 32;
        }
        unsigned long cmd;
        int kind = rand() % 5;
        if (0 == kind) {
            cmd = KNEMLIKE_IOC_CREATE;
            arg.create.segments = rand() % 4 ? (uintptr_t) segs : pick_address(scratch, scratch_len);
            arg.create.nr_segments %= rand() % 2 ? 9 : 0xffffffffu;
            arg.create.prot %= 5;
            arg.create.flags %= 5;
            arg.create.reserved = rand() % 8 ? 0 : arg.create.reserved;
        } else if (1 == kind) {
            cmd = KNEMLIKE_IOC_COPY;
            arg.copy.cookie = rand() % 2 ? cookies[rand() % 16] : arg.copy.cookie;
            arg.copy.offset %= rand() % 2 ? 70000 : UINT64_MAX;
            arg.copy.local_segments = rand() % 4 ? (uintptr_t) segs : pick_address(scratch, scratch_len);
            arg.copy.nr_local_segments %= 9;
            arg.copy.direction %= 3;
            arg.copy.flags = rand() % 8 ? 0 : arg.copy.flags;
            arg.copy.reserved = 0;
        } else if (2 == kind) {
            cmd = KNEMLIKE_IOC_DESTROY;
            arg.destroy.cookie = rand() % 2 ? cookies[rand() % 16] : arg.destroy.cookie;
        } else if (3 == kind) {
            cmd = KNEMLIKE_IOC_GET_INFO;
        } else {
            cmd = ((unsigned long) rand() << 1) ^ (unsigned long) rand();
        }
        int rc = kl_ioctl(fd, cmd, &arg);
        if (0 == rc && KNEMLIKE_IOC_CREATE == cmd) {
            cookies[rand() % 16] = arg.create.cookie;
        }
        succeeded += 0 == rc;
        int ok = 0;
        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); ++i) {
            ok |= -rc == allowed[i];
        }
        if (!ok && unexpected++ < 5) {
            fprintf(stderr, "random request %d (cmd 0x%lx): unexpected errno %d (%s)\n", r, cmd,
                    -rc, strerror(-rc));
        }
    }
    CHECK(0 == unexpected, "%d random requests got an undocumented errno", unexpected);
    printf("  %d random requests, %d succeeded\n", rounds, succeeded);
    int fd2 = dup(fd);
    close(fd2); /* dup/close must not release the regions: the file is still open */
    CHECK(kl_counter("regions_live") >= live, "regions vanished on close of a dup");
    free(scratch);
}

static void test_other_user(int fd)
{
    SECTION("a cookie used by another user: EPERM unless ANY_USER");
    static char secret[4096] = "root's secret";
    uint64_t private_cookie, shared_cookie;
    CHECK_ERR(kl_create1(fd, secret, sizeof(secret), KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0,
                         &private_cookie), 0, "create private");
    CHECK_ERR(kl_create1(fd, secret, sizeof(secret), KNEMLIKE_PROT_READ, KNEMLIKE_FLAG_ANY_USER,
                         &shared_cookie), 0, "create shared");
    pid_t pid = fork();
    if (0 == pid) {
        char got[4096] = {0};
        if (setuid(65534)) {
            perror("setuid");
            _exit(10);
        }
        int cfd = kl_open();
        if (kl_copy1(cfd, private_cookie, 0, got, sizeof(got), KNEMLIKE_COPY_FROM_REGION) != -EPERM)
            _exit(11);
        if (kl_copy1(cfd, private_cookie, 0, got, 16, KNEMLIKE_COPY_TO_REGION) != -EPERM)
            _exit(12);
        if (0 != got[0])
            _exit(13);
        if (kl_destroy(cfd, private_cookie) != -ENOENT)
            _exit(14);
        /* the owner's own descriptor (inherited here, or passed over a Unix socket) does
         * not let another user destroy */
        if (kl_destroy(fd, shared_cookie) != -EPERM)
            _exit(17);
        if (kl_copy1(cfd, shared_cookie, 0, got, sizeof(got), KNEMLIKE_COPY_FROM_REGION) != 0)
            _exit(15);
        if (strcmp(got, "root's secret"))
            _exit(16);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "another user's process: check %d failed (11-12: not EPERM, 13: data leaked, "
          "14: destroyed another file's region, 15-16: ANY_USER refused, 17: destroyed "
          "through the owner's descriptor)",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK_ERR(kl_destroy(fd, private_cookie), 0, "destroy by the owner after another user tried");
    CHECK_ERR(kl_destroy(fd, shared_cookie), 0, "destroy by the owner of a region another user "
              "could not destroy");
}

/* Threads copy random pieces of the region named by r->cookie while the test ends and
 * replaces that region under them. */
struct race {
    int fd;
    uint8_t *mem; /* the region's contents, when they do not change; else NULL */
    size_t len;
    _Atomic uint64_t cookie;
    atomic_int stop;
    atomic_int bad;
    atomic_long copies;
    atomic_long wins; /* successful copies */
};

static void *race_copier(void *p)
{
    struct race *r = p;
    unsigned seed = (unsigned) (uintptr_t) &seed;
    uint8_t *buf = malloc(r->len);
    while (!atomic_load(&r->stop)) {
        size_t n = 1 + rand_r(&seed) % r->len;
        size_t off = rand_r(&seed) % (r->len - n + 1);
        int rc = kl_copy1(r->fd, atomic_load(&r->cookie), off, buf, n, KNEMLIKE_COPY_FROM_REGION);
        if (0 == rc) {
            atomic_fetch_add(&r->wins, 1);
            if (r->mem && memcmp(buf, r->mem + off, n) && atomic_fetch_add(&r->bad, 1) < 3)
                fprintf(stderr, "racing copy: wrong data\n");
        } else if (rc != -ENOENT && rc != -ESRCH) {
            if (atomic_fetch_add(&r->bad, 1) < 3)
                fprintf(stderr, "racing copy: %s\n", strerror(-rc));
        }
        atomic_fetch_add(&r->copies, 1);
    }
    free(buf);
    return NULL;
}

enum race_end { END_BY_DESTROY, END_BY_CLOSE };

/* Each cycle creates a region (in its own open file when ending by close), lets the
 * copiers at it, and destroys it or closes its file while they copy. */
static void test_end_races_copies(int fd, enum race_end how, int cycles)
{
    SECTION("%s racing copies from 3 threads, %d times",
            END_BY_DESTROY == how ? "destroy" : "close of the owner's file", cycles);
    struct race r = {.fd = fd, .len = 256 << 10};
    pthread_t t[3];
    uint64_t c = 0;
    int owner = END_BY_CLOSE == how ? kl_open() : fd;
    long long live = kl_counter("regions_live");
    r.mem = malloc(r.len);
    kl_fill(r.mem, r.len, 7);
    CHECK_ERR(kl_create1(owner, r.mem, r.len, KNEMLIKE_PROT_READ, 0, &c), 0, "create");
    atomic_store(&r.cookie, c);
    for (int i = 0; i < 3; ++i)
        pthread_create(&t[i], NULL, race_copier, &r);
    for (int i = 0; i < cycles; ++i) {
        uint64_t old = atomic_load(&r.cookie);
        int old_owner = owner;
        if (END_BY_CLOSE == how)
            owner = kl_open();
        CHECK_ERR(kl_create1(owner, r.mem, r.len, KNEMLIKE_PROT_READ, 0, &c), 0,
                  "create under racing copies");
        atomic_store(&r.cookie, c);
        usleep(i % 4 ? 0 : 200); /* sometimes let a copy get going */
        if (END_BY_CLOSE == how)
            CHECK_ERR(close(old_owner) ? -errno : 0, 0, "close under racing copies");
        else
            CHECK_ERR(kl_destroy(fd, old), 0, "destroy under racing copies");
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 3; ++i)
        pthread_join(t[i], NULL);
    if (END_BY_CLOSE == how)
        close(owner);
    else
        kl_destroy(fd, atomic_load(&r.cookie));
    CHECK(0 == atomic_load(&r.bad), "racing copies failed or saw wrong data");
    /* Each region lives a whole cycle, long enough for copies to find it: none at all
     * means the lookup is broken, not that every copy lost its race. */
    CHECK(atomic_load(&r.wins) > 0, "none of %ld racing copies succeeded",
          (long) atomic_load(&r.copies));
    CHECK(kl_counter("regions_live") == live, "regions_live %lld, was %lld",
          kl_counter("regions_live"), live);
    printf("  %ld racing copies, %ld succeeded\n", (long) atomic_load(&r.copies),
           (long) atomic_load(&r.wins));
    free(r.mem);
}

/* Threads race for single-use regions: each must serve exactly one successful copy and
 * then be gone without a destroy. */
static void test_single_use_race(int fd, int n)
{
    SECTION("3 threads race for %d single-use regions: exactly one copy each", n);
    struct race r = {.fd = fd, .len = 16 << 10};
    pthread_t t[3];
    long long live = kl_counter("regions_live");
    r.mem = malloc(r.len);
    kl_fill(r.mem, r.len, 9);
    atomic_store(&r.cookie, 0);
    for (int i = 0; i < 3; ++i)
        pthread_create(&t[i], NULL, race_copier, &r);
    int made = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t c = 0;
        if (kl_create1(fd, r.mem, r.len, KNEMLIKE_PROT_READ, KNEMLIKE_FLAG_SINGLE_USE, &c)) {
            CHECK(0, "create single-use %d failed", i);
            break;
        }
        made++;
        atomic_store(&r.cookie, c);
        int spin = 0;
        while (atomic_load(&r.wins) < made && spin++ < 100000)
            usleep(10);
        if (atomic_load(&r.wins) < made) {
            CHECK(0, "no thread could copy single-use region %d", i);
            break; /* the lookup is broken: waiting on the rest would take hours */
        }
    }
    usleep(20000); /* room for a (wrong) second win on the last one */
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 3; ++i)
        pthread_join(t[i], NULL);
    CHECK(made > 0 && atomic_load(&r.wins) == made,
          "%ld successful copies of %d single-use regions", (long) atomic_load(&r.wins), made);
    CHECK(0 == atomic_load(&r.bad), "racing single-use copies failed or saw wrong data");
    CHECK(kl_counter("regions_live") == live, "used-up single-use regions still live: %lld, was %lld",
          kl_counter("regions_live"), live);
    printf("  %d single-use regions, %ld copies tried\n", made, (long) atomic_load(&r.copies));
    free(r.mem);
}

/* The owner closes its file, or is killed with SIGKILL, while a peer copies. Whether a
 * racing copy wins depends on timing, so the peer first copies the whole region and checks
 * it while the owner waits; only then does the owner go and the race start. Every racing
 * copy that succeeds is compared with the owner's data too. */
static void test_owner_dies_during_copies(int use_kill)
{
    SECTION("the owner %s while a peer's threads copy", use_kill ? "is killed (SIGKILL)" : "closes");
    int up[2], go[2];
    CHECK(0 == pipe(up) && 0 == pipe(go), "pipe");
    size_t len = 16 << 20;
    pid_t pid = fork();
    if (0 == pid) {
        int cfd = kl_open();
        uint8_t *mem = malloc(len);
        uint64_t c = 0;
        char token;
        kl_fill(mem, len, 8);
        if (kl_create1(cfd, mem, len, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0, &c))
            _exit(3);
        kl_xwrite(up[1], &c, sizeof(c));
        kl_xread(go[0], &token, 1); /* the peer has made its first copy */
        if (!use_kill) {
            usleep(300000);
            close(cfd); /* regions go with the file */
        }
        pause();
        _exit(0);
    }
    struct race r = {.fd = kl_open(), .len = len};
    uint64_t c = 0;
    pthread_t t[2];
    r.mem = malloc(len);
    kl_fill(r.mem, len, 8); /* what the owner put in its region */
    kl_xread(up[0], &c, sizeof(c));
    atomic_store(&r.cookie, c);

    uint8_t *first = malloc(len);
    memset(first, 0, len);
    CHECK_ERR(kl_copy1(r.fd, c, 0, first, len, KNEMLIKE_COPY_FROM_REGION), 0,
              "copy the whole region before the owner goes");
    CHECK(0 == memcmp(first, r.mem, len), "the first copy does not hold the owner's data");
    free(first);

    kl_xwrite(go[1], "g", 1);
    for (int i = 0; i < 2; ++i)
        pthread_create(&t[i], NULL, race_copier, &r);
    usleep(use_kill ? 200000 : 600000);
    if (use_kill)
        kill(pid, SIGKILL);
    usleep(300000);
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 2; ++i)
        pthread_join(t[i], NULL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_ERR(kl_copy1(r.fd, c, 0, &c, 1, KNEMLIKE_COPY_FROM_REGION), ENOENT,
              "copy once the owner is gone");
    CHECK(0 == atomic_load(&r.bad), "copies racing the owner's %s failed or saw wrong data",
          use_kill ? "SIGKILL" : "close");
    printf("  %ld racing copies, %ld succeeded\n", (long) atomic_load(&r.copies),
           (long) atomic_load(&r.wins));
    close(r.fd);
    close(up[0]);
    close(up[1]);
    close(go[0]);
    close(go[1]);
    free(r.mem);
}

/* The copier itself is killed in the middle of large copies. */
static void test_copier_killed(int fd)
{
    SECTION("the copier is killed (SIGKILL) in the middle of large copies");
    size_t len = 64 << 20;
    uint8_t *mem = malloc(len);
    uint64_t c = 0;
    memset(mem, 1, len);
    CHECK_ERR(kl_create1(fd, mem, len, KNEMLIKE_PROT_READ, 0, &c), 0, "create 64 MiB");
    pid_t pid = fork();
    if (0 == pid) {
        uint8_t *buf = malloc(len);
        for (;;)
            kl_copy1(fd, c, 0, buf, len, KNEMLIKE_COPY_FROM_REGION);
    }
    usleep(500000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_ERR(kl_copy1(fd, c, 0, mem, 4096, KNEMLIKE_COPY_FROM_REGION), 0,
              "the region still works after its copier was killed");
    kl_destroy(fd, c);
    free(mem);
}

static void test_cycles(int fd, int n)
{
    SECTION("thousands of create/destroy cycles, counters back where they were");
    char buf[256];
    long long live = kl_counter("regions_live"), created = kl_counter("regions_created");
    for (int i = 0; i < n; ++i) {
        uint64_t c = 0;
        if (kl_create1(fd, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, &c) || kl_destroy(fd, c)) {
            CHECK(0, "create/destroy cycle %d failed", i);
            break;
        }
    }
    /* Regions left open in a file go with the file. */
    int fd2 = kl_open();
    for (int i = 0; i < 100; ++i)
        kl_create1(fd2, buf, sizeof(buf), KNEMLIKE_PROT_READ, 0, NULL);
    CHECK(kl_counter("regions_live") == live + 100, "100 open regions not counted live");
    close(fd2);
    CHECK(kl_counter("regions_live") == live, "regions_live %lld after %d cycles, was %lld",
          kl_counter("regions_live"), n, live);
    CHECK(kl_counter("regions_created") == created + n + 100, "regions_created did not count");
}

int main(void)
{
    int fd = kl_open();
    long long live = kl_counter("regions_live");

    test_bad_addresses(fd);
    test_guard_gap(fd);
    test_sizes_and_counts(fd);
    test_bad_commands(fd);
    test_random_requests(fd, 200000);
    test_other_user(fd);
    test_end_races_copies(fd, END_BY_DESTROY, 2000);
    test_end_races_copies(fd, END_BY_CLOSE, 1000);
    test_single_use_race(fd, 1000);
    test_owner_dies_during_copies(0);
    test_owner_dies_during_copies(1);
    test_copier_killed(fd);
    test_cycles(fd, 10000);
    close(fd);
    CHECK(kl_counter("regions_live") == live, "regions_live %lld at the end, was %lld",
          kl_counter("regions_live"), live);
    return kl_verdict("kmod_hostile");
}
