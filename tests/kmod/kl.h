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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* An ioctl result must be exactly this errno (0: success). */
#define CHECK_ERR(call, want, what)                                               \
    do {                                                                          \
        int kl_got_ = (call);                                                     \
        CHECK(kl_got_ == -(want), "%s: got %d (%s), expected %d (%s)", what,      \
              kl_got_, strerror(-kl_got_), -(want), strerror(want));              \
    } while (0)

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

static inline int kl_create(int fd, const struct knemlike_segment *segs, uint32_t nr,
                            uint32_t prot, uint32_t flags, uint64_t *cookie)
{
    struct knemlike_create c = {.segments = (uintptr_t) segs, .nr_segments = nr,
                                .prot = prot, .flags = flags};
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

/* A counter from /sys/class/misc/knemlike/stats/, or -1. */
static inline long long kl_counter(const char *name)
{
    char path[256];
    long long v = -1;
    snprintf(path, sizeof(path), "/sys/class/misc/knemlike/stats/%s", name);
    FILE *f = fopen(path, "r");
    if (f) {
        if (1 != fscanf(f, "%lld", &v)) {
            v = -1;
        }
        fclose(f);
    }
    return v;
}

static inline void kl_fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *b = buf;
    for (size_t i = 0; i < len; ++i) {
        b[i] = (uint8_t) (i * 131u + seed * 7u + (i >> 9));
    }
}

/* Pipe messages between a test and its helper process; a short one ends the process. */
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

static inline int kl_verdict(const char *name)
{
    printf("%s: %s (%d failure%s)\n", name, kl_failures ? "FAIL" : "PASS", kl_failures,
           1 == kl_failures ? "" : "s");
    return kl_failures ? 1 : 0;
}

#endif
