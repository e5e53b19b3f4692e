/*
 * Under MPI_THREAD_MULTIPLE, an eager send that btl/smx had to hold back (its ring to the
 * receiver full) completes only once the receiver has taken it, not once it is written
 * into the ring: ob1 completes a synchronous send at the later of that completion and
 * the receiver's ACK, and a completion before the ACK woke sleeping threads far more
 * often (docs/design.md, "Threads: synchronous sends").
 *
 * Two ranks; only the sender's main thread calls MPI. The ranks step through a shared
 * window's flags, read and written without an MPI call, so that the receiver makes no
 * progress but where told:
 *   1. the sender sends 64-byte messages until one is not complete at once (the ring is
 *      full, the message X held on the endpoint), and says so;
 *   2. the receiver makes one MPI_Iprobe (one progress call: a few records taken, room
 *      made; X, written behind the rest, not taken) and says so;
 *   3. the sender tests X many times (its progress writes X into the ring as soon as
 *      there is room) and says whether it completed;
 *   4. the receiver receives every message, checking bytes and sizes, and MPI_Wait on X
 *      must return.
 * X complete in step 3 is a send completed before its receiver took it: the test fails.
 * Run with --mca btl smx,self (check-smx-semantics.sh).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN 64
#define MOST 100000 /* messages before giving up on a full ring */
#define TESTS 200000 /* MPI_Test calls on X in step 3 */

enum { FILLED = 1, PROBED, TESTED };

static volatile int *flags; /* [0]: the step reached; [1]: messages sent; [2]: X completed */

static void wait_step(int step)
{
    while (__atomic_load_n(&flags[0], __ATOMIC_ACQUIRE) < step) {
        usleep(100);
    }
}

static void say(int step)
{
    __atomic_store_n(&flags[0], step, __ATOMIC_RELEASE);
}

static void fill(unsigned char *m, int i)
{
    for (int j = 0; j < LEN; ++j) {
        m[j] = (unsigned char) (i * 7 + j * 13 + 1);
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size, errors = 0;
    MPI_Comm node;
    MPI_Win win;
    MPI_Aint wsize;
    int disp;
    void *base;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (MPI_THREAD_MULTIPLE != provided || 2 != size) {
        if (0 == rank) {
            fprintf(stderr, "takenfirst: needs 2 ranks and MPI_THREAD_MULTIPLE (got %d)\n",
                    provided);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Win_allocate_shared(0 == rank ? 4 * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL, node,
                            &base, &win);
    MPI_Win_shared_query(win, 0, &wsize, &disp, &base);
    flags = base;
    if (0 == rank) {
        memset(base, 0, 4 * sizeof(int));
    }
    /* warm up: enough messages each way for btl/smx to make its pair rings */
    for (int i = 0; i < 64; ++i) {
        unsigned char b[LEN];
        MPI_Sendrecv_replace(b, LEN, MPI_BYTE, 1 - rank, 0, 1 - rank, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned char(*msgs)[LEN] = malloc((size_t) MOST * LEN);
    if (0 == rank) {
        MPI_Request *reqs = malloc((size_t) MOST * sizeof(*reqs));
        int n = 0, done = 1;
        for (; n < MOST && done; ++n) {
            fill(msgs[n], n);
            MPI_Isend(msgs[n], LEN, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &reqs[n]);
            MPI_Test(&reqs[n], &done, MPI_STATUS_IGNORE);
        }
        flags[1] = n; /* X is message n - 1, unless all completed */
        say(FILLED);
        if (!done) {
            wait_step(PROBED);
            for (int t = 0; t < TESTS && !done; ++t) {
                MPI_Test(&reqs[n - 1], &done, MPI_STATUS_IGNORE);
            }
            flags[2] = done;
        }
        say(TESTED);
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        free(reqs);
    } else {
        wait_step(FILLED);
        const int n = flags[1];
        int found = 0;
        MPI_Status st;
        MPI_Iprobe(0, 2, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE); /* (no tag 2: progress) */
        say(PROBED);
        wait_step(TESTED);
        if (n >= MOST) {
            fprintf(stderr, "takenfirst: %d messages of %d bytes all completed at once: "
                            "no ring filled, nothing checked\n", n, LEN);
            errors++;
        } else if (flags[2]) {
            fprintf(stderr, "takenfirst: message %d of %d (held back, the ring full) completed "
                            "at the sender before the receiver took it\n", n, n);
            errors++;
        }
        for (int i = 0; i < n; ++i) {
            unsigned char want[LEN];
            int count = -1;
            fill(want, i);
            MPI_Recv(msgs[i], LEN, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (LEN != count || 0 != memcmp(msgs[i], want, LEN)) {
                fprintf(stderr, "takenfirst: message %d: %d bytes, %s\n", i, count,
                        0 != memcmp(msgs[i], want, LEN) ? "wrong bytes" : "bytes right");
                errors++;
            }
        }
        printf("takenfirst: %d messages, the last held back until the ring had room\n", n);
    }
    free(msgs);
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("takenfirst: %s\n", 0 == errors ? "PASS" : "FAIL");
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0 == errors ? 0 : 1;
}
