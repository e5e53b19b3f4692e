/*
 * smx_scale: what a transport costs as the number of local ranks grows.
 *
 *   smx_scale [--dir DIR] [--sizes LIST] [--samples N] [--rounds N] [--block BYTES]
 *
 * In one job of N ranks on one node:
 *   1. MPI_Init time: each rank times its own MPI_Init; the slowest is reported.
 *   2. Shared memory in use in DIR (default /dev/shm, statvfs: what the file system has
 *      allocated, unlinked-but-mapped files included) after MPI_Init and a barrier.
 *   3. Traffic that touches every pair: --rounds all-to-alls of --block bytes per pair
 *      (default 3 x 16 KiB), every byte checked, each timed (the slowest rank's
 *      MPI_Alltoall, after a barrier); then the same reading of DIR.
 *   4. Ping-pong latency between ranks 0 and 1 for --sizes (default 0:4K), each pinned to
 *      a CPU of its own and not yielding it when idle, while every other rank waits
 *      outside MPI (blocked in flock()), so that only the transport's own per-peer cost
 *      shows, as on a node with a core per rank; the median of --samples batches, the
 *      first and last byte of every message checked (every byte of the first one).
 *
 * Output (rank 0, stdout): '#' comment lines, then CSV 'metric,bytes,value' with the
 * metrics init_s (slowest MPI_Init, seconds), shm_init and shm_traffic (bytes in use in
 * DIR, absolute: the caller subtracts what was in use before the job), alltoall_s (the
 * median round of step 3, seconds; bytes: --block), latency_us (half a round trip, per
 * size). tests/bench/run-scale runs it for several N and
 * transports, interleaved.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include "bench_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 64

static int rank, nranks;

static void die(const char *msg)
{
    if (0 == rank) {
        fprintf(stderr, "smx_scale: %s\n", msg);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static long long used_bytes(const char *dir)
{
    struct statvfs v;
    if (0 != statvfs(dir, &v)) {
        return -1;
    }
    return (long long) (v.f_blocks - v.f_bfree) * (long long) v.f_frsize;
}

static uint8_t pattern(int from, int to, int round, size_t i)
{
    return (uint8_t) (from * 131 + to * 31 + round * 7 + i * 13 + (i >> 8));
}

/* Every pair exchanges 'block' bytes 'rounds' times; every byte is checked. Returns the
 * median over the rounds of the slowest rank's MPI_Alltoall (seconds; rank 0 only), each
 * round started together (a barrier). */
static double touch_every_pair(size_t block, int rounds)
{
    uint8_t *s = malloc(block * (size_t) nranks), *r = malloc(block * (size_t) nranks);
    double *took = calloc((size_t) rounds, sizeof(double)), median = 0.0;
    if (NULL == s || NULL == r || NULL == took) {
        die("out of memory for the all-to-all");
    }
    for (int round = 0; round < rounds; ++round) {
        for (int to = 0; to < nranks; ++to) {
            for (size_t i = 0; i < block; ++i) {
                s[(size_t) to * block + i] = pattern(rank, to, round, i);
            }
        }
        memset(r, 0, block * (size_t) nranks);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now();
        MPI_Alltoall(s, (int) block, MPI_BYTE, r, (int) block, MPI_BYTE, MPI_COMM_WORLD);
        const double mine = now() - t0;
        MPI_Reduce(&mine, &took[round], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        for (int from = 0; from < nranks; ++from) {
            for (size_t i = 0; i < block; ++i) {
                if (r[(size_t) from * block + i] != pattern(from, rank, round, i)) {
                    fprintf(stderr, "smx_scale: rank %d: byte %zu from rank %d (round %d) is "
                            "wrong\n", rank, i, from, round);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            }
        }
    }
    if (0 == rank) {
        median = bu_median(took, rounds);
    }
    free(took);
    free(s);
    free(r);
    return median;
}

/* Seconds per one-way message of 'len' bytes, over 'iters' round trips (ranks 0, 1). */
static double pingpong(uint8_t *buf, size_t len, int iters, int check_all)
{
    const int peer = 1 - rank;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        const uint8_t mark = (uint8_t) (i * 7 + len + 1);
        if (0 == rank) {
            if (len) {
                buf[0] = buf[len - 1] = mark;
            }
            MPI_Send(buf, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
            MPI_Recv(buf, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
        }
        if (len && (buf[0] != mark || buf[len - 1] != mark)) {
            fprintf(stderr, "smx_scale: rank %d: ping-pong message %d of %zu bytes arrived "
                    "with wrong data\n", rank, i, len);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (check_all && 0 == i) {
            for (size_t k = 1; k + 1 < len; ++k) {
                if (buf[k] != (uint8_t) k) {
                    fprintf(stderr, "smx_scale: rank %d: byte %zu of a %zu-byte ping-pong "
                            "message is wrong\n", rank, k, len);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            }
        }
    }
    return (MPI_Wtime() - t0) / iters / 2.0;
}

/* Ranks 0 and 1 each on a CPU of their own, the first two they may run on (the job
 * itself is unbound: at N > CPUs mpirun would not bind). Returns the CPU or -1 when the
 * process may run on fewer than two. */
static int pin_measured_pair(void)
{
    cpu_set_t allowed, one;
    int seen = 0;
    if (0 != sched_getaffinity(0, sizeof(allowed), &allowed) || CPU_COUNT(&allowed) < 2) {
        return -1;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &allowed) && seen++ == rank) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return 0 == sched_setaffinity(0, sizeof(one), &one) ? cpu : -1;
        }
    }
    return -1;
}

/*
 * An oversubscribed Open MPI job yields the CPU in every idle progress loop
 * (sched_yield, about 0.3 us here), whatever mpi_yield_when_idle says. Once the other
 * ranks are blocked, the measured pair has two CPUs to itself, as on a node with a core
 * per rank, where Open MPI does not yield; so the pair stops yielding for the ping-pong
 * (opal_progress_set_yield_when_idle, exported by libopen-pal) and restores the setting
 * afterwards. Returns the setting it found: 1 yielding, 0 not, -1 no such symbol (another
 * MPI, or an Open MPI that does not export it: nothing changed).
 */
static int yield_when_idle(int on)
{
    void (*set)(bool) = (void (*)(bool)) dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle");
    const bool *now = dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle");
    if (NULL == set || NULL == now) {
        return -1;
    }
    const int was = *now;
    set(0 != on);
    return was;
}

int main(int argc, char **argv)
{
    const double t0 = now();
    MPI_Init(&argc, &argv);
    double init_s = now() - t0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    const char *dir = "/dev/shm";
    size_t sizes[MAX_SIZES], block = 16 * 1024;
    int nsizes = bu_parse_size_list("0:4K", sizes, MAX_SIZES), samples = 7, rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (NULL == val) {
            die("every option takes a value (--dir --sizes --samples --rounds --block)");
        }
        ++i;
        if (0 == strcmp(opt, "--dir")) {
            dir = val;
        } else if (0 == strcmp(opt, "--sizes")) {
            nsizes = bu_parse_size_list(val, sizes, MAX_SIZES);
            if (nsizes < 1 || sizes[nsizes - 1] > (1 << 20)) {
                die("--sizes: a list like 0,64,4K or a range like 0:4K, at most 1M");
            }
        } else if (0 == strcmp(opt, "--samples")) {
            samples = atoi(val);
            if (samples < 1 || samples > 1000) {
                die("--samples: expected 1 to 1000");
            }
        } else if (0 == strcmp(opt, "--rounds")) {
            rounds = atoi(val);
            if (rounds < 1 || rounds > 1000) {
                die("--rounds: expected 1 to 1000");
            }
        } else if (0 == strcmp(opt, "--block")) {
            if (0 != bu_parse_size(val, &block) || block < 1 || block > (1 << 20)) {
                die("--block: expected 1 to 1M bytes");
            }
        } else {
            die("unknown option");
        }
    }
    if (nranks < 2) {
        die("needs at least 2 ranks");
    }
    if (used_bytes(dir) < 0) {
        die("cannot statvfs --dir");
    }

    double slowest;
    MPI_Reduce(&init_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const long long shm_init = used_bytes(dir);
    MPI_Barrier(MPI_COMM_WORLD);
    const double alltoall_s = touch_every_pair(block, rounds);
    MPI_Barrier(MPI_COMM_WORLD);
    const long long shm_traffic = used_bytes(dir);

    /* Ranks 2.. wait outside MPI, blocked in flock() on a file that rank 0 holds locked
     * until it is done: asleep in the kernel, never woken before then (a sleep-and-poll
     * loop would wake N - 2 processes every 50 ms on the measured pair's CPUs). */
    char flag[256] = "";
    int lock_fd = -1;
    if (0 == rank) {
        char tmpl[] = "/tmp/smx_scale.XXXXXX";
        if (NULL == mkdtemp(tmpl)) {
            die("cannot create a directory in /tmp");
        }
        snprintf(flag, sizeof(flag), "%s/idle", tmpl);
        lock_fd = open(flag, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock_fd < 0 || 0 != flock(lock_fd, LOCK_EX)) {
            die("cannot create and lock the file the idle ranks wait on");
        }
    }
    MPI_Bcast(flag, sizeof(flag), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank >= 2) {
        lock_fd = open(flag, O_RDONLY | O_CLOEXEC);
        int rc = -1;
        while (lock_fd >= 0 && 0 != (rc = flock(lock_fd, LOCK_SH)) && EINTR == errno) {
        }
        if (lock_fd < 0 || 0 != rc) {
            fprintf(stderr, "smx_scale: rank %d: cannot wait on %s\n", rank, flag);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        close(lock_fd);
    } else {
        const int cpu = pin_measured_pair(), yielded = yield_when_idle(0);
        int cpus[2];
        cpus[rank] = cpu;
        MPI_Sendrecv(&cpu, 1, MPI_INT, 1 - rank, 6, &cpus[1 - rank], 1, MPI_INT, 1 - rank, 6,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        uint8_t *buf = malloc(sizes[nsizes - 1] + 1);
        double lat[MAX_SIZES], batch[1000];
        if (NULL == buf) {
            die("out of memory");
        }
        for (int s = 0; s < nsizes; ++s) {
            const size_t len = sizes[s];
            const int iters = bu_iterations(len, 4u << 20, 200, 5000);
            for (size_t k = 0; k < len; ++k) {
                buf[k] = (uint8_t) k;
            }
            (void) pingpong(buf, len, iters / 4 + 1, 1); /* warm-up, every byte checked */
            for (int b = 0; b < samples; ++b) {
                batch[b] = pingpong(buf, len, iters, 0);
            }
            lat[s] = bu_median(batch, samples) * 1e6;
        }
        free(buf);
        if (yielded > 0) {
            yield_when_idle(1);
        }
        if (0 == rank) {
            close(lock_fd); /* releases the idle ranks */
            printf("# smx_scale: %d ranks, %s, %d x %zu-byte all-to-all, median of %d batches\n",
                   nranks, dir, rounds, block, samples);
            if (cpus[0] >= 0 && cpus[1] >= 0) {
                printf("# ranks 0 and 1 pinned to CPUs %d and %d for the ping-pong\n", cpus[0],
                       cpus[1]);
            } else {
                printf("# ranks 0 and 1 not pinned (fewer than two CPUs to run on)\n");
            }
            printf("# %s\n", yielded < 0 ? "no opal_progress_set_yield_when_idle here: yielding "
                                            "left as it was"
                              : yielded ? "the pair did not yield when idle for the ping-pong "
                                          "(Open MPI yields in an oversubscribed job)"
                                        : "the pair did not yield when idle");
            printf("metric,bytes,value\ninit_s,0,%.6f\nshm_init,0,%lld\nshm_traffic,0,%lld\n"
                   "alltoall_s,%zu,%.6f\n", slowest, shm_init, shm_traffic, block, alltoall_s);
            for (int s = 0; s < nsizes; ++s) {
                printf("latency_us,%zu,%.4f\n", sizes[s], lat[s]);
            }
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        unlink(flag);
        *strrchr(flag, '/') = '\0';
        rmdir(flag);
    }
    MPI_Finalize();
    return 0;
}
