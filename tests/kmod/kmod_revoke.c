/*
 * Revocation against a copier whose own memory stalls: the copier's local buffer is
 * served by userfaultfd, so the copy blocks on a fault of the copier's own making for as
 * long as the copier likes. DESTROY (or close of the owner's file) must return without
 * waiting for it, and once it has returned the copy must not read or write the region's
 * memory any more: after the fault is resolved, the copy fails, the owner's memory keeps
 * what the owner wrote after DESTROY, and the copier's buffer holds none of it.
 * The owner killed while a copier is stalled: its memory is freed before the stall ends.
 * And bounded work: any signal stops a copy, which says how far it got and resumes from
 * there, a copy of 2 GiB within 100 ms of one signal; one copy moves at most
 * KNEMLIKE_MAX_COPY_BYTES.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define PAGES 4

static long page;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An anonymous buffer of PAGES pages whose last page is missing and served by uffd. */
static void *stalling_buffer(int *uffd_out)
{
    int uffd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    uint8_t *buf = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_api api = {.api = UFFD_API};

    if (uffd < 0 || MAP_FAILED == buf || ioctl(uffd, UFFDIO_API, &api)) {
        perror("userfaultfd");
        exit(2);
    }
    memset(buf, 0x11, (PAGES - 1) * page); /* the first pages are present */
    struct uffdio_register reg = {
        .range = {.start = (uintptr_t) buf + (PAGES - 1) * page, .len = page},
        .mode = UFFDIO_REGISTER_MODE_MISSING,
    };
    if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
        perror("UFFDIO_REGISTER");
        exit(2);
    }
    *uffd_out = uffd;
    return buf;
}

/* Wait up to 'seconds' for the fault on the stalling page; 1 if it came. */
static int fault_arrived(int uffd, int seconds)
{
    struct pollfd p = {.fd = uffd, .events = POLLIN};
    struct uffd_msg msg;

    if (poll(&p, 1, seconds * 1000) <= 0) {
        return 0;
    }
    return read(uffd, &msg, sizeof(msg)) == sizeof(msg) && UFFD_EVENT_PAGEFAULT == msg.event;
}

/* Fill the stalling page with 'value'; the copier then goes on. */
static void resolve(int uffd, void *buf, int value)
{
    void *src = aligned_alloc(page, page);
    memset(src, value, page);
    struct uffdio_copy cp = {.dst = (uintptr_t) buf + (PAGES - 1) * page,
                             .src = (uintptr_t) src, .len = page};
    if (ioctl(uffd, UFFDIO_COPY, &cp)) {
        perror("UFFDIO_COPY");
        exit(2);
    }
    free(src);
}

enum revoke_by { BY_DESTROY, BY_CLOSE };

static void one_case(uint32_t dir, enum revoke_by by)
{
    const char *what = KNEMLIKE_COPY_FROM_REGION == dir ? "copy from the region" : "copy to the region";
    const char *how = BY_DESTROY == by ? "DESTROY" : "close of the owner's file";
    int ofd = kl_open(), cfd = kl_open(), uffd;
    uint8_t *own = aligned_alloc(page, PAGES * page), *local = stalling_buffer(&uffd);
    uint64_t cookie = 0;
    pthread_t t;

    SECTION("%s stalled by the copier's own page fault, revoked by %s", what, how);
    memset(own, 0xAA, PAGES * page);
    CHECK_ERR(kl_create1(ofd, own, PAGES * page, KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE, 0,
                         &cookie), 0, "create");
    struct kl_copier c = {.fd = cfd, .cookie = cookie, .local = local, .len = PAGES * page,
                          .dir = dir, .rc = 1};
    pthread_create(&t, NULL, kl_copier_run, &c);
    int stalled = fault_arrived(uffd, 10);
    if (!stalled) { /* the copy failed at the fault instead of waiting: also safe */
        pthread_join(t, NULL);
        CHECK(c.rc < 0, "%s: no fault and no failure (%d)", what, c.rc);
        printf("  ok: the copy did not wait on the copier's fault (%s)\n", strerror(-c.rc));
    } else {
        double t0 = now();
        if (BY_DESTROY == by) {
            CHECK_ERR(kl_destroy(ofd, cookie), 0, "DESTROY while a copier is stalled");
        } else {
            CHECK(0 == close(ofd), "close");
            ofd = -1;
        }
        double waited = now() - t0;
        CHECK(waited < 1.0, "%s waited %.2f s for a copier stalled on its own memory", how,
              waited);
        if (waited < 1.0) {
            printf("  ok: %s returns while the copier is stalled (%.3f s)\n", how, waited);
        }
        /* The owner's memory is the owner's again: it writes it, and the copier goes on. */
        memset(own, 0xBB, PAGES * page);
        resolve(uffd, local, 0xCC);
        pthread_join(t, NULL);
        CHECK(c.rc < 0, "%s finished with %d after %s", what, c.rc, how);
        if (c.rc < 0) {
            printf("  ok: the stalled copy fails once it goes on (%s)\n", strerror(-c.rc));
        }
    }
    /* Nothing crossed after the revocation, either way. */
    size_t bad = 0;
    for (size_t i = 0; i < PAGES * (size_t) page; ++i) {
        if (KNEMLIKE_COPY_FROM_REGION == dir) {
            bad += 0xBB == local[i]; /* written by the owner after it revoked */
        } else {
            bad += 0xBB != own[i]; /* overwritten by the copier after the revocation */
        }
    }
    CHECK(0 == bad, "%s: %zu bytes crossed after %s returned", what, bad, how);
    if (0 == bad) {
        printf("  ok: no byte crossed after %s returned\n", how);
    }
    if (ofd >= 0) {
        close(ofd);
    }
    close(cfd);
    close(uffd);
    munmap(local, PAGES * page);
    free(own);
}

static void on_signal(int sig)
{
    (void) sig;
}

/* Any signal stops a copy (not only SIGKILL) with the count of what moved, and the
 * caller resumes from there. */
static void test_signal(void)
{
    const size_t len = (size_t) 256 << 20;
    int fd = kl_open();
    uint8_t *own = malloc(len), *local = malloc(len);
    uint64_t cookie = 0;
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART */

    SECTION("a copy of 256 MiB interrupted by a signal (SIGUSR1, caught), then resumed");
    sigaction(SIGUSR1, &sa, NULL);
    for (size_t i = 0; i < len; i += 4096) {
        kl_fill(own + i, 4096, (unsigned) (i >> 12));
    }
    memset(local, 0x5A, len);
    CHECK_ERR(kl_create1(fd, own, len, KNEMLIKE_PROT_READ, 0, &cookie), 0, "create 256 MiB");
    struct kl_copier c = {.fd = fd, .cookie = cookie, .local = local, .len = len,
                          .dir = KNEMLIKE_COPY_FROM_REGION};
    pthread_t t;
    pthread_create(&t, NULL, kl_copier_run, &c);
    usleep(20000);
    while (!c.done) {
        pthread_kill(t, SIGUSR1);
        usleep(2000);
    }
    pthread_join(t, NULL);
    CHECK(-EINTR == c.rc && c.bytes > 0 && c.bytes < len,
          "interrupted copy: rc %d, %llu of %zu bytes (want EINTR and part of it)", c.rc,
          (unsigned long long) c.bytes, len);
    if (-EINTR == c.rc) {
        printf("  ok: EINTR after %llu of %zu bytes\n", (unsigned long long) c.bytes, len);
    }
    /* what moved is the start, in order; nothing beyond it */
    size_t moved = c.bytes <= len ? c.bytes : len;
    CHECK(0 == memcmp(local, own, moved), "the bytes reported moved differ from the region's");
    size_t beyond = 0;
    for (size_t i = moved; i < len; ++i) {
        beyond += 0x5A != local[i];
    }
    CHECK(0 == beyond, "%zu bytes written beyond the count reported", beyond);
    /* resume */
    struct knemlike_segment rest = {(uintptr_t) local + moved, len - moved};
    uint64_t bytes = 0;
    CHECK_ERR(kl_copy(fd, cookie, moved, &rest, 1, KNEMLIKE_COPY_FROM_REGION, &bytes), 0,
              "the copy resumed from the count");
    CHECK(bytes == len - moved && 0 == memcmp(local, own, len),
          "resumed copy: %llu bytes, data %s", (unsigned long long) bytes,
          memcmp(local, own, len) ? "wrong" : "right");
    kl_destroy(fd, cookie);
    close(fd);
    free(own);
    free(local);
    signal(SIGUSR1, SIG_DFL);
}

/* Gigabytes on both sides from two buffers of 4 MiB: a region of nr times the same piece
 * of own, and a local vector of nr times local. */
struct repeated {
    int fd;
    size_t piece, nr;
    uint8_t *own, *local;
    struct knemlike_segment *rsegs, *lsegs;
    uint64_t cookie;
};

static void repeated_open(struct repeated *r, size_t nr)
{
    r->fd = kl_open();
    r->piece = (size_t) 4 << 20;
    r->nr = nr;
    r->own = malloc(r->piece);
    r->local = malloc(r->piece);
    r->rsegs = calloc(nr, sizeof(*r->rsegs));
    r->lsegs = calloc(nr, sizeof(*r->lsegs));
    r->cookie = 0;
    kl_fill(r->own, r->piece, 3);
    for (size_t i = 0; i < nr; ++i) {
        r->rsegs[i] = (struct knemlike_segment){(uintptr_t) r->own, r->piece};
        r->lsegs[i] = (struct knemlike_segment){(uintptr_t) r->local, r->piece};
    }
    CHECK_ERR(kl_create(r->fd, r->rsegs, (uint32_t) nr, KNEMLIKE_PROT_READ, 0, &r->cookie), 0,
              "create a region of gigabytes over one buffer");
}

static void repeated_close(struct repeated *r)
{
    kl_destroy(r->fd, r->cookie);
    close(r->fd);
    free(r->rsegs);
    free(r->lsegs);
    free(r->own);
    free(r->local);
}

/* Shmem in /proc/meminfo, in KiB: what tmpfs and memfd pages take. */
static long shmem_kb(void)
{
    char line[128];
    long kb = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "Shmem: %ld kB", &kb)) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb;
}

/* The owner is killed while a copier is stalled on its own fault: the owner's memory
 * (64 MiB of a memfd only its mapping keeps) is freed before the stall ends, since a
 * copy holds the owner's address space only within a step. */
static void test_owner_killed(void)
{
    const size_t len = (size_t) 64 << 20;
    int up[2], uffd, cfd = kl_open();
    uint8_t *local = stalling_buffer(&uffd);
    uint64_t cookie = 0;
    pthread_t t;

    SECTION("the owner is killed while a copier is stalled on its own fault");
    CHECK(0 == pipe(up), "pipe");
    long before = shmem_kb();
    pid_t owner = fork();
    if (0 == owner) {
        int ofd = kl_open(), mfd = (int) syscall(SYS_memfd_create, "kmod_revoke", 0);
        uint8_t *mem = MAP_FAILED;
        if (mfd >= 0 && 0 == ftruncate(mfd, (off_t) len)) {
            mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        }
        if (MAP_FAILED == mem) {
            _exit(2);
        }
        close(mfd); /* only the mapping keeps its pages now */
        memset(mem, 0x77, len);
        if (kl_create1(ofd, mem, len, KNEMLIKE_PROT_READ, 0, &cookie)) {
            _exit(3);
        }
        kl_xwrite(up[1], &cookie, sizeof(cookie));
        pause();
        _exit(0);
    }
    kl_xread(up[0], &cookie, sizeof(cookie));
    long with_owner = shmem_kb();
    CHECK(with_owner - before >= 60 << 10, "the owner's 64 MiB do not show in Shmem (%ld kB)",
          with_owner - before);
    struct kl_copier c = {.fd = cfd, .cookie = cookie, .local = local, .len = PAGES * page,
                          .dir = KNEMLIKE_COPY_FROM_REGION, .rc = 1};
    pthread_create(&t, NULL, kl_copier_run, &c);
    int stalled = fault_arrived(uffd, 10);
    CHECK(stalled, "the copy did not stall on the copier's page");
    kill(owner, SIGKILL);
    waitpid(owner, NULL, 0);
    long after = shmem_kb();
    for (int i = 0; i < 200 && after - before >= 16 << 10; i++) {
        usleep(10000);
        after = shmem_kb();
    }
    CHECK(!c.done, "the copy ended before its fault was served");
    CHECK(after - before < 16 << 10,
          "the killed owner's memory is still allocated while the copier is stalled "
          "(%ld kB above before)", after - before);
    if (after - before < 16 << 10) {
        printf("  ok: the killed owner's 64 MiB were freed while the copier was stalled\n");
    }
    if (stalled) {
        resolve(uffd, local, 0xCC);
    }
    pthread_join(t, NULL);
    CHECK(c.rc < 0, "the stalled copy finished with %d after its owner died", c.rc);
    close(cfd);
    close(uffd);
    close(up[0]), close(up[1]);
    munmap(local, PAGES * page);
}

/* A copy of a whole request (vectors on both sides) in a thread of its own. */
struct vector_copier {
    int fd;
    struct knemlike_copy *req;
    int rc;
    volatile int done;
};

static void *vector_copier_run(void *arg)
{
    struct vector_copier *v = arg;
    v->rc = kl_ioctl(v->fd, KNEMLIKE_IOC_COPY, v->req);
    v->done = 1;
    return NULL;
}

/* A single caught signal stops a copy of gigabytes within 100 ms: a copy checks for
 * signals between steps of at most 128 pages. */
static void test_signal_latency(void)
{
    struct repeated r;
    struct sigaction sa = {.sa_handler = on_signal};
    pthread_t t;

    SECTION("one signal stops a copy of 2048 MiB within 100 ms");
    sigaction(SIGUSR1, &sa, NULL);
    repeated_open(&r, 512);
    struct knemlike_copy req = {.cookie = r.cookie, .local_segments = (uintptr_t) r.lsegs,
                                .nr_local_segments = (uint32_t) r.nr,
                                .direction = KNEMLIKE_COPY_FROM_REGION};
    struct vector_copier a = {.fd = r.fd, .req = &req};
    pthread_create(&t, NULL, vector_copier_run, &a);
    usleep(10000);
    double t0 = now(), t1;
    pthread_kill(t, SIGUSR1);
    while (!a.done && now() - t0 < 30) {
        usleep(100);
    }
    t1 = now();
    pthread_join(t, NULL);
    CHECK(-EINTR == a.rc, "the copy ended with %d, not EINTR", a.rc);
    CHECK(t1 - t0 < 0.1, "the copy took %.3f s to stop after the signal", t1 - t0);
    if (-EINTR == a.rc && t1 - t0 < 0.1) {
        printf("  ok: EINTR %.1f ms after the signal, %llu bytes moved\n", (t1 - t0) * 1e3,
               (unsigned long long) req.bytes);
    }
    repeated_close(&r);
    signal(SIGUSR1, SIG_DFL);
}

/* One copy moves at most KNEMLIKE_MAX_COPY_BYTES, as read() does, and says so. The 2.5
 * GiB on each side are 640 segments over one 4 MiB buffer. */
static void test_copy_cap(void)
{
    struct repeated r;
    uint64_t bytes = 0;

    SECTION("a copy of 2560 MiB moves KNEMLIKE_MAX_COPY_BYTES and reports it");
    repeated_open(&r, 640);
    CHECK_ERR(kl_copy(r.fd, r.cookie, 0, r.lsegs, (uint32_t) r.nr, KNEMLIKE_COPY_FROM_REGION,
                      &bytes), 0, "a copy of 2.5 GiB");
    CHECK(KNEMLIKE_MAX_COPY_BYTES == bytes, "copied %llu bytes, want %llu",
          (unsigned long long) bytes, (unsigned long long) KNEMLIKE_MAX_COPY_BYTES);
    if (KNEMLIKE_MAX_COPY_BYTES == bytes) {
        printf("  ok: short copy of %llu bytes\n", (unsigned long long) bytes);
    }
    CHECK(0 == memcmp(r.local, r.own, r.piece), "data of the capped copy");
    repeated_close(&r);
}

int main(void)
{
    page = sysconf(_SC_PAGESIZE);
    test_signal();
    test_signal_latency();
    test_copy_cap();
    test_owner_killed();
    one_case(KNEMLIKE_COPY_FROM_REGION, BY_DESTROY);
    one_case(KNEMLIKE_COPY_TO_REGION, BY_DESTROY);
    one_case(KNEMLIKE_COPY_FROM_REGION, BY_CLOSE);
    one_case(KNEMLIKE_COPY_TO_REGION, BY_CLOSE);
    CHECK(0 == kl_counter("regions_live"), "regions left: %lld", kl_counter("regions_live"));
    printf("kmod_revoke: %s\n", kl_failures ? "FAIL" : "PASS");
    return kl_failures ? 1 : 0;
}
