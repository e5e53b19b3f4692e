/*
 * Exports (KNEMLIKE_IOC_EXPORT*): a process exports a range of its address space, a peer
 * holding the cookie maps part of it and reads or writes the owner's memory directly.
 * What must hold:
 * - refusals: malformed requests; another uid (EPERM); random and altered cookies
 *   (ENOENT, each counted in export_cookie_misses); a write attachment of a read-only
 *   export (EACCES); a range past the export (ERANGE); max_user_kb (ENOSPC);
 * - coherence: a reader sees the owner's stores and the owner a writer's, after
 *   MADV_DONTNEED, fork's copy-on-write and mprotect too; while a thread of the owner
 *   unmaps and maps new memory at the same address, the reader gets SIGBUS or the new
 *   contents, never the old;
 * - lifetime: after the owner exits or execs a touch gets SIGBUS and ATTACH ESRCH;
 *   DESTROY while a reader touches: SIGBUS afterwards, never what the owner wrote after
 *   DESTROY returned;
 * - containment: MADV_DOFORK fails and a child has no attachment; a read-only attachment
 *   cannot be made writable (mprotect), nor written through O_DIRECT read(), vmsplice()
 *   or process_vm_writev();
 * - cost: 1 GiB of address space, mostly unmapped, exports and attaches with nothing
 *   pinned, and a touch leaves nothing pinned; a process that exports all of its user
 *   space and attaches its own export, while a thread maps and unmaps, ends.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#define PAGE 4096UL
#define RD KNEMLIKE_PROT_READ
#define RW (KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE)
#define LEN (1UL << 20)

static int cookie_eq(const struct knemlike_export_cookie *a,
                     const struct knemlike_export_cookie *b)
{
    return 0 == memcmp(a, b, sizeof(*a));
}

/* ---- refusals ---- */

struct other_uid_arg {
    struct knemlike_export_cookie cookie, any;
};

static void other_uid_child(void *p)
{
    struct other_uid_arg *a = p;
    void *at;
    if (setresuid(65534, 65534, 65534)) {
        perror("setresuid");
        _exit(3);
    }
    int fd = kl_open();
    CHECK_ERR(kl_export_attach(fd, &a->cookie, 0, PAGE, RD, &at), EPERM,
              "another uid attaches an export");
    CHECK_ERR(kl_export_attach(fd, &a->cookie, 0, 1UL << 40, RD, &at), EPERM,
              "another uid attaches past its end (EPERM first: it learns no size)");
    CHECK_ERR(kl_export_attach(fd, &a->any, 0, PAGE, RD, &at), 0,
              "another uid attaches a KNEMLIKE_EXPORT_ANY_USER export");
    CHECK_ERR(kl_export_attach(fd, &a->any, 0, PAGE, RW, &at), EACCES,
              "another uid attaches an ANY_USER read-only export for writing");
    close(fd);
}

static void refusals(int fd)
{
    SECTION("refusals");
    uint8_t *buf = kl_map_filled(NULL, LEN, 1);
    struct knemlike_export_cookie c, ro, guess;
    struct knemlike_export_create e = {.addr = (uintptr_t) buf, .len = LEN};
    void *at;

    CHECK_ERR(kl_export(fd, buf + 1, LEN - PAGE, 0, &c), EINVAL, "export an unaligned address");
    CHECK_ERR(kl_export(fd, buf, LEN - 1, 0, &c), EINVAL, "export an unaligned length");
    CHECK_ERR(kl_export(fd, buf, 0, 0, &c), EINVAL, "export 0 bytes");
    CHECK_ERR(kl_export(fd, buf, LEN, 1U << 7, &c), EINVAL, "export with an unknown flag");
    e.reserved = 1;
    CHECK_ERR(kl_ioctl(fd, KNEMLIKE_IOC_EXPORT, &e), EINVAL, "export with reserved set");
    CHECK_ERR(kl_export(fd, (void *) 0xffff888000000000UL, LEN, 0, &c), EFAULT,
              "export kernel addresses");
    CHECK_ERR(kl_export(fd, (void *) (uintptr_t) -PAGE, 2 * PAGE, 0, &c), EINVAL,
              "export a range that wraps");

    CHECK_ERR(kl_export(fd, buf, LEN, 0, &c), 0, "export 1 MiB");
    CHECK_ERR(kl_export(fd, buf, LEN, KNEMLIKE_EXPORT_READ_ONLY | KNEMLIKE_EXPORT_ANY_USER,
                        &ro), 0, "export it again, read-only, to any user");
    CHECK(!cookie_eq(&c, &ro), "two exports got the same cookie");
    CHECK(c.secret[0] || c.secret[1], "a cookie's secret is zero");

    CHECK_ERR(kl_export_attach(fd, &c, 1, PAGE, RD, &at), EINVAL, "attach an unaligned offset");
    CHECK_ERR(kl_export_attach(fd, &c, 0, 100, RD, &at), EINVAL, "attach an unaligned length");
    CHECK_ERR(kl_export_attach(fd, &c, 0, PAGE, KNEMLIKE_PROT_WRITE, &at), EINVAL,
              "attach with WRITE but not READ");
    CHECK_ERR(kl_export_attach(fd, &c, 0, LEN + PAGE, RD, &at), ERANGE,
              "attach past the export's end");
    CHECK_ERR(kl_export_attach(fd, &c, LEN, PAGE, RD, &at), ERANGE,
              "attach at the export's end");
    CHECK_ERR(kl_export_attach(fd, &c, (uint64_t) -PAGE, 2 * PAGE, RD, &at), ERANGE,
              "attach with an overflowing range");
    CHECK_ERR(kl_export_attach(fd, &ro, 0, PAGE, RW, &at), EACCES,
              "attach a read-only export for writing");

    /* Guesses: every random cookie fails and is counted. */
    long long misses = kl_counter("export_cookie_misses");
    int enoent = 0, n = 0;
    srand(12345);
    for (; n < 1000; n++) {
        for (int w = 0; w < 3; w++) {
            __u64 *word = w ? &guess.secret[w - 1] : &guess.id;
            *word = (__u64) rand() << 40 ^ (__u64) rand() << 20 ^ (__u64) rand();
        }
        if (n % 2) {
            guess.id = c.id;   /* the right index and id, a guessed secret */
        }
        enoent += -ENOENT == kl_export_attach(fd, &guess, 0, PAGE, RD, &at);
    }
    for (int bit = 0; bit < 128; bit++) {   /* the real cookie, one bit of its secret wrong */
        guess = c;
        guess.secret[bit / 64] ^= 1ULL << (bit % 64);
        enoent += -ENOENT == kl_export_attach(fd, &guess, 0, PAGE, RD, &at);
        n++;
    }
    long long counted = kl_counter("export_cookie_misses") - misses;
    CHECK(n == enoent, "guessed cookies: %d of %d ENOENT", enoent, n);
    CHECK(counted == n, "export_cookie_misses went up by %lld for %d guesses", counted, n);
    if (n == enoent && counted == n) {
        printf("  ok: %d guessed cookies (half with the right id, 128 one bit off the secret)"
               " -> ENOENT, each counted in export_cookie_misses\n", n);
    }

    struct other_uid_arg a = {.cookie = c, .any = ro};
    kl_reap(kl_spawn(other_uid_child, &a), 30, "the other uid's child");

    int fd2 = kl_open();
    CHECK_ERR(kl_export_destroy(fd2, &c), ENOENT, "destroy through another open file");
    close(fd2);
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    CHECK_ERR(kl_export_destroy(fd, &c), ENOENT, "destroy again");
    CHECK_ERR(kl_export_attach(fd, &c, 0, PAGE, RD, &at), ENOENT, "attach a destroyed export");
    CHECK_ERR(kl_export_destroy(fd, &ro), 0, "destroy the read-only export");

    long long kb = kl_get_param("max_user_kb");
    CHECK(0 == kl_set_param("max_user_kb", "1"), "set max_user_kb=1");
    CHECK_ERR(kl_export(fd, buf, LEN, 0, &c), ENOSPC, "export over max_user_kb");
    char v[32];
    snprintf(v, sizeof(v), "%lld", kb);
    CHECK(0 == kl_set_param("max_user_kb", v), "restore max_user_kb");
    munmap(buf, LEN);
}

/* ---- coherence between owner and reader ---- */

struct shm {
    struct knemlike_export_cookie cookie;
    volatile int step, ack;
    volatile uint64_t gen;        /* the owner's current generation (remap storm) */
    volatile int stop;
    volatile int destroyed;       /* the owner's DESTROY has returned */
    volatile long reads, sigbus, zeros, stale, wrong;
    int fd;                       /* owner_ends: the open file the owner exports through */
    int exec;                     /* owner_ends: exec rather than exit */
};

static void wait_step(struct shm *s, int step)
{
    double end = kl_now() + 20;
    while (s->step < step && kl_now() < end) {
        usleep(1000);
    }
    if (s->step < step) {
        fprintf(stderr, "timed out waiting for step %d\n", step);
        _exit(9);
    }
}

static void wait_ack(struct shm *s, int ack)
{
    double end = kl_now() + 20;
    while (s->ack < ack && kl_now() < end) {
        usleep(1000);
    }
    CHECK(s->ack >= ack, "the peer did not reach step %d", ack);
}

/* The peer of coherence(): attaches read-write, checks what the owner does at each step. */
static void coherence_peer(void *p)
{
    struct shm *s = p;
    int fd = kl_open();
    uint64_t *at, v = 0;
    wait_step(s, 1);
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, LEN, RW, (void **) &at), 0,
              "attach 1 MiB read-write");
    if (!at) {
        _exit(1);
    }
    CHECK(0 == kl_load64(&at[0], &v) && 0x1111 == v, "the reader sees the owner's word: %llx",
          (unsigned long long) v);
    CHECK(0 == kl_load64(&at[LEN / 8 - 1], &v) && 0x1111 == v, "the last word: %llx",
          (unsigned long long) v);
    CHECK(0 == kl_store64(&at[7], 0x2222), "a store through the attachment");
    s->ack = 1;
    wait_step(s, 2);   /* the owner stored 0x3333 in place */
    CHECK(0 == kl_load64(&at[1], &v) && 0x3333 == v, "after the owner's store: %llx",
          (unsigned long long) v);
    s->ack = 2;
    wait_step(s, 3);   /* MADV_DONTNEED: zero */
    CHECK(0 == kl_load64(&at[1], &v) && 0 == v, "after MADV_DONTNEED: %llx", (unsigned long long) v);
    CHECK(0 == kl_store64(&at[2], 0x4444), "a store after MADV_DONTNEED");
    s->ack = 3;
    wait_step(s, 4);   /* the owner forked, its child stores 0x5555, then the owner 0x6666 */
    CHECK(0 == kl_load64(&at[3], &v) && 0x6666 == v, "after fork and the owner's store: %llx "
          "(0x5555: the child's page)", (unsigned long long) v);
    CHECK(0 == kl_store64(&at[4], 0x7777), "a store after fork");
    s->ack = 4;
    wait_step(s, 5);   /* the owner made its memory read-only */
    CHECK(0 == kl_load64(&at[4], &v) && 0x7777 == v, "a load after mprotect(PROT_READ): %llx",
          (unsigned long long) v);
    int sig = kl_store64(&at[5], 0x8888);
    CHECK(SIGBUS == sig, "a store after the owner's mprotect(PROT_READ): signal %d, expected "
          "SIGBUS", sig);
    s->ack = 5;
    wait_step(s, 6);   /* writable again */
    CHECK(0 == kl_store64(&at[5], 0x9999), "a store once the owner's memory is writable again");
    s->ack = 6;
    munmap(at, LEN);
    close(fd);
}

static void coherence(int fd)
{
    SECTION("a reader-writer and the owner see each other's stores");
    struct shm *s = kl_shared_page(PAGE);
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, LEN, 0);
    kl_fill_words(buf, LEN, 0x1111);
    CHECK_ERR(kl_export(fd, buf, LEN, 0, &s->cookie), 0, "export");
    pid_t peer = kl_spawn(coherence_peer, s);
    s->step = 1;
    wait_ack(s, 1);
    CHECK(0x2222 == buf[7], "the owner sees the reader's store: %llx",
          (unsigned long long) buf[7]);
    buf[1] = 0x3333;
    s->step = 2;
    wait_ack(s, 2);
    madvise(buf, LEN, MADV_DONTNEED);
    s->step = 3;
    wait_ack(s, 3);
    CHECK(0x4444 == buf[2], "the owner sees a store made after MADV_DONTNEED: %llx",
          (unsigned long long) buf[2]);
    pid_t child = fork();
    if (0 == child) {
        buf[3] = 0x5555;   /* the child's own copy */
        usleep(300000);
        _exit(buf[4] == 0x7777 ? 1 : 0);   /* the reader's store must not reach it */
    }
    usleep(100000);
    buf[3] = 0x6666;
    s->step = 4;
    wait_ack(s, 4);
    CHECK(0x7777 == buf[4], "the owner sees a store made after fork: %llx",
          (unsigned long long) buf[4]);
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "the owner's child saw the reader's store");
    mprotect(buf, LEN, PROT_READ);
    s->step = 5;
    wait_ack(s, 5);
    CHECK(0x8888 != buf[5], "a store reached memory the owner made read-only");
    mprotect(buf, LEN, PROT_READ | PROT_WRITE);
    s->step = 6;
    wait_ack(s, 6);
    CHECK(0x9999 == buf[5], "the owner sees the store made once writable again: %llx",
          (unsigned long long) buf[5]);
    kl_reap(peer, 30, "the coherence peer");
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy");
    munmap(buf, LEN);
    munmap(s, PAGE);
}

/* ---- the owner remaps while a reader reads ----
 * Generation g's memory is filled with STAMP(g) before gen = g is published, and replaced
 * before g + 1 is: a read that began when gen was lo may see lo .. gen + 1, or 0 (new
 * memory not filled yet), or SIGBUS (unmapped), never a generation below lo. */

#define STORM_LEN (64 * PAGE)
#define STORM_SECONDS 3.0
#define STAMP(g) (0x5eed000000000000ULL | (g))

struct storm_owner {
    uint8_t *buf;
    struct shm *s;
};

/* Replace the memory under the export again and again: unmap, map new memory at the same
 * address, fill it with the next generation's stamp, publish the generation. */
static void *remapper(void *p)
{
    struct storm_owner *o = p;
    for (uint64_t g = 2; !o->s->stop; g++) {
        if (g % 2) {
            munmap(o->buf, STORM_LEN);
        }
        void *q = mmap(o->buf, STORM_LEN, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (q != o->buf) {
            perror("mmap");
            _exit(2);
        }
        kl_fill_words(o->buf, STORM_LEN, STAMP(g));
        o->s->gen = g;
    }
    return NULL;
}

static void storm_reader(void *p)
{
    struct shm *s = p;
    int fd = kl_open();
    const volatile uint64_t *at;
    wait_step(s, 1);
    if (kl_export_attach(fd, &s->cookie, 0, STORM_LEN, RD, (void **) &at)) {
        _exit(1);
    }
    for (unsigned i = 0; !s->stop; i++) {
        uint64_t lo = s->gen, v;
        int sig = kl_load64(&at[(i * 515) % (STORM_LEN / 8)], &v);
        uint64_t hi = s->gen;
        s->reads++;
        if (sig) {
            s->sigbus += SIGBUS == sig;
            s->wrong += SIGBUS != sig;
        } else if (0 == v) {
            s->zeros++;   /* new memory, not filled yet */
        } else if ((v >> 48) != 0x5eed || (v & 0xffffffffffffULL) > hi + 1) {
            s->wrong++;
        } else if ((v & 0xffffffffffffULL) < lo) {
            s->stale++;   /* a generation the owner had replaced before this read */
        }
    }
    close(fd);
}

static void remap_storm(int fd)
{
    SECTION("the owner unmaps and maps new memory at the exported address while a reader "
            "reads (%.0f s)", STORM_SECONDS);
    struct shm *s = kl_shared_page(PAGE);
    struct storm_owner o = {.s = s};
    o.buf = kl_map_filled(NULL, STORM_LEN, 0);
    kl_fill_words(o.buf, STORM_LEN, STAMP(1));
    s->gen = 1;
    CHECK_ERR(kl_export(fd, o.buf, STORM_LEN, 0, &s->cookie), 0, "export");
    long long faults = kl_counter("export_faults"), zaps = kl_counter("export_zaps");
    pid_t reader = kl_spawn(storm_reader, s);
    pthread_t t;
    pthread_create(&t, NULL, remapper, &o);
    s->step = 1;
    double end = kl_now() + STORM_SECONDS;
    while (kl_now() < end) {
        usleep(10000);
    }
    s->stop = 1;
    pthread_join(t, NULL);
    kl_reap(reader, 30, "the storm's reader");
    printf("  %llu generations, %lld touches mapped pages, %lld unmappings; %ld reads: %ld "
           "SIGBUS, %ld zero, %ld stale, %ld wrong\n", (unsigned long long) s->gen,
           kl_counter("export_faults") - faults, kl_counter("export_zaps") - zaps, s->reads,
           s->sigbus, s->zeros, s->stale, s->wrong);
    CHECK(s->reads > 1000 && s->gen > 100, "too little happened to tell");
    CHECK(0 == s->stale && 0 == s->wrong, "the reader saw %ld stale and %ld wrong words",
          s->stale, s->wrong);
    if (0 == s->stale && 0 == s->wrong) {
        printf("  ok: SIGBUS or the current contents, never memory the owner had let go\n");
    }
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy");
    munmap(o.buf, STORM_LEN);
    munmap(s, PAGE);
}

/* ---- DESTROY while a reader touches ---- */

static void destroy_reader(void *p)
{
    struct shm *s = p;
    int fd = kl_open();
    const volatile uint64_t *at;
    if (kl_export_attach(fd, &s->cookie, 0, LEN, RD, (void **) &at)) {
        _exit(1);
    }
    s->ack = 1;
    int after = 0;
    while (!s->stop) {
        int destroyed = s->destroyed;
        uint64_t v;
        int sig = kl_load64(&at[(s->reads * 67) % (LEN / 8)], &v);
        s->reads++;
        if (!sig && 0xdead == v) {
            s->stale++;   /* written after DESTROY returned */
        }
        if (destroyed) {
            after++;
            s->sigbus += SIGBUS == sig;
            s->wrong += !sig;
        }
        if (after > 1000) {
            break;
        }
    }
    close(fd);
}

static void destroy_while_reading(int fd)
{
    SECTION("DESTROY while a reader touches the export");
    struct shm *s = kl_shared_page(PAGE);
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, LEN, 0);
    kl_fill_words(buf, LEN, 0x1234);
    CHECK_ERR(kl_export(fd, buf, LEN, 0, &s->cookie), 0, "export");
    pid_t reader = kl_spawn(destroy_reader, s);
    wait_ack(s, 1);
    while (s->reads < 20000) {
        usleep(1000);
    }
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy while read");
    kl_fill_words(buf, LEN, 0xdead);
    s->destroyed = 1;
    double end = kl_now() + 10;
    while (s->sigbus + s->wrong < 1000 && kl_now() < end) {
        usleep(1000);
    }
    s->stop = 1;
    kl_reap(reader, 30, "the reader");
    printf("  %ld reads; after DESTROY: %ld SIGBUS, %ld read memory; %ld saw what the owner "
           "wrote after DESTROY\n", s->reads, s->sigbus, s->wrong, s->stale);
    CHECK(s->sigbus > 0 && 0 == s->wrong && 0 == s->stale, "after DESTROY the reader read "
          "%ld times and saw %ld words written after it", s->wrong, s->stale);
    if (s->sigbus > 0 && 0 == s->wrong && 0 == s->stale) {
        printf("  ok: SIGBUS after DESTROY returned, never the owner's later bytes\n");
    }
    munmap(buf, LEN);
    munmap(s, PAGE);
}

/* ---- the owner's end: exit, exec ---- */

/* Exports through the test's open file, which outlives it (its own would destroy the
 * export when closed at exit: then ENOENT, as for a DESTROY). */
static void owner_that_exits(void *p)
{
    struct shm *s = p;
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, LEN, 0);
    kl_fill_words(buf, LEN, 0x4242);
    if (kl_export(s->fd, buf, LEN, 0, &s->cookie)) {
        _exit(1);
    }
    s->step = 1;
    wait_ack(s, 1);
    if (s->exec) {   /* the process lives on, its address space does not */
        execl("/bin/sleep", "sleep", "5", (char *) NULL);
        _exit(3);
    }
}

static void owner_ends(int fd, int exec)
{
    SECTION("the owner %s: touches get SIGBUS, ATTACH ESRCH", exec ? "execs" : "exits");
    struct shm *s = kl_shared_page(PAGE);
    s->exec = exec;
    s->fd = fd;
    long long orphaned = kl_counter("exports_orphaned");
    pid_t owner = kl_spawn(owner_that_exits, s);
    double end = kl_now() + 10;
    while (!s->step && kl_now() < end) {
        usleep(1000);
    }
    struct knemlike_export_cookie c = s->cookie;
    const volatile uint64_t *at;
    uint64_t v = 0;
    CHECK_ERR(kl_export_attach(fd, &c, 0, LEN, RD, (void **) &at), 0, "attach");
    kl_catch_faults();
    CHECK(at && 0 == kl_load64(&at[3], &v) && 0x4242 == v, "read before the owner's end: %llx",
          (unsigned long long) v);
    s->ack = 1;
    if (exec) {
        end = kl_now() + 5;
        while (kl_counter("exports_orphaned") == orphaned && kl_now() < end) {
            usleep(10000);
        }
        CHECK(0 == kill(owner, 0), "the owner that exec'd should still run");
    } else {
        int st;
        waitpid(owner, &st, 0);
    }
    int sig = at ? kl_load64(&at[5], &v) : 0;
    CHECK(SIGBUS == sig, "a touch after the owner's end: signal %d, expected SIGBUS", sig);
    if (SIGBUS == sig) {
        printf("  ok: a touch after the owner %s -> SIGBUS\n", exec ? "exec'd" : "exited");
    }
    void *at2;
    CHECK_ERR(kl_export_attach(fd, &c, 0, PAGE, RD, &at2), ESRCH,
              exec ? "attach after the owner exec'd" : "attach after the owner exited");
    end = kl_now() + 5;
    while (kl_counter("exports_orphaned") == orphaned && kl_now() < end) {
        usleep(10000);
    }
    CHECK(kl_counter("exports_orphaned") > orphaned, "exports_orphaned did not move");
    if (at) {
        munmap((void *) at, LEN);
    }
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy an orphaned export");
    if (exec) {
        kill(owner, SIGKILL);
        waitpid(owner, NULL, 0);
    }
    munmap(s, PAGE);
}

/* ---- containment: fork, mprotect, O_DIRECT, vmsplice, process_vm_writev ---- */

static void containment(int fd)
{
    SECTION("a read-only attachment: no fork, no mprotect, no kernel writes through it");
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, LEN, 0);
    kl_fill_words(buf, LEN, 0xabcd);
    struct knemlike_export_cookie c;
    uint64_t *at, v;
    CHECK_ERR(kl_export(fd, buf, LEN, 0, &c), 0, "export");
    CHECK_ERR(kl_export_attach(fd, &c, 0, LEN, RD, (void **) &at), 0, "attach read-only");
    if (!at) {
        return;
    }
    kl_catch_faults();
    CHECK(0 == kl_load64(&at[0], &v) && 0xabcd == v, "read: %llx", (unsigned long long) v);
    CHECK(SIGSEGV == kl_store64(&at[0], 1), "a store to a read-only attachment: no SIGSEGV");

    int rc = madvise(at, LEN, MADV_DOFORK);
    CHECK(rc && EINVAL == errno, "madvise(MADV_DOFORK): %d (%s), expected EINVAL", rc,
          rc ? strerror(errno) : "accepted");
    if (rc && EINVAL == errno) {
        printf("  ok: madvise(MADV_DOFORK) on an attachment -> EINVAL\n");
    }
    pid_t pid = fork();
    if (0 == pid) {
        kl_catch_faults();
        int sig = kl_load64(&at[0], &v);
        _exit(SIGSEGV == sig ? 0 : sig ? 1 : 2);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "a child touches the attachment's address: "
          "%s", WIFEXITED(st) && 2 == WEXITSTATUS(st) ? "it READ the owner's memory" :
                                                      "not SIGSEGV");
    if (WIFEXITED(st) && 0 == WEXITSTATUS(st)) {
        printf("  ok: a forked child has nothing mapped there (SIGSEGV)\n");
    }

    rc = mprotect(at, LEN, PROT_READ | PROT_WRITE);
    CHECK(rc && EACCES == errno, "mprotect(PROT_WRITE) on a read-only attachment: %d (%s)",
          rc, rc ? strerror(errno) : "accepted");
    if (rc && EACCES == errno) {
        printf("  ok: mprotect(PROT_READ|PROT_WRITE) on a read-only attachment -> EACCES\n");
    }
    rc = mprotect(at, LEN, PROT_READ | PROT_EXEC);
    CHECK(rc && EACCES == errno, "mprotect(PROT_EXEC) on an attachment accepted");
    void *grown = mremap(at, LEN, 2 * LEN, 0);
    CHECK(MAP_FAILED == grown, "mremap grew an attachment");

    /* O_DIRECT read() into it: on tmpfs (6.6 and later) or the current directory. */
    static uint8_t data[2 * PAGE] __attribute__((aligned(4096)));
    memset(data, 0x77, sizeof(data));
    const char *where[] = {"/tmp/kmod_export.odirect", "kmod_export.odirect"};
    int tried = 0;
    for (int i = 0; i < 2 && !tried; i++) {
        int wfd = open(where[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (wfd < 0 || write(wfd, data, sizeof(data)) != (ssize_t) sizeof(data)) {
            if (wfd >= 0) {
                close(wfd);
            }
            continue;
        }
        close(wfd);
        int dfd = open(where[i], O_RDONLY | O_DIRECT);
        if (dfd >= 0) {
            ssize_t n = read(dfd, at, PAGE);
            int err = errno;
            tried = 1;
            CHECK(n < 0 && 0xabcd == buf[0], "O_DIRECT read() into a read-only attachment: "
                  "%zd (%s), the owner's word %llx", n, n < 0 ? strerror(err) : "read",
                  (unsigned long long) buf[0]);
            if (n < 0 && 0xabcd == buf[0]) {
                printf("  ok: O_DIRECT read() into it (%s) -> %s, the owner's memory "
                       "unchanged\n", where[i], kl_errno_name(err));
            }
            close(dfd);
        }
        unlink(where[i]);
    }
    if (!tried) {
        printf("  (no file system here takes O_DIRECT: that check did not run)\n");
    }

    int pfd[2];
    if (0 == pipe(pfd)) {
        struct iovec iov = {.iov_base = at, .iov_len = PAGE};
        ssize_t n = vmsplice(pfd[1], &iov, 1, SPLICE_F_GIFT);
        int err = errno;
        /* Whatever went into the pipe, writing the pipe's reader changes nothing here. */
        CHECK(n < 0, "vmsplice() from an attachment: %zd bytes", n);
        if (n < 0) {
            printf("  ok: vmsplice() from it -> %s\n", kl_errno_name(err));
        }
        close(pfd[0]);
        close(pfd[1]);
    }

    struct iovec local = {.iov_base = data, .iov_len = PAGE};
    struct iovec remote = {.iov_base = at, .iov_len = PAGE};
    ssize_t n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
    int err = errno;
    CHECK(n < 0 && 0xabcd == buf[0], "process_vm_writev() into a read-only attachment: %zd, "
          "the owner's word %llx", n, (unsigned long long) buf[0]);
    if (n < 0 && 0xabcd == buf[0]) {
        printf("  ok: process_vm_writev() into it -> %s, the owner's memory unchanged\n",
               kl_errno_name(err));
    }
    int mem = open("/proc/self/mem", O_RDWR);
    if (mem >= 0) {   /* FOLL_FORCE, as ptrace and debuggers write */
        n = pwrite(mem, data, 8, (off_t) (uintptr_t) at);
        CHECK(n < 0 && 0xabcd == buf[0], "/proc/self/mem write into a read-only attachment: "
              "%zd, the owner's word %llx", n, (unsigned long long) buf[0]);
        close(mem);
    }
    munmap(at, LEN);
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    munmap(buf, LEN);
}

/* ---- cost: a large export pins nothing ---- */

static long vm_pin_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmPin: %ld", &kb)) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb;
}

static void large_export(int fd)
{
    SECTION("1 GiB of address space, 4 MiB of it mapped, exported and attached whole");
    const size_t big = 1UL << 30, mapped = 4UL << 20, hole = 512UL << 20;
    uint8_t *base = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                         -1, 0);
    CHECK(MAP_FAILED != base, "reserve 1 GiB");
    if (MAP_FAILED == base) {
        return;
    }
    uint64_t *mem = (uint64_t *) (base + hole);
    CHECK(mem == mmap(mem, mapped, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), "map 4 MiB in it");
    kl_fill_words(mem, mapped, 0x7070);
    long long pinned0 = kl_counter("export_pages_pinned"),
              mapped0 = kl_counter("export_pages_mapped"), held0 = kl_counter("held_pages");
    struct knemlike_export_cookie c;
    uint64_t *at, v = 0;
    CHECK_ERR(kl_export(fd, base, big, 0, &c), 0, "export 1 GiB");
    CHECK_ERR(kl_export_attach(fd, &c, 0, big, RW, (void **) &at), 0, "attach 1 GiB");
    long long dp = kl_counter("export_pages_pinned") - pinned0,
              dm = kl_counter("export_pages_mapped") - mapped0;
    CHECK(0 == dp && 0 == dm && vm_pin_kb() == 0 && kl_counter("held_pages") == held0,
          "after attaching: %lld pages pinned, %lld mapped, VmPin %ld kB", dp, dm, vm_pin_kb());
    if (!at) {
        return;
    }
    kl_catch_faults();
    CHECK(0 == kl_load64(&at[(hole + PAGE) / 8], &v) && 0x7070 == v, "a read where memory is: "
          "%llx", (unsigned long long) v);
    int sig = kl_load64(&at[PAGE / 8], &v);
    CHECK(SIGBUS == sig, "a read of the reservation (PROT_NONE): signal %d", sig);
    sig = kl_load64(&at[(big - PAGE) / 8], &v);
    CHECK(SIGBUS == sig, "a read at the end of the reservation: signal %d", sig);
    dp = kl_counter("export_pages_pinned") - pinned0;
    dm = kl_counter("export_pages_mapped") - mapped0;
    CHECK(0 == dp && dm > 0 && dm <= 256 && vm_pin_kb() == 0, "after a touch: %lld pages "
          "pinned, %lld mapped (one window: at most 256), VmPin %ld kB", dp, dm, vm_pin_kb());
    if (0 == dp && dm > 0 && dm <= 256) {
        printf("  ok: attaching 1 GiB pinned and mapped nothing; a touch mapped %lld pages and "
               "left none pinned\n", dm);
    }
    munmap(at, big);
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    munmap(base, big);
}

/* ---- all of user space, attached by its own owner ---- */

static void *map_unmap(void *p)
{
    struct shm *s = p;
    while (!s->stop) {
        void *q = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (MAP_FAILED != q) {
            ((volatile uint8_t *) q)[0] = 1;
            munmap(q, 256 << 10);
        }
    }
    return NULL;
}

static void whole_space_child(void *p)
{
    struct shm *s = p;
    int fd = kl_open();
    const uintptr_t lo = 1UL << 16, hi = 0x7ffffffff000UL;   /* x86-64's user space */
    struct knemlike_export_cookie c;
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, LEN, 0), v;
    kl_fill_words(buf, LEN, 0x3131);
    CHECK_ERR(kl_export(fd, (void *) lo, hi - lo, 0, &c), 0, "export all of user space");
    pthread_t t;
    pthread_create(&t, NULL, map_unmap, s);
    long reads = 0, bad = 0;
    double end = kl_now() + 2;
    while (kl_now() < end) {
        uint64_t *at;
        if (kl_export_attach(fd, &c, (uintptr_t) buf - lo, LEN, RW, (void **) &at)) {
            bad++;
            break;
        }
        for (size_t i = 0; i < LEN / 8; i += 4099) {
            bad += kl_load64(&at[i], &v) || 0x3131 != v;
            reads++;
        }
        munmap(at, LEN);   /* an attachment inside its own export goes */
    }
    s->stop = 1;
    pthread_join(t, NULL);
    printf("  %ld reads through its own export, %ld wrong\n", reads, bad);
    CHECK(reads > 0 && 0 == bad, "%ld of %ld reads through its own export wrong", bad, reads);
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
}

static void whole_space(void)
{
    SECTION("a process exports all of its user space and attaches parts of its own export "
            "while a thread maps and unmaps");
    struct shm *s = kl_shared_page(PAGE);
    kl_reap(kl_spawn(whole_space_child, s), 20, "the process that attaches its own export");
    munmap(s, PAGE);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = kl_open();
    struct knemlike_info info = {0};
    CHECK(0 == kl_ioctl(fd, KNEMLIKE_IOC_GET_INFO, &info), "GET_INFO");
    CHECK(info.abi_version >= 3 && (info.features & KNEMLIKE_FEATURE_EXPORT),
          "ABI %u, features %#x: no exports", info.abi_version, info.features);
    long long live = kl_counter("exports_live"), atts = kl_counter("attachments");
    refusals(fd);
    coherence(fd);
    remap_storm(fd);
    destroy_while_reading(fd);
    owner_ends(fd, 0);
    owner_ends(fd, 1);
    containment(fd);
    large_export(fd);
    whole_space();
    close(fd);
    /* Exports are freed when their attachments go (orphans when the file closes). */
    kl_check_exports_back(live, atts);
    return kl_verdict("kmod_export");
}
