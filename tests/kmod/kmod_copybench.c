/*
 * What one copy between two processes costs: a system call that does nothing (getppid:
 * the floor UML sets), memcpy within one process, process_vm_readv/writev (CMA) and
 * knemlike's copy ioctl, from and to a region that finds its pages at each copy
 * ("knemlike") and one that holds them (KNEMLIKE_FLAG_HOLD_PAGES, "held"), and a first
 * copy of a fresh held region (create it over a buffer, copy from it once, destroy it:
 * what a registration used once costs), and an attachment of the held region
 * (KNEMLIKE_IOC_ATTACH: a memcpy from and to the owner's pages mapped here, made once and
 * touched before; a fresh attachment copied from once, which pays the faults of its first
 * touch; an attachment made and unmapped untouched). 4 KiB to 64 MiB, the same buffers warm, the
 * median of the repetitions in microseconds per copy (each repetition times as many
 * copies as make 16 MiB). Every copy's bytes are checked. Run where the module is loaded
 * at native speed (User-mode Linux: tests/kmod/run-uml-bench); in the QEMU guest the
 * numbers mean nothing. One line per size:
 *   size_bytes syscall memcpy cma_read knemlike_read held_read cma_write knemlike_write
 *   held_write held_fresh attached_read attached_write attach_first attach_only
 * (the held and attach columns are nan where the module cannot hold pages or map them)
 *
 * kmod_copybench [--reps N] [--max-mib M]
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "kl.h"

#include <math.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int reps = 7, max_mib = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--reps")) {
            reps = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--max-mib")) {
            max_mib = atoi(argv[i + 1]);
        } else {
            fprintf(stderr, "usage: kmod_copybench [--reps N] [--max-mib M]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000 || max_mib < 1 || max_mib > 1024) {
        fprintf(stderr, "kmod_copybench: --reps 1..1000, --max-mib 1..1024\n");
        return 2;
    }
    const size_t max = (size_t) max_mib << 20;
    int to_child[2], to_parent[2];
    uint8_t *owner = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t cookie[2] = {0, 0};
    struct knemlike_export_cookie xc = {0, {0, 0}};
    const uint32_t rw = KNEMLIKE_PROT_READ | KNEMLIKE_PROT_WRITE;

    if (MAP_FAILED == owner || pipe(to_child) || pipe(to_parent)) {
        perror("kmod_copybench");
        return 2;
    }
    kl_fill(owner, max, 1);
    pid_t pid = fork();
    if (0 == pid) {
        /* the owner: its buffer (made its own), two regions over it, until told to go */
        int fd = kl_open();
        char go;
        for (size_t i = 0; i < max; i += 4096) {
            owner[i] ^= 0; /* (write: copy-on-write gives the child pages of its own) */
        }
        if (kl_create1(fd, owner, max, rw, 0, &cookie[0])) {
            cookie[0] = 0;
        }
        if (kl_create1(fd, owner, max, rw, KNEMLIKE_FLAG_HOLD_PAGES, &cookie[1])) {
            cookie[1] = 0; /* a kernel without MMU notifiers: those columns are nan */
        }
        if (kl_export(fd, owner, max, 0, &xc)) {
            memset(&xc, 0, sizeof(xc)); /* before ABI 3: the export columns are nan */
        }
        kl_xwrite(to_parent[1], cookie, sizeof(cookie));
        kl_xwrite(to_parent[1], &xc, sizeof(xc));
        kl_xread(to_child[0], &go, 1);
        _exit(0);
    }
    /* the copier: another address space (a parent may read its child's with CMA where
     * Yama restricts ptrace to descendants), its own open file */
    int fd = kl_open(), errors = 0;
    uint8_t *local = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *back = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double *t = calloc(reps, sizeof(*t));
    kl_xread(to_parent[0], cookie, sizeof(cookie));
    kl_xread(to_parent[0], &xc, sizeof(xc));
    if (0 == cookie[0] || MAP_FAILED == local || MAP_FAILED == back || NULL == t) {
        fprintf(stderr, "kmod_copybench: no region or no memory\n");
        return 2;
    }
    memset(local, 0, max);
    memset(back, 0, max);
    /* the held region mapped here once, for the attached columns (none: nan) */
    struct knemlike_attach att = {.cookie = cookie[1], .prot = rw};
    uint8_t *mapped = NULL;
    if (cookie[1] && 0 == kl_ioctl(fd, KNEMLIKE_IOC_ATTACH, &att)) {
        mapped = (uint8_t *) (uintptr_t) att.addr;
        for (size_t i = 0; i < max; i += 4096) { /* first touch: every page mapped */
            errors += mapped[i] != owner[i];
        }
    }
    /* the owner's export mapped here once, read-write, every page touched: a cached
     * attachment (none before ABI 3: nan) */
    uint8_t *exported = NULL;
    if (xc.secret[0] | xc.secret[1]) {
        void *x;
        if (0 == kl_export_attach(fd, &xc, 0, max, rw, &x)) {
            exported = x;
            for (size_t i = 0; i < max; i += 4096) {
                errors += exported[i] != owner[i];
            }
        }
    }
    enum { SYSCALL, MEMCPY, CMA_R, KL_R, HELD_R, CMA_W, KL_W, HELD_W, FRESH, ATT_R, ATT_W,
           ATT_FIRST, ATT_ONLY, EXP_R, EXP_W, EXP_FIRST, NCOL };
    double *ratio = calloc(reps, sizeof(*ratio));
    if (NULL == ratio) {
        fprintf(stderr, "kmod_copybench: no memory\n");
        return 2;
    }
    printf("# size_bytes syscall memcpy cma_read knemlike_read held_read cma_write "
           "knemlike_write held_write held_fresh attached_read attached_write attach_first "
           "attach_only export_read export_write export_first (us, median of %d) "
           "export_read_ratio export_write_ratio (median of %d interleaved ratios)\n",
           reps, reps);
    for (size_t size = 4096; size <= max; size *= 4) {
        /* enough operations per sample (16 MiB) that reading the clock, a system call
         * of its own where there is no vDSO (UML), does not count */
        const int each = size < ((size_t) 16 << 20) ? (int) (((size_t) 16 << 20) / size) : 1;
        double us[NCOL];
        for (int how = 0; how < NCOL; ++how) {
            int held = HELD_R == how || HELD_W == how || FRESH == how;
            int attach = how >= ATT_R && how <= ATT_ONLY, export = how >= EXP_R;
            int write = CMA_W == how || KL_W == how || HELD_W == how || ATT_W == how ||
                        EXP_W == how;
            us[how] = NAN;
            if ((held && 0 == cookie[1]) || (attach && !mapped) || (export && !exported)) {
                continue;
            }
            if (write) {
                kl_fill(local, size, (unsigned) (how + size)); /* what goes to the owner */
            }
            /* a system call alone: as many as make the clock's own call not count; a
             * fresh attachment's first touch faults every page (in UML, through the host:
             * milliseconds), so a few of them are enough */
            const int iters = SYSCALL == how ? 1000 :
                              (ATT_FIRST == how || EXP_FIRST == how) && each > 4 ? 4 : each;
            for (int r = 0; r < reps; ++r) {
                struct iovec l = {local, size}, rm = {owner, size};
                double t0 = now_us();
                for (int k = 0; k < iters; ++k) {
                    uint64_t fresh = 0;
                    struct knemlike_attach a = {.cookie = cookie[1],
                                                .prot = KNEMLIKE_PROT_READ};
                    switch (how) {
                    case SYSCALL: (void) syscall(SYS_getppid); break;
                    case MEMCPY: memcpy(local, owner, size); break;
                    case CMA_R:
                        errors += process_vm_readv(pid, &l, 1, &rm, 1, 0) != (ssize_t) size;
                        break;
                    case CMA_W:
                        errors += process_vm_writev(pid, &l, 1, &rm, 1, 0) != (ssize_t) size;
                        break;
                    case KL_R: case HELD_R: case KL_W: case HELD_W:
                        errors += 0 != kl_copy1(fd, cookie[HELD_R == how || HELD_W == how], 0,
                                                local, size,
                                                write ? KNEMLIKE_COPY_TO_REGION
                                                      : KNEMLIKE_COPY_FROM_REGION);
                        break;
                    case FRESH: /* a registration used once: of this process's own buffer */
                        errors += 0 != kl_create1(fd, owner, size, KNEMLIKE_PROT_READ,
                                                  KNEMLIKE_FLAG_HOLD_PAGES, &fresh);
                        errors += 0 != kl_copy1(fd, fresh, 0, local, size,
                                                KNEMLIKE_COPY_FROM_REGION);
                        errors += 0 != kl_destroy(fd, fresh);
                        break;
                    case ATT_R: memcpy(local, mapped, size); break;
                    case ATT_W: memcpy(mapped, local, size); break;
                    case ATT_FIRST: case ATT_ONLY: /* a new attachment, unmapped after */
                        if (kl_ioctl(fd, KNEMLIKE_IOC_ATTACH, &a)) {
                            errors++;
                            break;
                        }
                        if (ATT_FIRST == how) {
                            memcpy(local, (void *) (uintptr_t) a.addr, size);
                        }
                        errors += 0 != munmap((void *) (uintptr_t) a.map_addr, a.map_len);
                        break;
                    case EXP_R: memcpy(local, exported, size); break;
                    case EXP_W: memcpy(exported, local, size); break;
                    case EXP_FIRST: { /* a new attachment of the export: every page faulted */
                        void *x;
                        if (kl_export_attach(fd, &xc, 0, (size + 4095) & ~4095UL,
                                             KNEMLIKE_PROT_READ, &x)) {
                            errors++;
                            break;
                        }
                        memcpy(local, x, size);
                        errors += 0 != munmap(x, (size + 4095) & ~4095UL);
                        break;
                    }
                    }
                }
                t[r] = (now_us() - t0) / iters;
            }
            us[how] = median(t, reps);
            if (write) { /* read the owner's memory back: it must hold what was written */
                errors += 0 != kl_copy1(fd, cookie[0], 0, back, size, KNEMLIKE_COPY_FROM_REGION);
                errors += 0 != memcmp(back, local, size);
                /* and put its first contents back, which the reads compare with */
                errors += 0 != kl_copy1(fd, cookie[0], 0, owner, size, KNEMLIKE_COPY_TO_REGION);
            } else if (SYSCALL != how && ATT_ONLY != how) {
                errors += 0 != memcmp(local, owner, size);
            }
            memset(local, 0, size);
        }
        /* A copy through the export's cached attachment against a memcpy between two
         * buffers of this process, timed in turn within each repetition (which goes
         * first alternates), so that a VM's drift between the columns above, measured
         * one after the other, does not count: the median of the repetitions' ratios. */
        double xratio[2] = {NAN, NAN};
        for (int dir = 0; exported && dir < 2; ++dir) {
            kl_fill(local, size, (unsigned) (size + 7 + dir));
            for (int r = 0; r < reps; ++r) {
                double tm = 0, tx = 0;
                for (int turn = 0; turn < 2; ++turn) {
                    const int through = (turn + r) & 1; /* 1: the export */
                    double t0 = now_us();
                    for (int k = 0; k < each; ++k) {
                        if (0 == dir) {
                            memcpy(back, through ? exported : owner, size);
                        } else {
                            memcpy(through ? exported : back, local, size);
                        }
                    }
                    *(through ? &tx : &tm) = now_us() - t0;
                }
                ratio[r] = tm > 0 ? tx / tm : NAN;
            }
            xratio[dir] = median(ratio, reps);
            if (0 == dir) {
                errors += 0 != memcmp(back, owner, size);
            } else { /* the owner holds what was written; then its first contents again */
                errors += 0 != kl_copy1(fd, cookie[0], 0, back, size, KNEMLIKE_COPY_FROM_REGION);
                errors += 0 != memcmp(back, local, size);
                errors += 0 != kl_copy1(fd, cookie[0], 0, owner, size, KNEMLIKE_COPY_TO_REGION);
            }
            memset(local, 0, size);
        }
        printf("%zu", size);
        for (int how = 0; how < NCOL; ++how) {
            printf(" %.1f", us[how]);
        }
        printf(" %.3f %.3f\n", xratio[0], xratio[1]);
        fflush(stdout);
    }
    char go = 'q';
    kl_xwrite(to_child[1], &go, 1);
    waitpid(pid, NULL, 0);
    if (errors) {
        fprintf(stderr, "kmod_copybench: %d copies failed or delivered wrong bytes\n", errors);
        return 1;
    }
    return 0;
}
