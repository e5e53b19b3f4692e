/*
 * smx_bench: the project's MPI benchmark.
 *
 *   smx_bench [--mode pingpong|bw|alltoall|skew|skew-consumer] [--sizes LIST]
 *             [--off-cache MB] [--order sequential|random] [--samples N] [--window N]
 *             [--delay-us N] [--target-mb MB] [--print-cvar NAME] [--print-pvar NAME]
 *
 * pingpong  ranks 0 and 1: half the round trip (usec) and MB/s
 * bw        ranks 0 -> 1: windows of --window Isends, one ack per window; MB/s
 * alltoall  all ranks: time per MPI_Alltoall (usec) and MB/s sent per rank
 * skew      process skew (after Chai, Lai, Jin, Panda): rank 0, the producer, posts a
 *           window of --window MPI_Isend and waits for them all; rank 1, the consumer,
 *           computes --delay-us (default 20) before each MPI_Recv of the window; one ack
 *           per window. usec: the producer's time to complete a window (from its first
 *           Isend to its Waitall's return); a late receiver holds a sender whose messages
 *           wait for it (a rendezvous), not one whose messages were buffered
 * skew-consumer  the same run; usec: the consumer's time for a window
 *
 * Each size is timed in --samples batches; the median batch is reported. With
 * --off-cache, send and receive buffers rotate through pools of that many MB each, so
 * every message starts outside the caches (like IMB's -off_cache); bw's pools hold a
 * window's messages at least. --order: the pool's slots in turn (sequential, the
 * default), or shuffled (random). In turn, a buffer lies one slot past the last one, and
 * the CPU's prefetchers may learn that stride and fetch the next message's buffer early
 * (docs/performance.md, "How the benchmark measures"); shuffled, they cannot. The first
 * and last byte of every message carry a stamp that the receiver checks: a benchmark that
 * loses, truncates or mixes up messages fails instead of reporting a number. Only those
 * two bytes, so that checking leaves the caches as they were; every byte is checked by the
 * MPI suite (tests/mpi), on the same paths.
 *
 * First touches are kept out of the timed batches: each size's buffers are written
 * once before (every page faulted in), then an untimed warm-up batch runs (the MPI
 * library's own first touches: connections, registrations, its buffers). Both are
 * reported apart, after the size's row, as '# first bytes=N touch_usec=T warmup_usec=W'
 * (rank 0's: T the time its pools took to fault in, W its warm-up batch's time per
 * operation): in a guest whose page faults are dear (User-mode Linux) they differ most.
 *
 * Output (rank 0, stdout): '#' comment lines, among them '# system: ...' (where it ran:
 * a host, with its kernel, CPUs and CPU model; a UML guest, with its kernel and CPUs,
 * and its host as tests/vm/run-in-uml names it in SMX_UML_HOST; a QEMU guest, emulated),
 * then CSV 'mode,bytes,iters,usec,mbps'.
 * --print-cvar NAME: after the measurements every rank prints the MPI_T control variable
 * NAME as '# cvar RANK NAME VALUE' (VALUE '(none)' if the MPI library has no such
 * variable): how a tool learns what the transport decided (btl_smx_policy).
 * --print-pvar NAME: the same for a counter (unsigned long long) among MPI_T's
 * performance variables, '# pvar RANK NAME VALUE': what the transport did during the
 * measurements.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "bench_util.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MAX_SIZES 128
#define ALIGN 4096

enum mode { MODE_PINGPONG, MODE_BW, MODE_ALLTOALL, MODE_SKEW, MODE_SKEW_CONSUMER, MODE_COUNT };
static const char *mode_names[MODE_COUNT] = {"pingpong", "bw", "alltoall", "skew",
                                             "skew-consumer"};

struct options {
    enum mode mode;
    size_t sizes[MAX_SIZES];
    int nsizes;
    size_t off_cache_bytes;
    int random_order;
    int samples;
    int window;
    int delay_us;
    size_t target_bytes;
    const char *cvar, *pvar;
};

static int rank, nranks;

static void die(const char *msg)
{
    if (0 == rank) {
        fprintf(stderr, "smx_bench: %s\n", msg);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
    size_t mb;
    *o = (struct options){.mode = MODE_PINGPONG, .samples = 5, .window = 64, .delay_us = 20,
                          .target_bytes = (size_t) 64 << 20};
    o->nsizes = bu_parse_size_list("0:4M", o->sizes, MAX_SIZES);
    for (int i = 1; i < argc; ++i) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (NULL == val) {
            die("every option takes a value (see the header of smx_bench.c)");
        }
        ++i;
        if (0 == strcmp(opt, "--mode")) {
            int m;
            for (m = 0; m < MODE_COUNT && strcmp(val, mode_names[m]); ++m) {
            }
            if (MODE_COUNT == m) {
                die("--mode must be pingpong, bw, alltoall, skew or skew-consumer");
            }
            o->mode = (enum mode) m;
        } else if (0 == strcmp(opt, "--sizes")) {
            o->nsizes = bu_parse_size_list(val, o->sizes, MAX_SIZES);
            if (o->nsizes < 0) {
                die("--sizes: expected a list like 0,64,4K or a range like 0:4M");
            }
        } else if (0 == strcmp(opt, "--off-cache")) {
            if (bu_parse_size(val, &mb) || mb > (1 << 16)) {
                die("--off-cache: expected a pool size in MB (0 to 65536)");
            }
            o->off_cache_bytes = mb << 20;
        } else if (0 == strcmp(opt, "--order")) {
            if (strcmp(val, "sequential") && strcmp(val, "random")) {
                die("--order must be sequential or random");
            }
            o->random_order = 0 == strcmp(val, "random");
        } else if (0 == strcmp(opt, "--samples")) {
            o->samples = atoi(val);
            if (o->samples < 1 || o->samples > 1000) {
                die("--samples: expected 1 to 1000");
            }
        } else if (0 == strcmp(opt, "--window")) {
            o->window = atoi(val);
            if (o->window < 1 || o->window > 4096) {
                die("--window: expected 1 to 4096");
            }
        } else if (0 == strcmp(opt, "--delay-us")) {
            char *end;
            long d = strtol(val, &end, 10);
            if (end == val || '\0' != *end || d < 0 || d > 1000000) {
                die("--delay-us: expected 0 to 1000000");
            }
            o->delay_us = (int) d;
        } else if (0 == strcmp(opt, "--target-mb")) {
            if (bu_parse_size(val, &mb) || 0 == mb || mb > (1 << 16)) {
                die("--target-mb: expected 1 to 65536");
            }
            o->target_bytes = mb << 20;
        } else if (0 == strcmp(opt, "--print-pvar")) {
            o->pvar = val;
        } else if (0 == strcmp(opt, "--print-cvar")) {
            o->cvar = val;
        } else {
            die("unknown option (see the header of smx_bench.c)");
        }
    }
    if (MODE_ALLTOALL != o->mode && nranks < 2) {
        die("pingpong, bw and skew need at least 2 ranks");
    }
}

/* A pool of message buffers: 'span' bytes rotated through in slots. */
struct buffers {
    uint8_t *base;
    struct bu_pool pool;
};

/* One arena per role (0 sending, 1 receiving) for the whole run, taken before the first
 * message at the largest size's span (arenas_reserve) and never freed: a buffer's address
 * never gets other pages, which a peer that maps it would not see in a User-mode Linux
 * guest (tests/bench/run-bench-uml), and each size reuses pages already faulted in. */
static struct {
    uint8_t *base;
    size_t size;
} arena[2];

static uint8_t *arena_get(int role, size_t span)
{
    if (span > arena[role].size) { /* (the old one kept) */
        if (posix_memalign((void **) &arena[role].base, ALIGN, span)) {
            die("out of memory for the buffer pool");
        }
        memset(arena[role].base, 0, span); /* (its pages are there before a peer maps one) */
        arena[role].size = span;
    }
    return arena[role].base;
}

/* At least 'least' slots: a window's messages are in flight together and each needs a
 * buffer of its own (or the receiver's check would read another message's stamp). */
static void buffers_init(struct buffers *b, int role, size_t pool_bytes, size_t msg_bytes,
                         size_t least, int random_order, unsigned long long seed)
{
    if (bu_pool_plan(&b->pool, pool_bytes, msg_bytes, ALIGN, least)) {
        die("cannot plan the buffer pool");
    }
    if (random_order && bu_pool_shuffle(&b->pool, seed)) {
        die("out of memory for the buffer pool's order");
    }
    b->base = arena_get(role, bu_pool_span(&b->pool));
    memset(b->base, 0, bu_pool_span(&b->pool)); /* fault every page in before timing */
}

static uint8_t *buffers_next(struct buffers *b)
{
    return b->base + bu_pool_next(&b->pool);
}

static void stamp(uint8_t *buf, size_t len, int iter)
{
    if (len) { /* (one byte: the first stamp only) */
        buf[len - 1] = (uint8_t) (iter % 241 + 3);
        buf[0] = (uint8_t) (iter % 251 + 1);
    }
}

static void check_stamp(const uint8_t *buf, size_t len, int iter)
{
    if (len && (buf[0] != (uint8_t) (iter % 251 + 1)
                || (len > 1 && buf[len - 1] != (uint8_t) (iter % 241 + 3)))) {
        fprintf(stderr, "smx_bench: rank %d: message %d of %zu bytes arrived with wrong data\n",
                rank, iter, len);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* One timed batch of 'iters' operations; returns seconds per operation. */
static double pingpong_batch(struct buffers *sb, struct buffers *rb, size_t len, int iters)
{
    int peer = 1 - rank;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        uint8_t *s = buffers_next(sb), *r = buffers_next(rb);
        if (0 == rank) {
            stamp(s, len, i);
            MPI_Send(s, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(r, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check_stamp(r, len, i);
        } else {
            MPI_Recv(r, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check_stamp(r, len, i);
            stamp(s, len, i);
            MPI_Send(s, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2.0;
}

static double bw_batch(struct buffers *sb, struct buffers *rb, size_t len, int iters, int window)
{
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t) window);
    uint8_t **bufs = malloc(sizeof(*bufs) * (size_t) window);
    char ack = 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        for (int w = 0; w < window; ++w) {
            bufs[w] = buffers_next(0 == rank ? sb : rb);
            if (0 == rank) {
                stamp(bufs[w], len, w);
                MPI_Isend(bufs[w], (int) len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[w]);
            } else {
                MPI_Irecv(bufs[w], (int) len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[w]);
            }
        }
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        if (1 == rank) {
            for (int w = 0; w < window; ++w) {
                check_stamp(bufs[w], len, w);
            }
            MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    double t = (MPI_Wtime() - t0) / iters / window;
    free(reqs);
    free(bufs);
    return t;
}

/* Compute (spin) for 'us' microseconds, as an application between two receives. */
static void compute(int us)
{
    const double until = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < until) {
    }
}

/* One batch of 'iters' windows of process skew; returns seconds per window, as the
 * producer (rank 0) or the consumer (rank 1) measured it, whichever 'consumer' says. */
static double skew_batch(struct buffers *sb, struct buffers *rb, size_t len, int iters,
                         int window, int delay_us, int consumer)
{
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t) window);
    uint8_t **bufs = malloc(sizeof(*bufs) * (size_t) window);
    double mine = 0;
    char ack = 0;

    for (int i = 0; i < iters; ++i) {
        const double t0 = MPI_Wtime();
        for (int w = 0; w < window; ++w) {
            bufs[w] = buffers_next(0 == rank ? sb : rb);
            if (0 == rank) {
                stamp(bufs[w], len, w);
                MPI_Isend(bufs[w], (int) len, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &reqs[w]);
            } else {
                compute(delay_us);
                MPI_Recv(bufs[w], (int) len, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                check_stamp(bufs[w], len, w);
            }
        }
        if (0 == rank) {
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        }
        mine += MPI_Wtime() - t0;
        /* the next window starts when both are through with this one */
        if (1 == rank) {
            MPI_Send(&ack, 1, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    /* the side asked for, as rank 0's answer */
    double t = mine / iters, other = t;
    if (0 == rank) {
        MPI_Recv(&other, 1, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&t, 1, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
    }
    free(reqs);
    free(bufs);
    return consumer ? other : t;
}

static double alltoall_batch(struct buffers *sb, struct buffers *rb, size_t len, int iters)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        uint8_t *s = buffers_next(sb), *r = buffers_next(rb);
        for (int p = 0; p < nranks; ++p) {
            stamp(s + (size_t) p * len, len, i + rank);
        }
        MPI_Alltoall(s, (int) len, MPI_BYTE, r, (int) len, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = 0; p < nranks; ++p) {
            check_stamp(r + (size_t) p * len, len, i + p);
        }
    }
    return (MPI_Wtime() - t0) / iters;
}

static double run_batch(const struct options *o, struct buffers *sb, struct buffers *rb,
                        size_t len, int iters)
{
    double t = 0;
    if (MODE_ALLTOALL == o->mode) {
        t = alltoall_batch(sb, rb, len, iters);
    } else if (rank < 2 && (MODE_SKEW == o->mode || MODE_SKEW_CONSUMER == o->mode)) {
        t = skew_batch(sb, rb, len, iters, o->window, o->delay_us, MODE_SKEW_CONSUMER == o->mode);
    } else if (rank < 2) {
        t = MODE_BW == o->mode ? bw_batch(sb, rb, len, iters, o->window)
                               : pingpong_batch(sb, rb, len, iters);
    }
    /* Rank 0's view decides; everyone leaves the batch together. */
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

static int windowed_mode(const struct options *o)
{
    return MODE_BW == o->mode || MODE_SKEW == o->mode || MODE_SKEW_CONSUMER == o->mode;
}

/* Both arenas at the largest span any size needs, before the first message. */
static void arenas_reserve(const struct options *o)
{
    size_t most = ALIGN;
    for (int i = 0; i < o->nsizes; ++i) {
        const size_t len = o->sizes[i];
        const size_t msg = MODE_ALLTOALL == o->mode ? len * (size_t) nranks : len;
        struct bu_pool pool;
        if (0 == bu_pool_plan(&pool, o->off_cache_bytes, msg, ALIGN,
                              windowed_mode(o) ? (size_t) o->window : 1)) {
            most = bu_pool_span(&pool) > most ? bu_pool_span(&pool) : most;
            bu_pool_release(&pool);
        }
    }
    (void) arena_get(0, most);
    (void) arena_get(1, most);
}

static void measure(const struct options *o, size_t len)
{
    /* alltoall moves nranks blocks per call and per buffer */
    size_t msg = MODE_ALLTOALL == o->mode ? len * (size_t) nranks : len;
    const int windowed = windowed_mode(o);
    size_t per_op = windowed ? len * (size_t) o->window : msg;
    int iters = bu_iterations(per_op, o->target_bytes / (size_t) o->samples, 2, 100000);
    if (windowed && iters > 1000) {
        iters = 1000;
    }
    if (windowed && MODE_BW != o->mode && o->delay_us > 0) {
        /* a window takes the consumer window * delay at least: at most ~0.2 s a batch */
        const long most = 200000L / ((long) o->window * o->delay_us);
        iters = iters > most ? (most < 2 ? 2 : (int) most) : iters;
    }
    struct buffers sb, rb;
    double *t = malloc(sizeof(double) * (size_t) o->samples);

    const size_t least = windowed ? (size_t) o->window : 1;
    const double t0 = MPI_Wtime();
    const size_t pool = o->off_cache_bytes;
    buffers_init(&sb, 0, pool, msg, least, o->random_order, 2 * (unsigned) rank + 1);
    buffers_init(&rb, 1, pool, msg, least, o->random_order, 2 * (unsigned) rank + 2);
    const double touch = MPI_Wtime() - t0;
    /* warm-up: connections, registrations, the library's first touches */
    const double warmup = run_batch(o, &sb, &rb, len, iters / 10 + 1);
    for (int s = 0; s < o->samples; ++s) {
        t[s] = run_batch(o, &sb, &rb, len, iters);
    }
    double sec = bu_median(t, o->samples);
    if (0 == rank) {
        double bytes = MODE_ALLTOALL == o->mode ? (double) len * (nranks - 1)
                       : windowed && MODE_BW != o->mode ? (double) len * o->window
                                                        : (double) len;
        printf("%s,%zu,%d,%.4f,%.2f\n", mode_names[o->mode], len, iters, sec * 1e6,
               sec > 0 ? bytes / sec / 1e6 : 0.0);
        printf("# first bytes=%zu touch_usec=%.1f warmup_usec=%.4f\n", len, touch * 1e6,
               warmup * 1e6);
        fflush(stdout);
    }
    free(t);
    bu_pool_release(&sb.pool);
    bu_pool_release(&rb.pool);
}

/* The control variable's value as a string, through MPI_T; "(none)" if there is none. */
static void print_cvar(const char *name)
{
    static char value[1 << 16];
    int provided, index, count;
    MPI_T_cvar_handle handle;
    MPI_Datatype type;
    int ok = 0;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        printf("# cvar %d %s (none)\n", rank, name);
        return;
    }
    if (MPI_SUCCESS == MPI_T_cvar_get_index(name, &index)
        && MPI_SUCCESS == MPI_T_cvar_get_info(index, NULL, NULL, NULL, &type, NULL, NULL, NULL,
                                              NULL, NULL)
        && MPI_CHAR == type
        && MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        value[0] = '\0';
        ok = count >= 0 && (size_t) count < sizeof(value)
             && MPI_SUCCESS == MPI_T_cvar_read(handle, value);
        MPI_T_cvar_handle_free(&handle);
    }
    printf("# cvar %d %s %s\n", rank, name, ok ? value : "(none)");
    fflush(stdout);
    MPI_T_finalize();
}

/* A counter among the performance variables. Open MPI counts a counter's handle from the
 * moment it is bound: bound before the measurements, read after them. */
static struct {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int bound;
} pvar;

static void bind_pvar(const char *name)
{
    int provided, index, count, n, var_class;
    MPI_Datatype type;
    char vname[256];
    int len;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    MPI_T_pvar_get_num(&n);
    for (index = 0; index < n && !pvar.bound; ++index) {
        len = sizeof(vname);
        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, vname, &len, NULL, &var_class, &type,
                                               NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            || 0 != strcmp(vname, name) || MPI_UNSIGNED_LONG_LONG != type
            || MPI_SUCCESS != MPI_T_pvar_session_create(&pvar.session)) {
            continue;
        }
        pvar.bound = MPI_SUCCESS == MPI_T_pvar_handle_alloc(pvar.session, index, NULL,
                                                             &pvar.handle, &count)
                     && 1 == count;
        if (!pvar.bound) {
            MPI_T_pvar_session_free(&pvar.session);
        }
    }
}

static void print_pvar(const char *name)
{
    unsigned long long value = 0;
    int ok = pvar.bound && MPI_SUCCESS == MPI_T_pvar_read(pvar.session, pvar.handle, &value);

    if (ok) {
        printf("# pvar %d %s %llu\n", rank, name, value);
    } else {
        printf("# pvar %d %s (none)\n", rank, name);
    }
    fflush(stdout);
    if (pvar.bound) {
        MPI_T_pvar_handle_free(pvar.session, &pvar.handle);
        MPI_T_pvar_session_free(&pvar.session);
    }
    MPI_T_finalize();
}

/* '# system: ...': where this runs (bu_describe_system). */
static void print_system(void)
{
    static char cpuinfo[1 << 16];
    char vendor[64] = "", out[512];
    struct utsname u;
    FILE *f;

    cpuinfo[0] = '\0';
    if (NULL != (f = fopen("/proc/cpuinfo", "r"))) {
        cpuinfo[fread(cpuinfo, 1, sizeof(cpuinfo) - 1, f)] = '\0';
        fclose(f);
    }
    if (NULL != (f = fopen("/sys/class/dmi/id/sys_vendor", "r"))) {
        vendor[fread(vendor, 1, sizeof(vendor) - 1, f)] = '\0';
        fclose(f);
    }
    if (0 != uname(&u)) {
        strcpy(u.release, "(unknown)");
    }
    bu_describe_system(cpuinfo, vendor, u.release, (int) sysconf(_SC_NPROCESSORS_ONLN),
                       getenv("SMX_UML_HOST"), out, sizeof(out));
    printf("# system: %s\n", out);
}

int main(int argc, char **argv)
{
    struct options o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse(argc, argv, &o);
    if (0 == rank) {
        printf("# smx_bench mode=%s ranks=%d off_cache_mb=%zu order=%s samples=%d window=%d"
               " delay_us=%d\n",
               mode_names[o.mode], nranks, o.off_cache_bytes >> 20,
               o.random_order ? "random" : "sequential", o.samples, o.window, o.delay_us);
        print_system();
        printf("mode,bytes,iters,usec,mbps\n");
    }
    if (NULL != o.pvar) {
        bind_pvar(o.pvar);
    }
    arenas_reserve(&o);
    for (int i = 0; i < o.nsizes; ++i) {
        measure(&o, o.sizes[i]);
    }
    if (NULL != o.cvar) {
        print_cvar(o.cvar);
    }
    if (NULL != o.pvar) {
        print_pvar(o.pvar);
    }
    MPI_Finalize();
    return 0;
}
