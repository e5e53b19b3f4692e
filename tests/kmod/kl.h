/*
 * Helpers of the knemlike kernel-module tests: thin wrappers over the ioctls that return
 * 0 or -errno, a CHECK macro that counts failures, and the sysfs counters.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef KL_H
#define KL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/knemlike.h>

static int kl_failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            kl_failures++;                                                        \
        }                                                                         \
    } while (0)

/* An ioctl result must be exactly this errno (0: success). Says what it checked the
 * first time a call site passes, so that the log lists every behaviour tested. */
#define CHECK_ERR(call, want, what)                                               \
    do {                                                                          \
        static int kl_said_;                                                      \
        int kl_got_ = (call);                                                     \
        CHECK(kl_got_ == -(want), "%s: got %d (%s), expected %d (%s)", what,      \
              kl_got_, strerror(-kl_got_), -(want), strerror(want));              \
        if (kl_got_ == -(want) && !kl_said_++) {                                  \
            printf("  ok: %s -> %s\n", what, (want) ? kl_errno_name(want) : "0"); \
        }                                                                         \
    } while (0)

/* A section of a test: what the checks below it are about. */
#define SECTION(...)                                                              \
    do {                                                                          \
        printf("-- ");                                                            \
        printf(__VA_ARGS__);                                                      \
        printf("\n");                                                             \
        fflush(stdout);                                                           \
    } while (0)

static inline const char *kl_errno_name(int e)
{
    switch (e) {
    case EINVAL: return "EINVAL";
    case E2BIG: return "E2BIG";
    case EMFILE: return "EMFILE";
    case ENOENT: return "ENOENT";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ERANGE: return "ERANGE";
    case EFAULT: return "EFAULT";
    case ESTALE: return "ESTALE";
    case ESRCH: return "ESRCH";
    case ENOTTY: return "ENOTTY";
    case EDQUOT: return "EDQUOT";
    case ENOSPC: return "ENOSPC";
    default: return strerror(e);
    }
}

static inline int kl_open(void)
{
    int fd = open("/dev/" KNEMLIKE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("open /dev/knemlike");
        exit(2);
    }
    return fd;
}

static inline int kl_ioctl(int fd, unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* Flags added to every region a test creates: KL_REGION_FLAGS in the environment (a
 * number), so that run-kmod-tests can run a test again with KNEMLIKE_FLAG_HOLD_PAGES. */
static inline uint32_t kl_region_flags(void)
{
    static long flags = -1;
    if (flags < 0) {
        const char *s = getenv("KL_REGION_FLAGS");
        flags = s ? strtol(s, NULL, 0) : 0;
    }
    return (uint32_t) flags;
}

static inline int kl_create(int fd, const struct knemlike_segment *segs, uint32_t nr,
                            uint32_t prot, uint32_t flags, uint64_t *cookie)
{
    struct knemlike_create c = {.segments = (uintptr_t) segs, .nr_segments = nr,
                                .prot = prot, .flags = flags | kl_region_flags()};
    int rc = kl_ioctl(fd, KNEMLIKE_IOC_CREATE, &c);
    if (0 == rc && cookie) {
        *cookie = c.cookie;
    }
    return rc;
}

static inline int kl_create1(int fd, void *addr, size_t len, uint32_t prot, uint32_t flags,
                             uint64_t *cookie)
{
    struct knemlike_segment s = {(uintptr_t) addr, len};
    return kl_create(fd, &s, 1, prot, flags, cookie);
}

static inline int kl_destroy(int fd, uint64_t cookie)
{
    struct knemlike_destroy d = {.cookie = cookie};
    return kl_ioctl(fd, KNEMLIKE_IOC_DESTROY, &d);
}

static inline int kl_copy(int fd, uint64_t cookie, uint64_t offset,
                          const struct knemlike_segment *segs, uint32_t nr, uint32_t dir,
                          uint64_t *bytes)
{
    struct knemlike_copy c = {.cookie = cookie, .offset = offset,
                              .local_segments = (uintptr_t) segs, .nr_local_segments = nr,
                              .direction = dir};
    int rc = kl_ioctl(fd, KNEMLIKE_IOC_COPY, &c);
    if (bytes) {
        *bytes = c.bytes;
    }
    return rc;
}

static inline int kl_copy1(int fd, uint64_t cookie, uint64_t offset, void *addr, size_t len,
                           uint32_t dir)
{
    struct knemlike_segment s = {(uintptr_t) addr, len};
    return kl_copy(fd, cookie, offset, &s, 1, dir, NULL);
}

/* KNEMLIKE_IOC_ATTACH: 0 or -errno; the request as the module left it in *out. */
static inline int kl_attach(int fd, uint64_t cookie, uint32_t prot, uint32_t flags,
                            struct knemlike_attach *out)
{
    struct knemlike_attach a = {.cookie = cookie, .prot = prot, .flags = flags};
    int rc = kl_ioctl(fd, KNEMLIKE_IOC_ATTACH, &a);
    if (out) {
        *out = a;
    }
    return rc;
}

/* KNEMLIKE_IOC_EXPORT: 0 or -errno; the cookie in *cookie. */
static inline int kl_export(int fd, void *addr, size_t len, uint32_t flags,
                            struct knemlike_export_cookie *cookie)
{
    struct knemlike_export_create e = {.addr = (uintptr_t) addr, .len = len, .flags = flags};
    int rc = kl_ioctl(fd, KNEMLIKE_IOC_EXPORT, &e);
    if (0 == rc && cookie) {
        *cookie = e.cookie;
    }
    return rc;
}

static inline int kl_export_destroy(int fd, const struct knemlike_export_cookie *cookie)
{
    struct knemlike_export_destroy d = {.cookie = *cookie};
    return kl_ioctl(fd, KNEMLIKE_IOC_EXPORT_DESTROY, &d);
}

/* KNEMLIKE_IOC_EXPORT_ATTACH of [offset, offset + len): 0 or -errno; where in *addr. */
static inline int kl_export_attach(int fd, const struct knemlike_export_cookie *cookie,
                                   uint64_t offset, uint64_t len, uint32_t prot, void **addr)
{
    struct knemlike_export_attach a = {.cookie = *cookie, .offset = offset, .len = len,
                                       .prot = prot};
    int rc = kl_ioctl(fd, KNEMLIKE_IOC_EXPORT_ATTACH, &a);
    if (addr) {
        *addr = rc ? NULL : (void *) (uintptr_t) a.addr;
    }
    return rc;
}

/* A copy run in a thread of its own (kl_copier_run as its start routine), from or to one
 * local buffer: its result, its count, and whether it has ended. */
struct kl_copier {
    int fd;
    uint64_t cookie, offset;
    void *local;
    size_t len;
    uint32_t dir;
    int rc;
    uint64_t bytes;
    volatile int done;
};

static inline void *kl_copier_run(void *arg)
{
    struct kl_copier *c = (struct kl_copier *) arg;
    struct knemlike_segment s = {(uintptr_t) c->local, c->len};
    c->rc = kl_copy(c->fd, c->cookie, c->offset, &s, 1, c->dir, &c->bytes);
    c->done = 1;
    return NULL;
}

/* The number in a sysfs file, or -1. */
static inline long long kl_read_number(const char *dir, const char *name)
{
    char path[256];
    long long v = -1;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f) {
        if (1 != fscanf(f, "%lld", &v)) {
            v = -1;
        }
        fclose(f);
    }
    return v;
}

/* A counter from /sys/class/misc/knemlike/stats/, or -1. */
static inline long long kl_counter(const char *name)
{
    return kl_read_number("/sys/class/misc/knemlike/stats", name);
}

static inline void kl_fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *b = buf;
    for (size_t i = 0; i < len; ++i) {
        b[i] = (uint8_t) (i * 131u + seed * 7u + (i >> 9));
    }
}

/* Pipe messages between a test and its helper process; a short one ends the process. */
/* len bytes of new anonymous memory filled from seed: anywhere when at is NULL, else in
 * place of what is mapped there (MAP_FIXED). Exits on failure. */
static inline uint8_t *kl_map_filled(void *at, size_t len, unsigned seed)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0);
    uint8_t *p = (uint8_t *) mmap(at, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (MAP_FAILED == p) {
        perror("mmap");
        exit(2);
    }
    kl_fill(p, len, seed);
    return p;
}

static inline void kl_xwrite(int fd, const void *buf, size_t n)
{
    if (write(fd, buf, n) != (ssize_t) n) {
        perror("write");
        _exit(2);
    }
}

static inline void kl_xread(int fd, void *buf, size_t n)
{
    if (read(fd, buf, n) != (ssize_t) n) {
        perror("read");
        _exit(2);
    }
}

/* ---- touches of memory that may fault, each reporting the signal it got (per thread:
 * kl_catch_faults() once per process, then any thread may touch) ---- */

static __thread sigjmp_buf kl_touch_env;
static __thread volatile sig_atomic_t kl_touch_sig;

static void kl_on_fault(int sig)
{
    kl_touch_sig = sig;
    siglongjmp(kl_touch_env, 1);
}

static inline void kl_catch_faults(void)
{
    struct sigaction sa = {.sa_handler = kl_on_fault};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
}

/* Read the byte at p: 0 and *byte, or the signal the read got. */
static inline int kl_touch(const volatile uint8_t *p, uint8_t *byte)
{
    kl_touch_sig = 0;
    if (!sigsetjmp(kl_touch_env, 1)) {
        uint8_t b = *p;
        if (byte) {
            *byte = b;
        }
    }
    return kl_touch_sig;
}

/* Read the word at p: 0 and *v, or the signal the read got. */
static inline int kl_load64(const volatile uint64_t *p, uint64_t *v)
{
    kl_touch_sig = 0;
    if (!sigsetjmp(kl_touch_env, 1)) {
        uint64_t x = *p;
        if (v) {
            *v = x;
        }
    }
    return kl_touch_sig;
}

/* Store v at p: 0, or the signal the store got. */
static inline int kl_store64(volatile uint64_t *p, uint64_t v)
{
    kl_touch_sig = 0;
    if (!sigsetjmp(kl_touch_env, 1)) {
        *p = v;
    }
    return kl_touch_sig;
}

/* ---- processes and memory shared with them ---- */

static inline double kl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* len bytes of MAP_SHARED memory, zeroed, that a test and its children see alike. */
static inline void *kl_shared_page(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == p) {
        perror("mmap");
        exit(2);
    }
    memset(p, 0, len);
    return p;
}

static inline void kl_fill_words(void *buf, size_t len, uint64_t v)
{
    uint64_t *w = buf;
    for (size_t i = 0; i < len / 8; i++) {
        w[i] = v;
    }
}

/* Fork a child that runs fn(arg), catching SIGBUS and SIGSEGV (kl_touch), and exits with
 * its failure count (capped). */
static inline pid_t kl_spawn(void (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (0 == pid) {
        kl_failures = 0;   /* its own, not the test's so far */
        kl_catch_faults();
        fn(arg);
        _exit(kl_failures > 100 ? 100 : kl_failures);
    }
    return pid;
}

/* Wait for a child; CHECK that it exited 0 within secs (else it is killed). */
static inline void kl_reap(pid_t pid, double secs, const char *what)
{
    int st = 0;
    double end = kl_now() + secs;
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (kl_now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            CHECK(0, "%s: did not end within %.0f s (killed)", what, secs);
            return;
        }
        usleep(10000);
    }
    CHECK(WIFEXITED(st) && 0 == WEXITSTATUS(st), "%s: %s %d", what,
          WIFEXITED(st) ? "exit status" : "killed by signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* exports_live and attachments back where they were (live, atts): every export freed
 * once its last attachment went. */
static inline void kl_check_exports_back(long long live, long long atts)
{
    CHECK(kl_counter("exports_live") == live, "exports_live %lld, expected %lld",
          kl_counter("exports_live"), live);
    CHECK(kl_counter("attachments") == atts, "attachments %lld, expected %lld",
          kl_counter("attachments"), atts);
}

/* Set a module parameter (the guest runs as root); returns 0 or -errno. */
static inline int kl_set_param(const char *name, const char *value)
{
    char path[256];
    snprintf(path, sizeof(path), "/sys/module/knemlike/parameters/%s", name);
    int fd = open(path, O_WRONLY);
    if (fd < 0) {
        return -errno;
    }
    int rc = write(fd, value, strlen(value)) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static inline long long kl_get_param(const char *name)
{
    return kl_read_number("/sys/module/knemlike/parameters", name);
}

static inline int kl_verdict(const char *name)
{
    printf("%s: %s (%d failure%s)\n", name, kl_failures ? "FAIL" : "PASS", kl_failures,
           1 == kl_failures ? "" : "s");
    return kl_failures ? 1 : 0;
}

#endif
