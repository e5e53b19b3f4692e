/*
 * handoff: the node's own limit for a message handed between two processes through
 * shared memory, with no MPI in the way. Two processes, each pinned to a CPU, play
 * ping-pong: the sender copies the message into a shared area and publishes how many
 * bytes are there, the receiver waits for them and copies them out, then answers the same
 * way. Half a round trip is what a message costs, the figure an MPI ping-pong reports.
 *
 * What is varied, all in one run, interleaved (each repetition visits every method once);
 * a method is named COPY[+p][+t][+w][+ring|+rSIZE]:
 *   - COPY, how the sender copies in: memcpy, nt (non-temporal stores), movsb (rep movsb),
 *     vec32 (32-byte vector loads and stores);
 *   - +p: published in pieces of --piece bytes, which the receiver copies out while the
 *     sender writes the next (a pipelined handoff); +t: the receiver only touches each
 *     piece's lines as it comes (a prefetch) and copies the whole message at the end;
 *     +w: the sender takes the next message's lines for writing (a prefetch) while the
 *     peer reads this one (ring methods only);
 *   - where: at the area's start every time (neither), or moving on through --ring bytes
 *     (+ring) or SIZE bytes (+rSIZE) as a ring of records does.
 * Buffers in cache (the same send and receive buffer every time) or, with --off-cache MB,
 * rotated through a pool of that size. Every sample checks the last message's bytes.
 *
 * Usage: handoff [--cpus A,B] [--sizes LIST] [--methods LIST] [--piece BYTES]
 *                [--ring BYTES] [--gap BYTES] [--reps N] [--off-cache MB]
 * Prints, per size, the median over the repetitions of each method's half round trip (us).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "../../opal/mca/btl/smx/btl_smx_store.h"

#include <errno.h>
#include <immintrin.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE 64
#define MAX_SIZES 64
#define MAX_REPS 1001

enum copy_kind { COPY_MEMCPY, COPY_NT, COPY_MOVSB, COPY_VEC, COPY_KINDS };
static const char *const copy_names[COPY_KINDS] = {"memcpy", "nt", "movsb", "vec32"};

struct method {
    enum copy_kind copy;
    bool pieces; /* published in pieces of opt_piece bytes */
    bool ring;   /* moving on through the area, not at its start */
    size_t ring_bytes; /* how much of the area it moves through */
    bool touch;        /* the receiver reads each piece's lines as it comes, copies at the end */
    bool own;          /* the sender takes the next message's lines for writing ahead */
    char name[40];
};

/* One direction: the bytes published so far on a line of their own, then the area. */
struct channel {
    _Alignas(LINE) volatile uint64_t published;
    char pad[LINE - sizeof(uint64_t)];
};

static size_t opt_gap = 0, opt_piece = 4096, opt_ring = 512 * 1024, opt_pool_mb = 0;
static int opt_reps = 11, opt_cpu[2] = {0, 1};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Non-temporal stores, the way btl/smx streams a payload (btl_smx_store.c, built in). */
static void copy_nt(unsigned char *to, const unsigned char *from, size_t n)
{
    smx_store_stream(to, from, n);
}

static void copy_movsb(unsigned char *to, const unsigned char *from, size_t n)
{
    __asm__ __volatile__("rep movsb" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
}

__attribute__((target("avx2"))) static void copy_vec(unsigned char *to, const unsigned char *from,
                                                     size_t n)
{
    for (; n >= 128; n -= 128, to += 128, from += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *) from);
        __m256i b = _mm256_loadu_si256((const __m256i *) (from + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *) (from + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *) (from + 96));
        _mm256_storeu_si256((__m256i *) to, a);
        _mm256_storeu_si256((__m256i *) (to + 32), b);
        _mm256_storeu_si256((__m256i *) (to + 64), c);
        _mm256_storeu_si256((__m256i *) (to + 96), d);
    }
    memcpy(to, from, n);
}

static void copy_in(enum copy_kind k, unsigned char *to, const unsigned char *from, size_t n)
{
    switch (k) {
    case COPY_NT:
        copy_nt(to, from, n);
        break;
    case COPY_MOVSB:
        copy_movsb(to, from, n);
        break;
    case COPY_VEC:
        copy_vec(to, from, n);
        break;
    default:
        memcpy(to, from, n);
    }
}

struct side {
    struct channel *out, *in;
    unsigned char *out_area, *in_area;
    uint64_t sent, received; /* bytes published on 'out', taken from 'in' */
    uint64_t out_at, in_at;  /* where the next message starts in each area (ring) */
    unsigned char *send_buf, *recv_buf;
    struct bu_pool pool;
};

/* The message's place in an area: its start, or on from the last one (wrapping). */
static size_t place(const struct method *m, uint64_t *at, size_t size)
{
    size_t where = 0;

    if (m->ring) {
        const size_t span = ((size + 255) & ~(size_t) 255) + opt_gap;
        if (*at + span > m->ring_bytes) {
            *at = 0;
        }
        where = *at;
        *at += span;
    }
    return where;
}

static void send_msg(struct side *s, const struct method *m, const unsigned char *buf, size_t size)
{
    unsigned char *to = s->out_area + place(m, &s->out_at, size);
    const size_t piece = m->pieces ? opt_piece : size;

    if (0 == size) {
        __atomic_store_n(&s->out->published, ++s->sent, __ATOMIC_RELEASE);
        return;
    }
    for (size_t done = 0; done < size;) {
        size_t n = size - done < piece ? size - done : piece;
        copy_in(m->copy, to + done, buf + done, n);
        done += n;
        __atomic_store_n(&s->out->published, s->sent + done, __ATOMIC_RELEASE);
    }
    s->sent += size;
    if (m->own && m->ring) {
        /* where the next one goes (place() without moving on), taken for writing now,
         * while the peer has this one to read */
        uint64_t at = s->out_at;
        const size_t span = ((size + 255) & ~(size_t) 255) + opt_gap;
        unsigned char *next = s->out_area + (at + span > m->ring_bytes ? 0 : at);
        for (size_t k = 0; k < size; k += LINE) {
            __builtin_prefetch(next + k, 1);
        }
    }
}

static void recv_msg(struct side *s, const struct method *m, unsigned char *buf, size_t size)
{
    const unsigned char *from = s->in_area + place(m, &s->in_at, size);
    const size_t piece = m->pieces ? opt_piece : size;

    if (0 == size) {
        while (__atomic_load_n(&s->in->published, __ATOMIC_ACQUIRE) < s->received + 1) {
            _mm_pause();
        }
        s->received += 1;
        return;
    }
    for (size_t done = 0; done < size;) {
        size_t n = size - done < piece ? size - done : piece;
        while (__atomic_load_n(&s->in->published, __ATOMIC_ACQUIRE) < s->received + done + n) {
            _mm_pause();
        }
        if (m->touch) {
            for (size_t at = 0; at < n; at += LINE) {
                __builtin_prefetch(from + done + at);
            }
        } else {
            memcpy(buf + done, from + done, n);
        }
        done += n;
    }
    if (m->touch) {
        memcpy(buf, from, size);
    }
    s->received += size;
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (0 != sched_setaffinity(0, sizeof(set), &set)) {
        fprintf(stderr, "handoff: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
        exit(2);
    }
}

/* One sample: iters ping-pongs of 'size' bytes; the leader (rank 0) returns the half
 * round trip in ns. Both sides run the same sequence. */
static double sample(struct side *s, int rank, const struct method *m, size_t size, int iters)
{
    uint64_t t0 = 0;
    size_t so = 0, ro = 0;

    for (int i = -2; i < iters; ++i) {
        so = bu_pool_next(&s->pool);
        ro = bu_pool_next(&s->pool);
        if (0 == i) {
            t0 = now_ns();
        }
        if (0 == rank) {
            send_msg(s, m, s->send_buf + so, size);
            recv_msg(s, m, s->recv_buf + ro, size);
        } else {
            recv_msg(s, m, s->recv_buf + ro, size);
            send_msg(s, m, s->send_buf + so, size);
        }
    }
    const double ns = (double) (now_ns() - t0) / (2.0 * iters);
    /* What the last message brought: the peer's fill, every byte (and the receive buffer
     * is cleared for the next sample, so that a stale copy cannot pass). */
    for (size_t k = 0; k < size; ++k) {
        if (s->recv_buf[ro + k] != (unsigned char) (2 - rank)) {
            fprintf(stderr, "handoff: %s, %zu bytes: byte %zu is %u, not %u\n", m->name, size, k,
                    s->recv_buf[ro + k], 2 - rank);
            exit(1);
        }
    }
    memset(s->recv_buf + ro, 0, size);
    return ns;
}

static int parse_args(int argc, char **argv, size_t *sizes, int *nsizes, struct method *methods,
                      int *nmethods)
{
    const char *size_list = "0,64,512,1K,4K,8K,16K,32K,64K,256K,1M";
    const char *method_list = "memcpy,memcpy+p,memcpy+ring,memcpy+p+ring,nt,nt+p,movsb,vec32,"
                              "vec32+p";

    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (NULL == v) {
            fprintf(stderr, "handoff: %s needs a value\n", a);
            return -1;
        }
        ++i;
        if (0 == strcmp(a, "--cpus")) {
            if (2 != sscanf(v, "%d,%d", &opt_cpu[0], &opt_cpu[1])) {
                fprintf(stderr, "handoff: --cpus A,B\n");
                return -1;
            }
        } else if (0 == strcmp(a, "--sizes")) {
            size_list = v;
        } else if (0 == strcmp(a, "--methods")) {
            method_list = v;
        } else if (0 == strcmp(a, "--piece")) {
            if (0 != bu_parse_size(v, &opt_piece) || 0 == opt_piece) {
                fprintf(stderr, "handoff: bad --piece %s\n", v);
                return -1;
            }
        } else if (0 == strcmp(a, "--gap")) {
            if (0 != bu_parse_size(v, &opt_gap)) {
                fprintf(stderr, "handoff: bad --gap %s\n", v);
                return -1;
            }
        } else if (0 == strcmp(a, "--ring")) {
            if (0 != bu_parse_size(v, &opt_ring) || opt_ring < 4096) {
                fprintf(stderr, "handoff: bad --ring %s\n", v);
                return -1;
            }
        } else if (0 == strcmp(a, "--reps")) {
            opt_reps = atoi(v);
            if (opt_reps < 1 || opt_reps > MAX_REPS) {
                fprintf(stderr, "handoff: --reps 1..%d\n", MAX_REPS);
                return -1;
            }
        } else if (0 == strcmp(a, "--off-cache")) {
            opt_pool_mb = (size_t) atol(v);
        } else {
            fprintf(stderr, "handoff: unknown option %s\n", a);
            return -1;
        }
    }
    *nsizes = bu_parse_size_list(size_list, sizes, MAX_SIZES);
    if (*nsizes <= 0) {
        fprintf(stderr, "handoff: bad --sizes %s\n", size_list);
        return -1;
    }
    *nmethods = 0;
    for (const char *p = method_list; *p;) {
        size_t len = strcspn(p, ",");
        struct method *m = &methods[*nmethods];
        char word[40];
        int k;

        if (len == 0 || len >= sizeof(word) || *nmethods == 16) {
            fprintf(stderr, "handoff: bad --methods %s\n", method_list);
            return -1;
        }
        memcpy(word, p, len);
        word[len] = '\0';
        memset(m, 0, sizeof(*m));
        snprintf(m->name, sizeof(m->name), "%s", word);
        m->pieces = NULL != strstr(word, "+p");
        m->ring = NULL != strstr(word, "+ring");
        m->ring_bytes = opt_ring;
        m->touch = NULL != strstr(word, "+t");
        m->own = NULL != strstr(word, "+w");
        m->pieces = m->pieces || m->touch;
        if (NULL != strstr(word, "+r") && !m->ring) {
            /* "+rSIZE": a ring of its own size */
            if (0 != bu_parse_size(strstr(word, "+r") + 2, &m->ring_bytes)
                || m->ring_bytes < 4096 || m->ring_bytes > ((size_t) 1 << 30)) {
                fprintf(stderr, "handoff: bad ring in '%s' (4K to 1G)\n", word);
                return -1;
            }
            m->ring = true;
        }
        word[strcspn(word, "+")] = '\0';
        for (k = 0; k < COPY_KINDS && 0 != strcmp(word, copy_names[k]); ++k) {
        }
        if (k == COPY_KINDS || (COPY_VEC == k && !__builtin_cpu_supports("avx2"))) {
            fprintf(stderr, "handoff: unknown or unsupported copy '%s'\n", word);
            return -1;
        }
        m->copy = (enum copy_kind) k;
        ++*nmethods;
        p += len + (p[len] == ',');
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES], max_size = 0;
    struct method methods[16];
    int nsizes, nmethods, rank = 0;
    static double results[16][MAX_REPS];
    struct channel *ch;
    unsigned char *areas;
    struct side s;
    pid_t child;

    if (0 != parse_args(argc, argv, sizes, &nsizes, methods, &nmethods)) {
        return 2;
    }
    for (int i = 0; i < nsizes; ++i) {
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
    }
    for (int k = 0; k < nmethods; ++k) {
        if (methods[k].ring && max_size > methods[k].ring_bytes) {
            fprintf(stderr, "handoff: %s: its ring must hold the largest size\n",
                    methods[k].name);
            return 2;
        }
    }
    for (int k = 0; k < nmethods; ++k) {
        opt_ring = methods[k].ring_bytes > opt_ring ? methods[k].ring_bytes : opt_ring;
    }
    ch = mmap(NULL, 2 * sizeof(*ch) + 2 * opt_ring + 4096, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == ch) {
        perror("handoff: mmap");
        return 2;
    }
    areas = (unsigned char *) ch + 4096;
    memset(areas, 0, 2 * opt_ring);
    child = fork();
    if (child < 0) {
        perror("handoff: fork");
        return 2;
    }
    rank = 0 == child ? 1 : 0;
    pin(opt_cpu[rank]);
    memset(&s, 0, sizeof(s));
    s.out = &ch[rank];
    s.in = &ch[1 - rank];
    s.out_area = areas + (size_t) rank * opt_ring;
    s.in_area = areas + (size_t) (1 - rank) * opt_ring;
    if (0 != bu_pool_plan(&s.pool, opt_pool_mb << 20, max_size ? max_size : 1, 4096, 2)) {
        fprintf(stderr, "handoff: bad pool\n");
        return 2;
    }
    if (0 != posix_memalign((void **) &s.send_buf, 4096, bu_pool_span(&s.pool) + 4096)
        || 0 != posix_memalign((void **) &s.recv_buf, 4096, bu_pool_span(&s.pool) + 4096)) {
        return 2;
    }
    memset(s.send_buf, 1 + rank, bu_pool_span(&s.pool));
    memset(s.recv_buf, 0, bu_pool_span(&s.pool));
    if (0 == rank) {
        printf("# handoff: CPUs %d,%d, piece %zu, ring %zu, reps %d, %s\n", opt_cpu[0],
               opt_cpu[1], opt_piece, opt_ring, opt_reps,
               opt_pool_mb ? "off-cache" : "buffers in cache");
        printf("%10s", "bytes");
        for (int k = 0; k < nmethods; ++k) {
            printf(" %14s", methods[k].name);
        }
        printf("   (us, median half round trip)\n");
    }
    for (int i = 0; i < nsizes; ++i) {
        const int iters = bu_iterations(sizes[i], 64u << 20, 200, 20000);
        for (int r = 0; r < opt_reps; ++r) {
            for (int k = 0; k < nmethods; ++k) {
                results[k][r] = sample(&s, rank, &methods[k], sizes[i], iters);
            }
        }
        if (0 == rank) {
            printf("%10zu", sizes[i]);
            for (int k = 0; k < nmethods; ++k) {
                printf(" %14.3f", bu_median(results[k], opt_reps) / 1000.0);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    if (0 != child) {
        int status;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    return 0;
}
