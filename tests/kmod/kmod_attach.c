/*
 * Attachments (KNEMLIKE_IOC_ATTACH): a peer maps the owner's region and reads it, or
 * writes it where the region allows, with plain loads and stores.
 * - refusals: a region without HOLD_PAGES or of two segments, bad prot or flags, an
 *   unknown cookie, WRITE on a read-only region, another uid without ANY_USER, mmap of
 *   the device without a grant;
 * - a read-only attachment faults SIGSEGV on a store and cannot be made writable or
 *   executable; a writable one writes the owner's memory, and reads on but gets SIGBUS
 *   on a store once the owner made its memory read-only; fork does not pass it on;
 * - the attachment follows the owner: its stores in place, MADV_DONTNEED, MAP_FIXED,
 *   mremap away and a new mapping there, mprotect PROT_NONE and back, fork; when the
 *   owner unmaps part of the region the rest reads on (SIGBUS there, a copy over it
 *   ESTALE) until memory is mapped there again;
 * - DESTROY, close and the owner's exit revoke every attachment (SIGBUS), a peer reading
 *   in a loop never sees what the owner writes after DESTROY returned, and a second
 *   peer's attachment goes too; the counters say how many attachments live.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>

#define LEN (1 << 20)
#define PAGE 4096
#define HOLD KNEMLIKE_FLAG_HOLD_PAGES
#define RD KNEMLIKE_PROT_READ
#define RW (KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE)
#define HEAD 100            /* the region starts this far into the owner's buffer */
#define RLEN (LEN - 333)    /* and is this long: neither end on a page boundary */

/* ---- the peer: a process of its own that attaches and touches on command ---- */

enum { CMD_ATTACH, CMD_READ, CMD_READ_PART, CMD_WRITE, CMD_PROTECT, CMD_SPIN, CMD_FORK_TOUCH,
       CMD_UNMAP, CMD_EXIT };

struct cmd {
    int op;
    uint64_t cookie;
    uint32_t prot;
    unsigned seed;
    size_t off, len; /* CMD_READ_PART: these bytes of the region, to shared + off */
};

struct reply {
    int rc;     /* ioctl or mprotect result (-errno), or the signal a touch got (0: none) */
    long long extra;
};

struct peer {
    pid_t pid;
    int to, from;
};

static uint8_t *shared;             /* MAP_SHARED: what a peer read, for the owner to check */
static volatile uint32_t *spin_seen; /* MAP_SHARED: the last word a spinning peer read */
static sigjmp_buf touch_env;
static volatile sig_atomic_t touch_sig;

static void on_fault(int sig)
{
    touch_sig = sig;
    siglongjmp(touch_env, 1);
}

static void peer_main(int in, int out, uid_t uid)
{
    struct knemlike_attach a = {0};
    struct sigaction sa = {.sa_handler = on_fault};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    if (uid && setresuid(uid, uid, uid)) {
        _exit(3);
    }
    int fd = kl_open();
    for (;;) {
        struct cmd c;
        struct reply r = {0};
        if (read(in, &c, sizeof(c)) != sizeof(c) || CMD_EXIT == c.op) {
            _exit(0);
        }
        touch_sig = 0;
        switch (c.op) {
        case CMD_ATTACH:
            r.rc = kl_attach(fd, c.cookie, c.prot, 0, &a);
            r.extra = r.rc ? 0 : (long long) (a.addr - a.map_addr);
            break;
        case CMD_READ:
            if (!sigsetjmp(touch_env, 1)) {
                memcpy(shared, (void *) (uintptr_t) a.addr, RLEN);
            }
            r.rc = touch_sig;
            break;
        case CMD_READ_PART:
            if (!sigsetjmp(touch_env, 1)) {
                memcpy(shared + c.off, (void *) (uintptr_t) (a.addr + c.off), c.len);
            }
            r.rc = touch_sig;
            break;
        case CMD_WRITE:
            if (!sigsetjmp(touch_env, 1)) {
                kl_fill((void *) (uintptr_t) a.addr, RLEN, c.seed);
            }
            r.rc = touch_sig;
            break;
        case CMD_PROTECT:
            r.rc = mprotect((void *) (uintptr_t) a.map_addr, a.map_len, (int) c.prot) ? -errno
                                                                                       : 0;
            break;
        case CMD_SPIN: /* read the region's first word until a fault; report the last */
            kl_xwrite(out, &r, sizeof(r)); /* spinning now */
            if (!sigsetjmp(touch_env, 1)) {
                for (;;) {
                    *spin_seen = *(volatile uint32_t *) (uintptr_t) a.addr;
                }
            }
            r.rc = touch_sig;
            break;
        case CMD_FORK_TOUCH: { /* a child of the peer touches the attachment's address */
            pid_t child = fork();
            if (0 == child) {
                if (!sigsetjmp(touch_env, 1)) {
                    *spin_seen = *(volatile uint32_t *) (uintptr_t) a.addr;
                }
                _exit(touch_sig);
            }
            int st = 0;
            waitpid(child, &st, 0);
            r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            break;
        }
        case CMD_UNMAP:
            r.rc = munmap((void *) (uintptr_t) a.map_addr, a.map_len) ? -errno : 0;
            break;
        }
        kl_xwrite(out, &r, sizeof(r));
    }
}

static struct peer peer_start(uid_t uid)
{
    int down[2], up[2];
    struct peer p;
    if (pipe(down) || pipe(up)) {
        perror("pipe");
        exit(2);
    }
    p.pid = fork();
    if (0 == p.pid) {
        close(down[1]);
        close(up[0]);
        peer_main(down[0], up[1], uid);
    }
    close(down[0]);
    close(up[1]);
    p.to = down[1];
    p.from = up[0];
    return p;
}

static struct reply peer_do(struct peer *p, int op, uint64_t cookie, uint32_t prot,
                            unsigned seed)
{
    struct cmd c = {.op = op, .cookie = cookie, .prot = prot, .seed = seed};
    struct reply r;
    kl_xwrite(p->to, &c, sizeof(c));
    kl_xread(p->from, &r, sizeof(r));
    return r;
}

static void peer_stop(struct peer *p)
{
    struct cmd c = {.op = CMD_EXIT};
    int st;
    kl_xwrite(p->to, &c, sizeof(c));
    waitpid(p->pid, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "peer ended with status 0x%x", st);
    close(p->to);
    close(p->from);
}

/* The peer reads the whole region: it must see exactly expect (RLEN bytes). */
static void peer_sees(struct peer *p, const uint8_t *expect, const char *when)
{
    struct reply r = peer_do(p, CMD_READ, 0, 0, 0);
    CHECK(0 == r.rc, "%s: the peer's read got signal %d", when, r.rc);
    if (0 == r.rc) {
        size_t i = 0;
        while (i < RLEN && shared[i] == expect[i]) {
            i++;
        }
        CHECK(RLEN == i, "%s: byte %zu differs (%#x, expected %#x)", when, i,
              i < RLEN ? shared[i] : 0, i < RLEN ? expect[i] : 0);
        if (RLEN == i) {
            printf("  ok: %s: the peer reads the owner's current bytes\n", when);
        }
    }
}

static void peer_faults(struct peer *p, int sig, const char *when)
{
    struct reply r = peer_do(p, CMD_READ, 0, 0, 0);
    CHECK(sig == r.rc, "%s: the peer's read got signal %d, expected %d", when, r.rc, sig);
    if (sig == r.rc) {
        printf("  ok: %s: the peer's read gets %s\n", when, strsignal(sig));
    }
}

static uint8_t *expect_buf;

/* What the region holds when the owner's buffer is filled from seed. */
static const uint8_t *pattern(unsigned seed)
{
    static uint8_t tmp[LEN];
    kl_fill(tmp, LEN, seed);
    memcpy(expect_buf, tmp + HEAD, RLEN);
    return expect_buf;
}

/* The peer reads bytes [off, off + len) of the region: 0, or the signal it got. */
static int peer_reads_part(struct peer *p, size_t off, size_t len)
{
    struct cmd c = {.op = CMD_READ_PART, .off = off, .len = len};
    struct reply r;
    kl_xwrite(p->to, &c, sizeof(c));
    kl_xread(p->from, &r, sizeof(r));
    return r.rc;
}

/* ---- the tests ---- */

static void refusals(int fd)
{
    SECTION("refusals");
    struct knemlike_info info;
    CHECK(0 == kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, &info), "GET_INFO");
    CHECK(info.features & KNEMLIKE_FEATURE_ATTACH, "KNEMLIKE_FEATURE_ATTACH not offered");
    uint8_t *buf = kl_map_filled(NULL, 2 * LEN, 1);
    uint64_t plain, held, two, ro;
    struct knemlike_segment segs[2] = {{(uintptr_t) buf, PAGE}, {(uintptr_t) buf + LEN, PAGE}};
    CHECK(0 == kl_create1(fd, buf, LEN, RW, 0, &plain), "create plain");
    CHECK(0 == kl_create1(fd, buf, LEN, RW, HOLD, &held), "create held");
    CHECK(0 == kl_create(fd, segs, 2, RW, HOLD, &two), "create two segments");
    CHECK(0 == kl_create1(fd, buf + LEN, LEN, RD, HOLD, &ro), "create read-only");
    CHECK_ERR(kl_attach(fd, plain, RD, 0, NULL), EINVAL, "attach a region without HOLD_PAGES");
    CHECK_ERR(kl_attach(fd, two, RD, 0, NULL), EINVAL, "attach a region of two segments");
    CHECK_ERR(kl_attach(fd, held, 0, 0, NULL), EINVAL, "attach with prot 0");
    CHECK_ERR(kl_attach(fd, held, KNEMLIKE_PROT_WRITE, 0, NULL), EINVAL,
              "attach with WRITE but not READ");
    CHECK_ERR(kl_attach(fd, held, RD | 8, 0, NULL), EINVAL, "attach with an unknown prot bit");
    CHECK_ERR(kl_attach(fd, held, RD, 1, NULL), EINVAL, "attach with a flag");
    CHECK_ERR(kl_attach(fd, held ^ (1ULL << 40), RD, 0, NULL), ENOENT,
              "attach with a forged cookie");
    CHECK_ERR(kl_attach(fd, ro, RW, 0, NULL), EACCES, "attach a read-only region for writing");
    /* The window of a region is its index times 2^39: guessable, and worth nothing. */
    for (int i = 0; i < 2; i++) {
        off_t off = i ? (off_t) (held & 0xffffff) << 39 : 0;
        void *m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, off);
        CHECK(MAP_FAILED == m && EACCES == errno, "mmap of the device at %#llx without "
              "ATTACH: %s", (unsigned long long) off, MAP_FAILED == m ? strerror(errno) : "mapped");
        if (MAP_FAILED == m && EACCES == errno && i) {
            printf("  ok: mmap of a region's window without ATTACH -> EACCES\n");
        }
    }
    struct knemlike_attach a;
    CHECK_ERR(kl_attach(fd, held, RD, 0, &a), 0, "attach this process's own region");
    if (0 == a.map_addr) {
        return;
    }
    CHECK(a.addr == (uintptr_t) a.map_addr && a.map_len == LEN, "own attachment at %#llx+%llu",
          (unsigned long long) a.addr, (unsigned long long) a.map_len);
    CHECK(0 == memcmp((void *) (uintptr_t) a.addr, buf, LEN), "own attachment reads its buffer");
    madvise(buf, LEN, MADV_DONTNEED); /* the notifier drops the pages; the touch takes them */
    buf[5] = 77;
    CHECK(77 == ((volatile uint8_t *) (uintptr_t) a.addr)[5] &&
              0 == ((volatile uint8_t *) (uintptr_t) a.addr)[6],
          "own attachment after MADV_DONTNEED reads the new page");
    CHECK(0 == munmap((void *) (uintptr_t) a.map_addr, a.map_len), "munmap own attachment");
    kl_destroy(fd, plain);
    kl_destroy(fd, held);
    kl_destroy(fd, two);
    kl_destroy(fd, ro);
    munmap(buf, 2 * LEN);
}

/* The owner (this process) changes its mapping under a peer that reads. */
static void follows_owner(int fd)
{
    SECTION("a read-only attachment follows the owner's mapping");
    uint8_t *buf = kl_map_filled(NULL, LEN, 2);
    uint64_t cookie;
    long long live0 = kl_counter("attachments"), faults0 = kl_counter("attach_faults");
    long long revokes0 = kl_counter("attach_revokes");
    CHECK(0 == kl_create1(fd, buf + HEAD, RLEN, RD, HOLD, &cookie), "create");
    struct peer p = peer_start(0);
    struct reply r = peer_do(&p, CMD_ATTACH, cookie, RD, 0);
    CHECK(0 == r.rc && HEAD == r.extra, "peer attach: %d, first byte at +%lld", r.rc, r.extra);
    CHECK(kl_counter("attachments") == live0 + 1, "attachments: %lld, expected %lld",
          kl_counter("attachments"), live0 + 1);
    peer_sees(&p, pattern(2), "after attach");
    CHECK(kl_counter("attach_faults") > faults0, "attach_faults did not move");

    r = peer_do(&p, CMD_WRITE, 0, 0, 9);
    CHECK(SIGSEGV == r.rc, "a store to a read-only attachment got signal %d, not SIGSEGV", r.rc);
    if (SIGSEGV == r.rc) {
        printf("  ok: a store to a read-only attachment -> SIGSEGV\n");
    }
    CHECK_ERR(peer_do(&p, CMD_PROTECT, 0, PROT_READ | PROT_WRITE, 0).rc, EACCES,
              "mprotect a read-only attachment writable");
    CHECK_ERR(peer_do(&p, CMD_PROTECT, 0, PROT_READ | PROT_EXEC, 0).rc, EACCES,
              "mprotect an attachment executable");
    r = peer_do(&p, CMD_FORK_TOUCH, 0, 0, 0);
    CHECK(SIGSEGV == r.rc, "the peer's child touched the attachment: signal %d, expected "
          "SIGSEGV (not inherited)", r.rc);

    kl_fill(buf, LEN, 3);
    peer_sees(&p, pattern(3), "the owner stores in place");
    madvise(buf, LEN, MADV_DONTNEED);
    memset(expect_buf, 0, RLEN);
    peer_sees(&p, expect_buf, "the owner's MADV_DONTNEED");
    CHECK(kl_counter("attach_revokes") > revokes0, "attach_revokes did not move");
    kl_map_filled(buf, LEN, 4);
    peer_sees(&p, pattern(4), "new memory MAP_FIXED over the owner's");
    uint8_t *away = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(away == mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, away), "mremap away");
    peer_faults(&p, SIGBUS, "the owner's memory moved away");
    kl_map_filled(buf, LEN, 5);
    peer_sees(&p, pattern(5), "new memory where the region is");
    CHECK(0 == mprotect(buf, LEN, PROT_NONE), "mprotect NONE");
    peer_faults(&p, SIGBUS, "the owner's memory made PROT_NONE");
    CHECK(0 == mprotect(buf, LEN, PROT_READ | PROT_WRITE), "mprotect RW");
    peer_sees(&p, pattern(5), "the owner's memory readable again");
    pid_t child = fork();
    if (0 == child) { /* the owner's child keeps the old bytes: they are not the region's */
        kl_fill(buf, LEN, 5);
        pause();
        _exit(0);
    }
    kl_fill(buf, LEN, 6);
    peer_sees(&p, pattern(6), "the owner forked and stored after");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);

    CHECK_ERR(peer_do(&p, CMD_UNMAP, 0, 0, 0).rc, 0, "the peer unmaps its attachment");
    CHECK(kl_counter("attachments") == live0, "attachments after munmap: %lld, expected %lld",
          kl_counter("attachments"), live0);
    peer_stop(&p);
    kl_destroy(fd, cookie);
    munmap(buf, LEN);
    munmap(away, LEN);
}

/* A registration that outlived part of its memory (freed, or reallocated smaller): the
 * pages that are there can be attached and read; the others give SIGBUS, until memory is
 * mapped there again. */
static void partly_mapped(int fd)
{
    SECTION("an attachment of a region whose owner unmapped part of it");
    const size_t half = LEN / 2, rhalf = LEN / 2 - HEAD; /* the region's bytes below half */
    uint8_t *buf = kl_map_filled(NULL, LEN, 11);
    uint64_t cookie;
    CHECK(0 == kl_create1(fd, buf + HEAD, RLEN, RD, HOLD, &cookie), "create");
    struct peer p = peer_start(0);
    CHECK_ERR(peer_do(&p, CMD_ATTACH, cookie, RD, 0).rc, 0, "peer attach");
    peer_sees(&p, pattern(11), "before the owner unmaps half");
    long long held0 = kl_counter("held_pages");
    CHECK(0 == munmap(buf + half, half), "munmap the second half");
    int sig = peer_reads_part(&p, 0, rhalf);
    CHECK(0 == sig && 0 == memcmp(shared, pattern(11), rhalf),
          "the region's first half, still mapped, after the owner unmapped the second: "
          "signal %d, %s bytes", sig, sig ? "no" : "its");
    if (0 == sig) {
        printf("  ok: the still-mapped half reads the owner's bytes\n");
    }
    /* The region's 256 pages were held; now its 128 still mapped (the dropped set is
     * given back by a work item: wait for it). */
    long long held = kl_counter("held_pages");
    for (int i = 0; i < 500 && held != held0 - LEN / PAGE / 2; i++) {
        usleep(10000);
        held = kl_counter("held_pages");
    }
    CHECK(held == held0 - LEN / PAGE / 2,
          "held_pages %lld after the owner unmapped half, expected %lld (the mapped half)",
          held, held0 - LEN / PAGE / 2);
    sig = peer_reads_part(&p, half, 1);
    CHECK(SIGBUS == sig, "a touch of the unmapped half: signal %d, expected SIGBUS", sig);
    uint8_t *got = malloc(RLEN);
    CHECK_ERR(kl_copy1(fd, cookie, 0, got, RLEN, KNEMLIKE_COPY_FROM_REGION), ESTALE,
              "a copy of the whole region while half of it is unmapped");
    CHECK_ERR(kl_copy1(fd, cookie, 0, got, rhalf, KNEMLIKE_COPY_FROM_REGION), 0,
              "a copy of its mapped half");
    CHECK(0 == memcmp(got, pattern(11), rhalf), "the copy of the mapped half: wrong bytes");
    CHECK(buf + half == kl_map_filled(buf + half, half, 12), "map the second half again");
    uint8_t *expect = malloc(RLEN);
    memcpy(expect, pattern(11), rhalf);
    uint8_t *tmp = malloc(half); /* what the second half holds now, filled on its own */
    kl_fill(tmp, half, 12);
    memcpy(expect + rhalf, tmp, RLEN - rhalf);
    peer_sees(&p, expect, "new memory mapped where the owner had unmapped");
    free(tmp);
    free(expect);
    free(got);
    peer_stop(&p);
    kl_destroy(fd, cookie);
    munmap(buf, LEN);
}

static void writable(int fd)
{
    SECTION("a writable attachment stores into the owner's memory");
    uint8_t *buf = kl_map_filled(NULL, LEN, 7);
    uint64_t cookie;
    CHECK(0 == kl_create1(fd, buf + HEAD, RLEN, RW, HOLD, &cookie), "create");
    struct peer p = peer_start(0);
    CHECK_ERR(peer_do(&p, CMD_ATTACH, cookie, RW, 0).rc, 0, "attach for writing");
    struct reply r = peer_do(&p, CMD_WRITE, 0, 0, 8);
    CHECK(0 == r.rc, "the peer's store got signal %d", r.rc);
    uint8_t *want = malloc(LEN);
    kl_fill(want, LEN, 7); /* the owner's bytes outside the region: unchanged */
    kl_fill(want + HEAD, RLEN, 8);
    size_t i = 0;
    while (i < LEN && buf[i] == want[i]) {
        i++;
    }
    CHECK(LEN == i, "the owner's byte %zu is %#x, expected %#x", i, i < LEN ? buf[i] : 0,
          i < LEN ? want[i] : 0);
    if (LEN == i) {
        printf("  ok: the owner reads what the peer stored, and nothing outside the region "
               "changed\n");
    }
    /* The owner makes its memory read-only: both attachments go on reading it, and a
     * store through the writable one gets SIGBUS, whether the page was mapped already
     * (read first) or not (stored first), and changes nothing. */
    struct peer ro = peer_start(0);
    CHECK_ERR(peer_do(&ro, CMD_ATTACH, cookie, RD, 0).rc, 0, "attach for reading");
    CHECK(0 == mprotect(buf, LEN, PROT_READ), "mprotect READ");
    peer_sees(&ro, want + HEAD, "the owner's memory made read-only, read-only attachment");
    r = peer_do(&p, CMD_WRITE, 0, 0, 10);
    CHECK(SIGBUS == r.rc, "a store through the writable attachment to memory made "
          "read-only, not touched since: signal %d, expected SIGBUS", r.rc);
    peer_sees(&p, want + HEAD, "the owner's memory made read-only, writable attachment");
    r = peer_do(&p, CMD_WRITE, 0, 0, 10);
    CHECK(SIGBUS == r.rc, "a store through the writable attachment to memory made "
          "read-only, read through it: signal %d, expected SIGBUS", r.rc);
    CHECK(0 == memcmp(buf, want, LEN), "a store reached memory the owner made read-only");
    if (SIGBUS == r.rc) {
        printf("  ok: stores to memory the owner made read-only -> SIGBUS, nothing changed\n");
    }
    CHECK(0 == mprotect(buf, LEN, PROT_READ | PROT_WRITE), "mprotect RW");
    peer_sees(&p, want + HEAD, "the owner's memory writable again, writable attachment");
    r = peer_do(&p, CMD_WRITE, 0, 0, 11);
    kl_fill(want + HEAD, RLEN, 11);
    CHECK(0 == r.rc && 0 == memcmp(buf, want, LEN),
          "a store once the owner's memory is writable again: signal %d, %s", r.rc,
          memcmp(buf, want, LEN) ? "not in the owner's memory" : "stored");
    peer_sees(&ro, want + HEAD, "the other peer reads what the writable attachment stored");
    peer_stop(&ro);
    free(want);
    peer_stop(&p);
    kl_destroy(fd, cookie);
    munmap(buf, LEN);
}

/* DESTROY (or close, or the owner's exit) under two peers, one reading in a loop. */
static void revocation(int how)
{
    static const char *what[] = {"DESTROY", "close", "the owner's exit"};
    SECTION("%s revokes every attachment", what[how]);
    int ctl[2], back[2]; /* to the owner; from it */
    if (pipe(ctl) || pipe(back)) {
        exit(2);
    }
    /* The owner is a process of its own, so that it can exit. */
    pid_t owner = fork();
    if (0 == owner) {
        int ofd = kl_open();
        uint8_t *buf = kl_map_filled(NULL, LEN, 10);
        uint64_t cookie = 0;
        if (kl_create1(ofd, buf + HEAD, RLEN, RD, HOLD, &cookie)) {
            cookie = 0;
        }
        kl_xwrite(back[1], &cookie, sizeof(cookie));
        char go;
        kl_xread(ctl[0], &go, 1);
        if (0 == how) {
            int rc = kl_destroy(ofd, cookie);
            kl_fill(buf, LEN, 11); /* after DESTROY: no peer may see this */
            _exit(rc ? 1 : 0);
        }
        if (1 == how) {
            close(ofd);
            kl_fill(buf, LEN, 11);
            _exit(0);
        }
        _exit(0);
    }
    uint64_t cookie;
    kl_xread(back[0], &cookie, sizeof(cookie));
    CHECK(cookie, "the owner's create failed");
    long long live0 = kl_counter("attachments");
    struct peer p1 = peer_start(0), p2 = peer_start(0);
    CHECK_ERR(peer_do(&p1, CMD_ATTACH, cookie, RD, 0).rc, 0, "first peer attaches");
    CHECK_ERR(peer_do(&p2, CMD_ATTACH, cookie, RD, 0).rc, 0, "second peer attaches");
    peer_sees(&p2, pattern(10), "second peer before");
    uint32_t first_old = *(uint32_t *) (pattern(10)), first_new = *(uint32_t *) pattern(11);
    *spin_seen = 0;
    struct cmd c = {.op = CMD_SPIN};
    struct reply r;
    kl_xwrite(p1.to, &c, sizeof(c));
    kl_xread(p1.from, &r, sizeof(r)); /* spinning */
    usleep(20000);
    kl_xwrite(ctl[1], "g", 1);
    int st;
    waitpid(owner, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "the owner's %s failed", what[how]);
    kl_xread(p1.from, &r, sizeof(r)); /* the spin ended */
    CHECK(SIGBUS == r.rc, "the spinning peer got signal %d, expected SIGBUS", r.rc);
    CHECK(*spin_seen == first_old, "the spinning peer last read %#x: the owner's bytes "
          "before were %#x, after %s %#x", *spin_seen, first_old, what[how], first_new);
    if (SIGBUS == r.rc && *spin_seen == first_old) {
        printf("  ok: a peer reading in a loop gets SIGBUS and never what was stored after\n");
    }
    peer_faults(&p1, SIGBUS, "first peer after");
    peer_faults(&p2, SIGBUS, "second peer after");
    peer_stop(&p1);
    peer_stop(&p2);
    CHECK(kl_counter("attachments") == live0, "attachments after the peers exited: %lld, "
          "expected %lld", kl_counter("attachments"), live0);
    close(ctl[0]);
    close(ctl[1]);
    close(back[0]);
    close(back[1]);
}

static void other_user(int fd)
{
    SECTION("another uid attaches only with ANY_USER");
    uint8_t *buf = kl_map_filled(NULL, LEN, 12);
    uint64_t mine, anyone;
    CHECK(0 == kl_create1(fd, buf + HEAD, RLEN, RD, HOLD, &mine), "create");
    CHECK(0 == kl_create1(fd, buf + HEAD, RLEN, RD, HOLD | KNEMLIKE_FLAG_ANY_USER, &anyone),
          "create ANY_USER");
    struct peer p = peer_start(65534);
    CHECK_ERR(peer_do(&p, CMD_ATTACH, mine, RD, 0).rc, EPERM,
              "another uid attaches a region without ANY_USER");
    CHECK_ERR(peer_do(&p, CMD_ATTACH, anyone, RD, 0).rc, 0,
              "another uid attaches an ANY_USER region");
    peer_sees(&p, pattern(12), "another uid's attachment of an ANY_USER region");
    peer_stop(&p);
    kl_destroy(fd, mine);
    kl_destroy(fd, anyone);
    munmap(buf, LEN);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    shared = mmap(NULL, LEN + PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    expect_buf = malloc(LEN);
    if (MAP_FAILED == shared || !expect_buf) {
        return 2;
    }
    spin_seen = (volatile uint32_t *) (shared + LEN);
    int fd = kl_open();
    long long live0 = kl_counter("attachments");
    refusals(fd);
    follows_owner(fd);
    partly_mapped(fd);
    writable(fd);
    for (int how = 0; how < 3; how++) {
        revocation(how);
    }
    other_user(fd);
    close(fd);
    CHECK(kl_counter("attachments") == live0, "attachments at the end: %lld, expected %lld",
          kl_counter("attachments"), live0);
    return kl_verdict("kmod_attach");
}
