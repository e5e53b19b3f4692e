/*
 * Exports, hardened (issue 62): what kmod_export's checks leave open. One section each;
 * `kmod_export_hard [SECTION...]` runs the sections named, all by default:
 * - creds: an export serves only while its owner's ids and dumpability are what they were
 *   at EXPORT. The owner (uid 1000, saved uid 0) raises its effective uid to 0, or makes
 *   itself non-dumpable; a peer of uid 1000 then gets EPERM from ATTACH and SIGBUS from
 *   the attachment it had, never what the owner wrote since, as process_vm_readv gets
 *   EPERM; exports_revoked counts both;
 * - window: a touch of a present page whose fault window begins on a page that cannot be
 *   pinned (missing under userfaultfd) reads the page;
 * - loads: a load through a writable attachment writes nothing of the owner's: it breaks
 *   no copy-on-write (the owner's pages stay shared with its child, /proc/self/pagemap),
 *   and reads memory under userfaultfd write protection; a store after the attacher's own
 *   mprotect(PROT_READ) and back lands;
 * - charges: another user's touches of an ANY_USER export, and another user's attachment
 *   of an export destroyed since, leave the owner's max_user_kb to the owner: it can still
 *   make as many exports as it could before;
 * - process: an export ends with the process that made it: after it execs while a
 *   CLONE_VM sibling keeps its address space, and after a vfork child that exported exits,
 *   ATTACH gets ESRCH and a touch SIGBUS;
 * - descriptor: a process of another uid cannot EXPORT through a descriptor it was passed
 *   (EPERM), so it neither takes the owner's slots nor leaves exports the owner cannot
 *   DESTROY.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <linux/userfaultfd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define PAGE 4096UL
#define WIN (256 * PAGE)   /* a touch's fault window, one chunk of the export */
#define RD KNEMLIKE_PROT_READ
#define RW (KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE)

/* What a test and the processes it starts share. */
struct shm {
    struct knemlike_export_cookie cookie;
    volatile int step, ack;
    volatile int variant;
    volatile pid_t pid;
    int fd;   /* the test's open file, inherited */
};

/* Wait until *v reaches at least value (20 s at most: then the process ends, status 9). */
static void await(const volatile int *v, int value)
{
    double end = kl_now() + 20;
    while (*v < value) {
        if (kl_now() > end) {
            fprintf(stderr, "timed out waiting for step %d\n", value);
            _exit(9);
        }
        usleep(1000);
    }
}

static void become(uid_t ruid, uid_t euid, uid_t suid)
{
    if (setresuid(ruid, euid, suid)) {
        perror("setresuid");
        _exit(3);
    }
}

/* A thread of a child process, with its own stack (clone). */
static pid_t clone_with_stack(int (*fn)(void *), void *arg, int flags)
{
    const size_t size = 256 << 10;
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pid_t pid = MAP_FAILED == stack ? -1 : clone(fn, stack + size, flags, arg);
    if (pid < 0) {
        perror("clone");
        exit(2);
    }
    return pid;
}

/* A userfaultfd that nobody reads, registered over [addr, addr + len) in mode. */
static int uffd_register(void *addr, size_t len, unsigned long long mode)
{
    int uffd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.range = {.start = (uintptr_t) addr, .len = len},
                                  .mode = mode};
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
        perror("userfaultfd");
        exit(2);
    }
    return uffd;
}

/* ---- creds ---- */

#define OLD 0x01d0000000000001ULL      /* what the owner held at EXPORT */
#define SECRET 0x5ec7e70000000002ULL   /* what it writes once its credentials changed */

static void creds_owner(void *p)
{
    struct shm *s = p;
    become(1000, 1000, s->variant ? 1000 : 0);
    /* as a process started as uid 1000 is (setresuid from root dropped it) */
    CHECK(0 == prctl(PR_SET_DUMPABLE, 1), "prctl(PR_SET_DUMPABLE, 1)");
    int fd = kl_open();
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, 2 * WIN, 0);
    kl_fill_words(buf, 2 * WIN, OLD);
    CHECK_ERR(kl_export(fd, buf, 2 * WIN, 0, &s->cookie), 0, "uid 1000 exports 2 MiB");
    s->step = 1;
    await(&s->ack, 1);
    if (s->variant) {
        CHECK(0 == prctl(PR_SET_DUMPABLE, 0), "prctl(PR_SET_DUMPABLE, 0)");
    } else {
        become(-1, 0, -1);   /* effective uid 0: the kernel makes it non-dumpable */
    }
    kl_fill_words(buf, 2 * WIN, SECRET);
    s->step = 2;
    await(&s->ack, 2);
    close(fd);
}

static void creds_peer(void *p)
{
    struct shm *s = p;
    const char *what = s->variant ? "made itself non-dumpable" : "raised its euid to 0";
    uint64_t *at = NULL, v = 0, word;
    void *again;
    become(1000, 1000, 1000);
    int fd = kl_open();
    await(&s->step, 1);
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, 2 * WIN, RD, (void **) &at), 0,
              "uid 1000 attaches the export");
    if (!at) {
        _exit(1);
    }
    CHECK(0 == kl_load64(&at[1], &v) && OLD == v, "a read before the change: %llx",
          (unsigned long long) v);
    s->ack = 1;
    await(&s->step, 2);

    struct iovec local = {.iov_base = &word, .iov_len = 8}, remote = {.iov_base = at, .iov_len = 8};
    errno = 0;
    CHECK(process_vm_readv(s->pid, &local, 1, &remote, 1, 0) < 0 && EPERM == errno,
          "process_vm_readv of the owner that %s: %s, expected EPERM", what, strerror(errno));
    if (s->variant) {   /* found at ATTACH */
        CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, PAGE, RD, &again), EPERM,
                  "ATTACH after the owner made itself non-dumpable");
    } else {            /* found by a touch that takes pages */
        int sig = kl_load64(&at[WIN / 8], &v);
        CHECK(SIGBUS == sig, "a touch of a window not mapped before, after the owner %s: "
              "signal %d, read %llx", what, sig, sig ? 0ULL : (unsigned long long) v);
    }
    int sig = kl_load64(&at[1], &v);
    CHECK(SIGBUS == sig, "a touch of the page mapped before, after the owner %s: signal %d, "
          "read %llx%s", what, sig, sig ? 0ULL : (unsigned long long) v,
          !sig && SECRET == v ? " (what it wrote since)" : "");
    if (!s->variant) {
        CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, PAGE, RD, &again), EPERM,
                  "ATTACH after the owner raised its euid to 0");
    }
    s->ack = 2;
    close(fd);
}

static void creds(void)
{
    long long revoked = kl_counter("exports_revoked");
    for (int variant = 0; variant < 2; variant++) {
        SECTION("creds: the owner %s after EXPORT", variant ? "makes itself non-dumpable"
                                                            : "(saved uid 0) raises its euid to 0");
        struct shm *s = kl_shared_page(PAGE);
        s->variant = variant;
        s->pid = kl_spawn(creds_owner, s);
        pid_t peer = kl_spawn(creds_peer, s);
        kl_reap(peer, 30, "the peer");
        kl_reap(s->pid, 30, "the owner");
        munmap(s, PAGE);
    }
    long long moved = kl_counter("exports_revoked") - revoked;
    CHECK(revoked >= 0 && 2 == moved, "exports_revoked moved by %lld, expected 2", moved);
    if (revoked >= 0 && 2 == moved) {
        printf("  ok: both exports revoked (exports_revoked +2)\n");
    }
}

/* ---- window ---- */

static void window(int fd)
{
    SECTION("window: a present page whose fault window begins on a page that cannot be "
            "pinned (missing under userfaultfd)");
    uint8_t *buf = mmap(NULL, WIN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct knemlike_export_cookie c;
    uint64_t *at = NULL, v = 0;
    kl_fill_words(buf + PAGE, WIN - PAGE, 0x77);   /* every page present but the first */
    int uffd = uffd_register(buf, WIN, UFFDIO_REGISTER_MODE_MISSING);
    CHECK_ERR(kl_export(fd, buf, WIN, 0, &c), 0, "export 1 MiB, its first page missing");
    CHECK_ERR(kl_export_attach(fd, &c, 0, WIN, RD, (void **) &at), 0, "attach it");
    if (at) {
        int sig = kl_load64(&at[5 * PAGE / 8], &v);
        CHECK(0 == sig && 0x77 == v, "a touch of page 5: signal %d, read %llx", sig,
              (unsigned long long) v);
        if (0 == sig && 0x77 == v) {
            printf("  ok: page 5 read though page 0 of its window cannot be pinned\n");
        }
        sig = kl_load64(&at[0], &v);
        CHECK(SIGBUS == sig, "a touch of the missing page itself: signal %d", sig);
        munmap(at, WIN);
    }
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    close(uffd);
    munmap(buf, WIN);
}

/* ---- loads ---- */

/* How many of the pages of [buf, buf + len) only this process maps (pagemap bit 56). */
static int exclusive_pages(const void *buf, size_t len)
{
    int pm = open("/proc/self/pagemap", O_RDONLY), n = 0;
    for (size_t off = 0; pm >= 0 && off < len; off += PAGE) {
        uint64_t e = 0;
        if (pread(pm, &e, 8, (off_t) (((uintptr_t) buf + off) / PAGE * 8)) == 8) {
            n += (int) (e >> 56 & 1);
        }
    }
    if (pm >= 0) {
        close(pm);
    }
    return pm < 0 ? -1 : n;
}

/* Export [buf, buf + len) and attach it read-write: the attachment, or NULL. */
static uint64_t *export_rw(int fd, void *buf, size_t len, struct knemlike_export_cookie *c)
{
    void *at = NULL;
    CHECK_ERR(kl_export(fd, buf, len, 0, c), 0, "export");
    CHECK_ERR(kl_export_attach(fd, c, 0, len, RW, &at), 0, "attach it read-write");
    return at;
}

static void loads_cow(int fd)
{
    SECTION("loads: a load through a writable attachment breaks no copy-on-write");
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, WIN, 0), v = 0;
    struct knemlike_export_cookie c;
    int pfd[2];
    kl_fill_words(buf, WIN, 0x10ad);
    if (pipe(pfd)) {
        perror("pipe");
        exit(2);
    }
    pid_t child = fork();
    if (0 == child) {   /* holds the pages copy-on-write until the pipe closes */
        char x;
        close(pfd[1]);
        _exit(read(pfd[0], &x, 1) == 0 && 0x10ad == buf[5] ? 0 : 1);
    }
    close(pfd[0]);
    int before = exclusive_pages(buf, WIN);
    uint64_t *at = export_rw(fd, buf, WIN, &c);
    if (at) {
        CHECK(0 == kl_load64(&at[3], &v) && 0x10ad == v, "a load: %llx", (unsigned long long) v);
        int after = exclusive_pages(buf, WIN);
        CHECK(0 == before && 0 == after, "the owner's pages only it maps: %d before the load, "
              "%d after (copy-on-write broken by a load)", before, after);
        if (0 == before && 0 == after) {
            printf("  ok: after a load all %lu pages still shared with the owner's child\n",
                   WIN / PAGE);
        }
        CHECK(0 == kl_store64(&at[5], 0x5a5a) && 0x5a5a == buf[5], "a store: the owner reads "
              "%llx", (unsigned long long) buf[5]);
        munmap(at, WIN);
    }
    close(pfd[1]);
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "the owner's child saw the store");
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    munmap(buf, WIN);
}

static void loads_uffd_wp(int fd)
{
    SECTION("loads: memory under userfaultfd write protection reads, and refuses stores");
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, WIN, 0), v = 0;
    struct knemlike_export_cookie c;
    kl_fill_words(buf, WIN, 0x3030);
    int uffd = uffd_register(buf, WIN, UFFDIO_REGISTER_MODE_WP);
    struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t) buf, .len = WIN},
                                     .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
        perror("UFFDIO_WRITEPROTECT");
        exit(2);
    }
    uint64_t *at = export_rw(fd, buf, WIN, &c);
    if (at) {
        int sig = kl_load64(&at[7], &v);
        CHECK(0 == sig && 0x3030 == v, "a load of write-protected memory: signal %d, read %llx",
              sig, (unsigned long long) v);
        if (0 == sig && 0x3030 == v) {
            printf("  ok: a load of write-protected memory reads it\n");
        }
        sig = kl_store64(&at[8], 1);
        CHECK(SIGBUS == sig && 0x3030 == buf[8], "a store into it: signal %d, the owner's word "
              "%llx", sig, (unsigned long long) buf[8]);
        munmap(at, WIN);
    }
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    close(uffd);
    munmap(buf, WIN);
}

static void loads_mprotect(int fd)
{
    SECTION("loads: a store after the attacher's own mprotect(PROT_READ) and back");
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, WIN, 0), v = 0;
    struct knemlike_export_cookie c;
    uint64_t *at = export_rw(fd, buf, WIN, &c);
    const size_t w = 3 * PAGE / 8;   /* a word of a page only loaded so far */
    kl_fill_words(buf, WIN, 0x4141);
    if (at) {
        CHECK(0 == kl_load64(&at[0], &v) && 0x4141 == v, "a load: %llx", (unsigned long long) v);
        CHECK(0 == mprotect(at, WIN, PROT_READ), "mprotect(PROT_READ) of the attachment");
        CHECK(0 == kl_load64(&at[w], &v) && 0x4141 == v, "a load: %llx", (unsigned long long) v);
        CHECK(0 == mprotect(at, WIN, PROT_READ | PROT_WRITE), "mprotect back to read-write");
        int sig = kl_store64(&at[w], 2);
        CHECK(0 == sig && 2 == buf[w], "a store after mprotect back: signal %d, the owner's "
              "word %llx", sig, (unsigned long long) buf[w]);
        if (0 == sig && 2 == buf[w]) {
            printf("  ok: a store after mprotect(PROT_READ) and back lands\n");
        }
        munmap(at, WIN);
    }
    CHECK_ERR(kl_export_destroy(fd, &c), 0, "destroy");
    munmap(buf, WIN);
}

static void loads(int fd)
{
    loads_cow(fd);
    loads_uffd_wp(fd);
    loads_mprotect(fd);
}

/* ---- charges ---- */

#define CHARGES_KB "8"       /* max_user_kb for the section: a few exports */
#define TOUCHED 96           /* windows the other user touches: 96 bitmaps, over 4 KiB */

/* Make one-page exports through fd until ENOSPC or n; destroy them; how many were made. */
static int exports_possible(int fd, void *page, int n)
{
    struct knemlike_export_cookie c[16];
    int made = 0;
    while (made < n && made < 16 && 0 == kl_export(fd, page, PAGE, 0, &c[made])) {
        made++;
    }
    for (int i = 0; i < made; i++) {
        kl_export_destroy(fd, &c[i]);
    }
    return made;
}

static void charges_owner(void *p)
{
    struct shm *s = p;
    become(2000, 2000, 2000);
    int fd = kl_open();
    void *page = kl_map_filled(NULL, PAGE, 0);
    int most = exports_possible(fd, page, 16);
    CHECK(most >= 2 && most < 16, "uid 2000 can make %d exports under max_user_kb=%s", most,
          CHARGES_KB);
    uint8_t *big = mmap(NULL, TOUCHED * WIN, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK_ERR(kl_export(fd, big, TOUCHED * WIN, KNEMLIKE_EXPORT_ANY_USER, &s->cookie), 0,
              "export 96 MiB to any user");
    s->step = 1;
    await(&s->ack, 1);   /* uid 2001 touched a page of every window */
    int made = exports_possible(fd, page, most - 1);
    CHECK(made == most - 1, "after another user's touches of its export the owner made %d of "
          "%d more exports (the touches were charged to it)", made, most - 1);
    s->step = 2;
    await(&s->ack, 2);   /* and unmapped them */
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy it");
    CHECK_ERR(kl_export(fd, page, PAGE, KNEMLIKE_EXPORT_ANY_USER, &s->cookie), 0,
              "export a page to any user");
    s->step = 3;
    await(&s->ack, 3);   /* uid 2001 attached it */
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy it, attached");
    made = exports_possible(fd, page, most);
    CHECK(made == most, "with another user's attachment outliving its export the owner made "
          "%d of %d exports (the export still charged to it)", made, most);
    if (made == most) {
        printf("  ok: neither another user's touches nor its attachment count against the "
               "owner's max_user_kb\n");
    }
    s->step = 4;
    await(&s->ack, 4);
    close(fd);
}

static void charges_peer(void *p)
{
    struct shm *s = p;
    uint8_t *at = NULL;
    become(2001, 2001, 2001);
    int fd = kl_open();
    await(&s->step, 1);
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, TOUCHED * WIN, RD, (void **) &at), 0,
              "uid 2001 attaches it");
    int sigs = 0;
    for (int i = 0; at && i < TOUCHED; i++) {
        sigs += 0 != kl_touch(at + i * WIN, NULL);
    }
    CHECK(0 == sigs, "%d of %d touches of another user's export got a signal", sigs, TOUCHED);
    s->ack = 1;
    await(&s->step, 2);
    if (at) {
        munmap(at, TOUCHED * WIN);
    }
    s->ack = 2;
    await(&s->step, 3);
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, PAGE, RD, (void **) &at), 0,
              "uid 2001 attaches the page");
    s->ack = 3;
    await(&s->step, 4);
    s->ack = 4;
    close(fd);
}

static void charges(void)
{
    SECTION("charges: another user's touches and attachments, and the owner's max_user_kb");
    long long kb = kl_get_param("max_user_kb");
    char v[32];
    CHECK(0 == kl_set_param("max_user_kb", CHARGES_KB), "set max_user_kb=%s", CHARGES_KB);
    struct shm *s = kl_shared_page(PAGE);
    pid_t owner = kl_spawn(charges_owner, s), peer = kl_spawn(charges_peer, s);
    kl_reap(peer, 60, "the other user");
    kl_reap(owner, 60, "the owner");
    munmap(s, PAGE);
    snprintf(v, sizeof(v), "%lld", kb);
    CHECK(0 == kl_set_param("max_user_kb", v), "restore max_user_kb");
}

/* ---- process ---- */

static int sleeper(void *arg)
{
    (void) arg;
    for (;;) {
        pause();
    }
    return 0;
}

/* Exports through the test's open file, starts a CLONE_VM sibling, then execs. */
static void execing_owner(void *p)
{
    struct shm *s = p;
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, 2 * WIN, 0);
    kl_fill_words(buf, 2 * WIN, 0xbed);
    CHECK_ERR(kl_export(s->fd, buf, 2 * WIN, 0, &s->cookie), 0, "export 2 MiB");
    s->pid = clone_with_stack(sleeper, NULL, CLONE_VM | SIGCHLD);
    s->step = 1;
    await(&s->ack, 1);
    execl("/bin/sleep", "sleep", "30", (char *) NULL);
    _exit(3);
}

/* Whether the process runs /bin/sleep now. */
static int runs_sleep(pid_t pid)
{
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(comm, sizeof(comm), f)) {
            comm[0] = 0;
        }
        fclose(f);
    }
    return 0 == strcmp(comm, "sleep\n");
}

static void process_exec(int fd)
{
    SECTION("process: the owner execs while a CLONE_VM sibling keeps its address space");
    struct shm *s = kl_shared_page(PAGE);
    uint64_t *at = NULL, v = 0;
    void *again;
    long long orphaned = kl_counter("exports_orphaned");
    s->fd = fd;
    prctl(PR_SET_CHILD_SUBREAPER, 1);   /* the sibling comes back to be reaped */
    pid_t owner = kl_spawn(execing_owner, s);
    await(&s->step, 1);
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, 2 * WIN, RD, (void **) &at), 0, "attach");
    CHECK(at && 0 == kl_load64(&at[1], &v) && 0xbed == v, "a read before the exec: %llx",
          (unsigned long long) v);
    s->ack = 1;
    double end = kl_now() + 10;
    while (!runs_sleep(owner) && kl_now() < end) {
        usleep(1000);
    }
    CHECK(runs_sleep(owner), "the owner did not exec");
    if (at) {
        int sig = kl_load64(&at[WIN / 8], &v);
        CHECK(SIGBUS == sig, "a touch of a window not mapped before, after the exec: signal %d, "
              "read %llx", sig, sig ? 0ULL : (unsigned long long) v);
        sig = kl_load64(&at[1], &v);
        CHECK(SIGBUS == sig, "a touch of the page mapped before, after the exec: signal %d", sig);
        if (SIGBUS == sig) {
            printf("  ok: touches after the owner exec'd -> SIGBUS\n");
        }
        munmap(at, 2 * WIN);
    }
    CHECK_ERR(kl_export_attach(fd, &s->cookie, 0, PAGE, RD, &again), ESRCH,
              "ATTACH after the owner exec'd (its sibling keeps the old address space)");
    CHECK(kl_counter("exports_orphaned") > orphaned, "exports_orphaned did not move");
    CHECK_ERR(kl_export_destroy(fd, &s->cookie), 0, "destroy");
    kill(owner, SIGKILL);
    kill(s->pid, SIGKILL);
    waitpid(owner, NULL, 0);
    waitpid(s->pid, NULL, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    munmap(s, PAGE);
}

struct vfork_arg {
    int fd, rc;
    void *buf;
    struct knemlike_export_cookie cookie;
};

/* A vfork child: exports the memory it shares with its parent, and exits. */
static int vfork_exporter(void *p)
{
    struct vfork_arg *a = p;
    a->rc = kl_export(a->fd, a->buf, WIN, 0, &a->cookie);
    _exit(0);
}

static void process_vfork(int fd)
{
    SECTION("process: a vfork child exports, and exits");
    struct vfork_arg a = {.fd = fd};
    uint64_t *buf = (uint64_t *) kl_map_filled(NULL, WIN, 0), *at = NULL;
    kl_fill_words(buf, WIN, 0x7f07);
    a.buf = buf;
    pid_t pid = clone_with_stack(vfork_exporter, &a, CLONE_VM | CLONE_VFORK | SIGCHLD);
    waitpid(pid, NULL, 0);
    CHECK(0 == a.rc, "the vfork child's EXPORT: %d", a.rc);
    int rc = kl_export_attach(fd, &a.cookie, 0, WIN, RD, (void **) &at);
    uint64_t v = 0;
    int read = at && 0 == kl_load64(&at[0], &v) && 0x7f07 == v;
    CHECK(-ESRCH == rc, "ATTACH of the export of a vfork child that exited: %d (%s)%s", rc,
          strerror(-rc), read ? ", and it reads its parent's memory" : "");
    if (-ESRCH == rc) {
        printf("  ok: ATTACH of the export of a vfork child that exited -> ESRCH\n");
    }
    if (at) {
        munmap(at, WIN);
    }
    CHECK_ERR(kl_export_destroy(fd, &a.cookie), 0, "destroy");
    munmap(buf, WIN);
}

/* ---- descriptor ---- */

static void descriptor_child(void *p)
{
    struct shm *s = p;
    struct knemlike_export_cookie c;
    void *page = kl_map_filled(NULL, PAGE, 0);
    become(65534, 65534, 65534);
    CHECK_ERR(kl_export(s->fd, page, PAGE, 0, &c), EPERM,
              "uid 65534 exports through a descriptor root opened");
    int fd = kl_open();
    CHECK_ERR(kl_export(fd, page, PAGE, 0, &c), 0, "and through its own");
    close(fd);
}

static void descriptor(int fd)
{
    SECTION("descriptor: EXPORT through a descriptor passed to another user");
    struct shm *s = kl_shared_page(PAGE);
    s->fd = fd;
    kl_reap(kl_spawn(descriptor_child, s), 30, "the other user");
    munmap(s, PAGE);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = kl_open(), all = argc < 2;
    long long live = kl_counter("exports_live"), atts = kl_counter("attachments");
    kl_catch_faults();
    for (int i = 1; i < argc; i++) {
        char word[64];
        snprintf(word, sizeof(word), " %s ", argv[i]);
        if (!strstr(" creds window loads charges process descriptor ", word)) {
            fprintf(stderr, "usage: %s [creds|window|loads|charges|process|descriptor]...\n",
                    argv[0]);
            return 2;
        }
    }
#define RUN(name, call)                                                            \
    for (int i = 1; all || i < argc; i++) {                                        \
        if (all || 0 == strcmp(argv[i], name)) {                                   \
            call;                                                                  \
            break;                                                                 \
        }                                                                          \
    }
    RUN("creds", creds());
    RUN("window", window(fd));
    RUN("loads", loads(fd));
    RUN("charges", charges());
    RUN("process", (process_exec(fd), process_vfork(fd)));
    RUN("descriptor", descriptor(fd));
    close(fd);
    kl_check_exports_back(live, atts);
    return kl_verdict("kmod_export_hard");
}
