/*
 * Attachments and regions against the owner's address space changing under them:
 * - holes: touching an attachment where the owner has no memory, while threads of the
 *   same process, or of two processes that attach each other's regions, mmap and munmap,
 *   ends (SIGBUS there) and never stalls; and it costs the owner no take nor drop of the
 *   whole region, however often it is touched; memory mapped into the hole later is what
 *   the attachment then reads;
 * - fork: madvise(MADV_DOFORK) is refused on an attachment, and a child has none;
 * - exited owners: regions created by processes that exited or exec'd keep no address
 *   space allocated (mm_struct objects come back), their copies get ESRCH, attaching them
 *   ESRCH, DESTROY still works;
 * - grants: a thread that mmaps the device's window while another thread of the process
 *   attaches never makes that ATTACH fail, and never gets the mapping.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define PAGE 4096
#define HOLD KNEMLIKE_FLAG_HOLD_PAGES
#define RD KNEMLIKE_PROT_READ
#define RW (KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- holes ---- */

#define HLEN (4 << 20)       /* the owner's buffer and region */
#define HOLE_AT (1 << 20)    /* a hole of HOLE_LEN here */
#define HOLE_LEN (64 << 10)
#define STORM_SECONDS 2.0

struct storm {
    const uint8_t *att;    /* an attachment of a region whose owner has the hole */
    volatile int stop;
    long holes_sigbus, holes_other, good_reads, good_wrong;
    long maps;
};

/* mmap and munmap memory elsewhere, as free() of a large buffer would: each takes the
 * process's mmap lock for writing. */
static void *mapper(void *arg)
{
    struct storm *s = arg;
    while (!s->stop) {
        uint8_t *p = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (MAP_FAILED != p) {
            p[0] = 1;
            munmap(p, 256 << 10);
            s->maps++;
        }
    }
    return NULL;
}

/* Touch the hole (SIGBUS expected) and a page that is there (its byte expected). */
static void *toucher(void *arg)
{
    struct storm *s = arg;
    uint8_t expect[PAGE], b;
    kl_fill(expect, PAGE, 9);   /* the owner's first page, filled from seed 9 */
    kl_catch_faults();
    for (unsigned i = 0; !s->stop; i++) {
        int sig = kl_touch(s->att + HOLE_AT + (i % (HOLE_LEN / PAGE)) * PAGE, NULL);
        __atomic_add_fetch(SIGBUS == sig ? &s->holes_sigbus : &s->holes_other, 1,
                           __ATOMIC_RELAXED);
        sig = kl_touch(s->att + (i % PAGE), &b);
        __atomic_add_fetch(sig || b != expect[i % PAGE] ? &s->good_wrong : &s->good_reads,
                           1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Run two touchers and a mapper for STORM_SECONDS; 0 if every touch was as expected. */
static int storm_run(const uint8_t *att, const char *who)
{
    struct storm s = {.att = att};
    pthread_t t[3];
    pthread_create(&t[0], NULL, mapper, &s);
    pthread_create(&t[1], NULL, toucher, &s);
    pthread_create(&t[2], NULL, toucher, &s);
    double end = now_s() + STORM_SECONDS;
    while (now_s() < end) {
        usleep(10000);
    }
    s.stop = 1;
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
    }
    printf("  %s: %ld hole touches (SIGBUS), %ld other, %ld good reads, %ld wrong, "
           "%ld mmap+munmap\n", who, s.holes_sigbus, s.holes_other, s.good_reads,
           s.good_wrong, s.maps);
    return !(s.holes_sigbus > 0 && 0 == s.holes_other && s.good_reads > 0 &&
             0 == s.good_wrong && s.maps > 0);
}

/* A held region of the caller's over a buffer filled from seed 9, with a hole. */
static uint64_t holed_region(int fd, uint8_t **buf)
{
    uint64_t cookie = 0;
    *buf = kl_map_filled(NULL, HLEN, 9);
    if (kl_create1(fd, *buf, HLEN, RW, HOLD, &cookie)) {
        _exit(10);
    }
    munmap(*buf + HOLE_AT, HOLE_LEN);
    return cookie;
}

/* Wait for a child for up to secs; then SIGKILL it and wait 5 s more. Its exit status,
 * or -1 if it never ended (it is stuck in the kernel). */
static int wait_bounded(pid_t pid, double secs, const char *what)
{
    int st;
    double end = now_s() + secs;
    while (now_s() < end) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(20000);
    }
    printf("  %s: still running after %.0f s: SIGKILL\n", what, secs);
    kill(pid, SIGKILL);
    end = now_s() + 5;
    while (now_s() < end) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return 128 + SIGKILL;
        }
        usleep(20000);
    }
    return -1;
}

static void holes_one_process(void)
{
    SECTION("a process touches holes of its own region's attachment while it maps and unmaps");
    pid_t pid = fork();
    if (0 == pid) {
        int fd = kl_open();
        uint8_t *buf;
        struct knemlike_attach a;
        uint64_t cookie = holed_region(fd, &buf);
        if (kl_attach(fd, cookie, RD, 0, &a)) {
            _exit(11);
        }
        _exit(storm_run((const uint8_t *) (uintptr_t) a.addr, "one process"));
    }
    int rc = wait_bounded(pid, 10 + STORM_SECONDS, "one process");
    CHECK(0 == rc, "one process: %s (status %d)",
          rc < 0 ? "DEADLOCK: it did not end within 5 s of SIGKILL" : "ended badly", rc);
    if (0 == rc) {
        printf("  ok: it ends, SIGBUS at the hole, the owner's bytes elsewhere\n");
    }
}

static void holes_two_processes(void)
{
    SECTION("two processes attach each other's regions and touch their holes while both "
            "map and unmap");
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) {
        perror("pipe");
        exit(2);
    }
    pid_t pid[2];
    for (int me = 0; me < 2; me++) {
        pid[me] = fork();
        if (0 == pid[me]) {
            int out = me ? ba[1] : ab[1], in = me ? ab[0] : ba[0];
            int fd = kl_open();
            uint8_t *buf;
            uint64_t mine = holed_region(fd, &buf), theirs;
            struct knemlike_attach a;
            kl_xwrite(out, &mine, sizeof(mine));
            kl_xread(in, &theirs, sizeof(theirs));
            if (kl_attach(fd, theirs, RD, 0, &a)) {
                _exit(11);
            }
            int rc = storm_run((const uint8_t *) (uintptr_t) a.addr, me ? "B" : "A");
            /* Neither unmaps its buffer (and so revokes) before the other is done. */
            kl_xwrite(out, &rc, sizeof(rc));
            kl_xread(in, &rc, sizeof(rc));
            _exit(rc);
        }
    }
    for (int me = 0; me < 2; me++) {
        int rc = wait_bounded(pid[me], 10 + STORM_SECONDS, me ? "B" : "A");
        CHECK(0 == rc, "process %c: %s (status %d)", 'A' + me,
              rc < 0 ? "DEADLOCK: it did not end within 5 s of SIGKILL" : "ended badly", rc);
    }
    for (int i = 0; i < 2; i++) {
        close(ab[i]);
        close(ba[i]);
    }
}

/* Touching a hole again and again makes the owner take or drop nothing whole: the work
 * of a touch is bounded by its fault window. Memory mapped into the hole later is read. */
static void holes_cost(int fd)
{
    SECTION("what touching a hole costs the owner");
    kl_catch_faults();
    uint8_t *buf, b;
    struct knemlike_attach a;
    uint64_t cookie = holed_region(fd, &buf);
    CHECK(0 == kl_attach(fd, cookie, RD, 0, &a), "attach");
    const uint8_t *att = (const uint8_t *) (uintptr_t) a.addr;
    CHECK(SIGBUS == kl_touch(att + HOLE_AT, NULL), "the hole's first touch: SIGBUS");
    CHECK(0 == kl_touch(att + HLEN - 1, &b) && b == buf[HLEN - 1], "a page after the hole");
    long long takes = kl_counter("held_takes"), drops = kl_counter("held_drops");
    int sigbus = 0;
    for (int i = 0; i < 500; i++) {
        sigbus += SIGBUS == kl_touch(att + HOLE_AT + (i % (HOLE_LEN / PAGE)) * PAGE, NULL);
    }
    long long dt = kl_counter("held_takes") - takes, dd = kl_counter("held_drops") - drops;
    CHECK(500 == sigbus, "500 touches of the hole: %d got SIGBUS", sigbus);
    CHECK(0 == dt && 0 == dd, "500 touches of the hole made the owner take its region %lld "
          "times and drop it %lld times (expected 0 and 0)", dt, dd);
    if (0 == dt && 0 == dd) {
        printf("  ok: 500 touches of a hole: SIGBUS each, no take nor drop of the region\n");
    }
    /* New memory in the hole calls no notifier: the next touch finds it. */
    kl_map_filled(buf + HOLE_AT, HOLE_LEN, 77);
    uint8_t expect[HOLE_LEN];
    kl_fill(expect, HOLE_LEN, 77);
    int wrong = 0;
    for (size_t off = 0; off < HOLE_LEN; off += 1000) {
        wrong += kl_touch(att + HOLE_AT + off, &b) || b != expect[off];
    }
    CHECK(0 == wrong, "memory mapped into the hole: %d of its reads wrong", wrong);
    dt = kl_counter("held_takes") - takes;
    dd = kl_counter("held_drops") - drops;
    CHECK(0 == dt && 0 == dd, "filling the hole took the region %lld times, dropped it %lld",
          dt, dd);
    if (!wrong && !dt && !dd) {
        printf("  ok: memory mapped into the hole is read through the attachment, the "
               "region not taken again\n");
    }
    munmap((void *) (uintptr_t) a.map_addr, a.map_len);
    CHECK(0 == kl_destroy(fd, cookie), "destroy");
    munmap(buf, HLEN);
}

/* ---- fork ---- */

static void no_fork(int fd)
{
    SECTION("an attachment never crosses fork");
    uint8_t *buf = kl_map_filled(NULL, 64 << 10, 5);
    uint64_t cookie;
    struct knemlike_attach a;
    CHECK(0 == kl_create1(fd, buf, 64 << 10, RD, HOLD, &cookie), "create");
    CHECK(0 == kl_attach(fd, cookie, RD, 0, &a), "attach");
    int rc = madvise((void *) (uintptr_t) a.map_addr, a.map_len, MADV_DOFORK);
    CHECK(rc && EINVAL == errno, "madvise(MADV_DOFORK) on an attachment: %d (%s), "
          "expected EINVAL", rc, rc ? strerror(errno) : "accepted");
    if (rc && EINVAL == errno) {
        printf("  ok: madvise(MADV_DOFORK) on an attachment -> EINVAL\n");
    }
    pid_t pid = fork();
    if (0 == pid) {
        kl_catch_faults();
        uint8_t b;
        int sig = kl_touch((const uint8_t *) (uintptr_t) a.addr, &b);
        _exit(SIGSEGV == sig ? 0 : sig ? 1 : 2);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "the child's touch of the attachment's "
          "address: %s", WIFEXITED(st) && 2 == WEXITSTATUS(st) ? "it READ the owner's memory"
                                                              : "not SIGSEGV");
    if (WIFEXITED(st) && 0 == WEXITSTATUS(st)) {
        printf("  ok: the child has nothing mapped there (SIGSEGV)\n");
    }
    munmap((void *) (uintptr_t) a.map_addr, a.map_len);
    CHECK(0 == kl_destroy(fd, cookie), "destroy");
    munmap(buf, 64 << 10);
}

/* ---- exited owners ---- */

/* mm_struct objects allocated now (/proc/slabinfo, root only), or -1; and their size. */
static long mm_structs(long *objsize)
{
    FILE *f = fopen("/proc/slabinfo", "r");
    char line[512];
    long n = -1;
    while (f && fgets(line, sizeof(line), f)) {
        char name[64];
        long active, all, size;
        if (4 == sscanf(line, "%63s %ld %ld %ld", name, &active, &all, &size) &&
            0 == strcmp(name, "mm_struct")) {
            n = active;
            if (objsize) {
                *objsize = size;
            }
        }
    }
    if (f) {
        fclose(f);
    }
    return n;
}

#define CHILDREN 200

static void exited_owners(void)
{
    SECTION("regions of %d processes that exited, and of one that exec'd", CHILDREN);
    int fd = kl_open();   /* shared with the children: it outlives them */
    long long owners0 = kl_counter("owners_live"), orphans0 = kl_counter("regions_orphaned");
    long mm0 = mm_structs(NULL);
    CHECK(mm0 > 0, "cannot read mm_struct from /proc/slabinfo");
    uint64_t held[CHILDREN], plain[CHILDREN];
    int p[2];
    if (pipe(p)) {
        exit(2);
    }
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = fork();
        if (0 == pid) {
            uint8_t *buf = kl_map_filled(NULL, 64 << 10, i);
            uint64_t c[2] = {0, 0};
            int rc = kl_create1(fd, buf, 64 << 10, RW, HOLD, &c[0]) |
                     kl_create1(fd, buf, 64 << 10, RD, 0, &c[1]);
            kl_xwrite(p[1], c, sizeof(c));
            _exit(rc ? 1 : 0);
        }
        uint64_t c[2];
        kl_xread(p[0], c, sizeof(c));
        held[i] = c[0];
        plain[i] = c[1];
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "child %d could not create its regions",
              i);
    }
    /* The owners' ends are handled by a work item: wait for it. */
    double end = now_s() + 5;
    while (kl_counter("owners_live") > owners0 && now_s() < end) {
        usleep(20000);
    }
    long objsize = 0, mm1 = mm_structs(&objsize);
    long long orphans = kl_counter("regions_orphaned") - orphans0;
    printf("  mm_struct objects (%ld B each, and a page-table root): %ld before, %ld after "
           "%d processes exited with 2 regions each still named; %lld regions orphaned\n",
           objsize, mm0, mm1, CHILDREN, orphans);
    CHECK(mm1 - mm0 < CHILDREN / 4, "the regions of exited processes keep %ld address "
          "spaces allocated", mm1 - mm0);
    CHECK(2 * CHILDREN == orphans, "regions_orphaned went up by %lld, expected %d", orphans,
          2 * CHILDREN);
    CHECK(owners0 == kl_counter("owners_live"), "owners_live %lld, expected %lld",
          kl_counter("owners_live"), owners0);
    uint8_t local[64 << 10];
    struct knemlike_attach a;
    int esrch = 0;
    for (int i = 0; i < CHILDREN; i++) {
        esrch += -ESRCH == kl_copy1(fd, held[i], 0, local, sizeof(local),
                                    KNEMLIKE_COPY_FROM_REGION);
        esrch += -ESRCH == kl_copy1(fd, plain[i], 0, local, sizeof(local),
                                    KNEMLIKE_COPY_FROM_REGION);
    }
    CHECK(2 * CHILDREN == esrch, "copies from exited owners' regions: %d of %d ESRCH", esrch,
          2 * CHILDREN);
    CHECK_ERR(kl_attach(fd, held[0], RD, 0, &a), ESRCH, "attach an exited owner's region");
    CHECK_ERR(kl_destroy(fd, held[0]), 0, "destroy an exited owner's region");
    CHECK_ERR(kl_copy1(fd, held[0], 0, local, 1, KNEMLIKE_COPY_FROM_REGION), ENOENT,
              "copy from it after destroy");
    if (mm1 - mm0 < CHILDREN / 4 && 2 * CHILDREN == esrch) {
        printf("  ok: their address spaces are freed; copies get ESRCH\n");
    }

    /* exec: the process lives on, its old address space does not. */
    pid_t pid = fork();
    if (0 == pid) {
        uint8_t *buf = kl_map_filled(NULL, 64 << 10, 3);
        uint64_t c = 0;
        kl_create1(fd, buf, 64 << 10, RD, HOLD, &c);
        kl_xwrite(p[1], &c, sizeof(c));
        execl("/bin/sleep", "sleep", "3", (char *) NULL);
        _exit(3);
    }
    uint64_t c;
    kl_xread(p[0], &c, sizeof(c));
    int rc = 0;
    end = now_s() + 2;
    while ((rc = kl_copy1(fd, c, 0, local, 4096, KNEMLIKE_COPY_FROM_REGION)) != -ESRCH &&
           now_s() < end) {
        usleep(10000);
    }
    CHECK(-ESRCH == rc, "a copy from a region whose owner exec'd: %d, expected ESRCH", rc);
    CHECK(0 == kill(pid, 0), "the owner that exec'd should still be running");
    if (-ESRCH == rc) {
        printf("  ok: the region of a process that exec'd: copies get ESRCH, the process "
               "runs on\n");
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    close(p[1]);
    close(fd);
}

/* ---- grants ---- */

struct guesser {
    int fd;
    off_t window;
    size_t len;
    volatile int stop;
    long mapped, eacces, other;
};

static void *guess(void *arg)
{
    struct guesser *g = arg;
    while (!g->stop) {
        void *p = mmap(NULL, g->len, PROT_READ, MAP_SHARED, g->fd, g->window);
        if (MAP_FAILED != p) {
            g->mapped++;
            munmap(p, g->len);
        } else if (EACCES == errno) {
            g->eacces++;
        } else {
            g->other++;
        }
    }
    return NULL;
}

static void grants(int fd)
{
    SECTION("ATTACH while another thread mmaps the device's window");
    uint8_t *buf = kl_map_filled(NULL, 64 << 10, 8);
    uint64_t cookie;
    CHECK(0 == kl_create1(fd, buf, 64 << 10, RD, HOLD, &cookie), "create");
    /* The window a region is mapped at: its index (the cookie's low 24 bits) << 39. */
    struct guesser g = {.fd = fd, .window = (off_t) ((cookie & 0xffffff) << 39),
                        .len = 64 << 10};
    pthread_t t;
    pthread_create(&t, NULL, guess, &g);
    int failed = 0, first = 0, n;
    for (n = 0; n < 4000; n++) {
        struct knemlike_attach a;
        int rc = kl_attach(fd, cookie, RD, 0, &a);
        if (rc) {
            failed++;
            first = first ? first : rc;
        } else {
            CHECK(a.map_len == g.len, "map_len %llu", (unsigned long long) a.map_len);
            munmap((void *) (uintptr_t) a.map_addr, a.map_len);
        }
    }
    g.stop = 1;
    pthread_join(t, NULL);
    printf("  %d ATTACH, %d failed; the other thread's mmap: %ld mapped, %ld EACCES, "
           "%ld other\n", n, failed, g.mapped, g.eacces, g.other);
    CHECK(0 == failed, "%d of %d ATTACH failed, the first with %d (%s)", failed, n, first,
          strerror(-first));
    CHECK(0 == g.mapped && 0 == g.other && g.eacces > 0, "the other thread's mmap of the "
          "window: %ld mapped, %ld other errors (only EACCES expected)", g.mapped, g.other);
    if (0 == failed && 0 == g.mapped && 0 == g.other) {
        printf("  ok: every ATTACH succeeds; the guessed window's mmap gets EACCES\n");
    }
    CHECK(0 == kl_destroy(fd, cookie), "destroy");
    munmap(buf, 64 << 10);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = kl_open();
    holes_cost(fd);
    no_fork(fd);
    grants(fd);
    exited_owners();
    holes_one_process();
    holes_two_processes();
    close(fd);
    if (kl_failures) {
        printf("%d check(s) failed\n", kl_failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
