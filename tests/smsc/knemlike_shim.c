/*
 * An LD_PRELOAD shim for tests/check-knemlike-host.sh: on a host without the module, it
 * plays a knemlike device from another release, so that smsc/knemlike's refusals can be
 * tested there.
 *
 *   KNEMLIKE_SHIM_DEVICE=PATH   open(), open64() and openat() of exactly PATH open /dev/null
 *                               instead, and KNEMLIKE_IOC_GET_INFO on such a file answers
 *                               like a module one ABI version ahead of this header
 *   KNEMLIKE_SHIM_OPEN=EACCES   opening PATH fails with EACCES instead (EPERM likewise)
 *
 * Every other call, and every other ioctl on such a file, goes to the C library.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#undef _FORTIFY_SOURCE /* its inline open() would collide with ours */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/knemlike.h>

/* Which descriptors are our stand-ins for the device (one byte each, set and read
 * atomically: the MPI library opens and closes files from several threads). */
#define SHIM_MAX_FD 65536
static unsigned char shim_is_device[SHIM_MAX_FD];

static void *shim_next(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn) {
        static const char msg[] = "knemlike_shim: a C library function is missing\n";
        (void) !write(2, msg, sizeof(msg) - 1);
        abort();
    }
    return fn;
}

static void shim_mark(int fd, unsigned char is_device)
{
    if (0 <= fd && fd < SHIM_MAX_FD) {
        __atomic_store_n(&shim_is_device[fd], is_device, __ATOMIC_RELEASE);
    }
}

static int shim_marked(int fd)
{
    return 0 <= fd && fd < SHIM_MAX_FD && __atomic_load_n(&shim_is_device[fd], __ATOMIC_ACQUIRE);
}

/* 0: PATH is not the device; 1: open the stand-in; -1: fail with errno set. */
static int shim_claims(const char *path)
{
    const char *device = getenv("KNEMLIKE_SHIM_DEVICE");
    if (!device || !path || strcmp(device, path)) {
        return 0;
    }
    const char *fail = getenv("KNEMLIKE_SHIM_OPEN");
    if (fail && 0 == strcmp(fail, "EACCES")) {
        errno = EACCES;
        return -1;
    }
    if (fail && 0 == strcmp(fail, "EPERM")) {
        errno = EPERM;
        return -1;
    }
    return 1;
}

/* The stand-in: /dev/null, opened with the caller's access mode and descriptor flags. */
static int shim_open_device(int flags)
{
    int (*next_open)(const char *, int, ...) = shim_next("open");
    int fd = next_open("/dev/null", flags & (O_ACCMODE | O_CLOEXEC | O_NONBLOCK));
    shim_mark(fd, 1);
    return fd;
}

/* The mode argument exists only when the flags create a file. */
static mode_t shim_mode(int flags, va_list ap)
{
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        return (mode_t) va_arg(ap, int);
    }
    return 0;
}

/* What open() and open64() do, with the C library's function of that name for the rest. */
static int shim_open_path(const char *next_name, const char *path, int flags, mode_t mode)
{
    int claimed = shim_claims(path);
    if (claimed) {
        return claimed < 0 ? -1 : shim_open_device(flags);
    }
    int (*next)(const char *, int, ...) = shim_next(next_name);
    return next(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = shim_mode(flags, ap);
    va_end(ap);
    return shim_open_path("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = shim_mode(flags, ap);
    va_end(ap);
    return shim_open_path("open64", path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = shim_mode(flags, ap);
    va_end(ap);
    if (shim_claims(path)) { /* (asked again below: errno is set there) */
        return shim_open_path("open", path, flags, mode);
    }
    int (*next)(int, const char *, int, ...) = shim_next("openat");
    return next(dirfd, path, flags, mode);
}

int close(int fd)
{
    int (*next)(int) = shim_next("close");
    shim_mark(fd, 0);
    return next(fd);
}

int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (KNEMLIKE_IOC_GET_INFO == request && shim_marked(fd)) {
        struct knemlike_info info;
        if (!arg) {
            errno = EFAULT;
            return -1;
        }
        memset(&info, 0, sizeof(info));
        info.abi_version = KNEMLIKE_ABI_VERSION + 1;
        info.features = KNEMLIKE_FEATURE_VECTOR_COPY | KNEMLIKE_FEATURE_FOLLOWS_MAPPING;
        info.max_segments = 4096;
        info.max_regions_per_file = 65536;
        info.max_region_bytes = (uint64_t) 65536 << 20;
        memcpy(arg, &info, sizeof(info));
        return 0;
    }
    int (*next)(int, unsigned long, ...) = shim_next("ioctl");
    return next(fd, request, arg);
}
