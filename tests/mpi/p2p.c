/*
 * Point-to-point, every size from 0 B to 16 MiB (odd sizes and both sides of the usual
 * protocol boundaries), aligned and unaligned on both sides: each rank sends to its right
 * neighbour and receives from its left one; every byte and the guard bytes are checked,
 * and the received count must equal the sent size. Every size from 0 to 600 B goes too,
 * each at its own offsets, and from send buffers that end where an inaccessible page
 * begins or begin where one ends, so that a copy that reads past the buffer ends the
 * test: btl/smx copies payloads of up to 512 B with code of its own, a branch per range
 * of sizes (btl_smx_sendi.c). Last, bursts of unexpected 1-4 KiB messages.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUARD 64

struct alignment {
    size_t send, recv;
};

/* A message of 'len' bytes received into rbuf (allocated with GUARD bytes each side)
 * from 'from' with tag 'tag' as filled by t_fill: check the count, every byte and both
 * guards. 'what' names the case. */
static int check_received(const uint8_t *rbuf, size_t len, const MPI_Status *st, int from,
                          int tag, const char *what)
{
    int count, errors = 0;

    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t) count != len) {
        fprintf(stderr, "p2p: rank %d: %s: received count %d\n", t_rank, what, count);
        errors++;
    }
    errors += t_check(rbuf, len, from, tag, what);
    errors += t_check_poison(rbuf - GUARD, GUARD, what);
    errors += t_check_poison(rbuf + len, GUARD, what);
    return errors;
}

/* Send 'len' bytes from sbuf to the right neighbour, receive as many from the left one
 * into a buffer 'recv_offset' bytes off alignment; check every byte, both guards, the
 * count, and the send buffer afterwards. 'what' names the case. */
static int exchange(uint8_t *sbuf, size_t len, size_t recv_offset, int msg, const char *what)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    uint8_t *rbuf = t_alloc(len, recv_offset, GUARD);
    MPI_Status st;
    int errors;

    t_fill(sbuf, len, t_rank, msg);
    T_CHECK_MPI(MPI_Sendrecv(sbuf, (int) len, MPI_BYTE, right, msg, rbuf, (int) len, MPI_BYTE,
                             left, msg, MPI_COMM_WORLD, &st));
    errors = check_received(rbuf, len, &st, left, msg, what);
    /* The send buffer must come back unchanged too (single copy reads it in place). */
    errors += t_check(sbuf, len, t_rank, msg, "send buffer after the send");
    t_free(rbuf, recv_offset, GUARD);
    return errors;
}

static int ring_exchange(size_t len, struct alignment a, int msg)
{
    uint8_t *sbuf = t_alloc(len, a.send, GUARD);
    char what[96];
    int errors;

    snprintf(what, sizeof(what), "ring size %zu, send offset %zu, recv offset %zu", len, a.send,
             a.recv);
    errors = exchange(sbuf, len, a.recv, msg, what);
    t_free(sbuf, a.send, GUARD);
    return errors;
}

/* A send buffer of 'len' bytes against an inaccessible page: ending at one (at_end), or
 * starting right after one. */
static int edge_exchange(size_t len, int at_end, int msg)
{
    const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    char what[96];
    int errors;

    if (MAP_FAILED == map || 0 != mprotect(map, page, PROT_NONE)
        || 0 != mprotect(map + 2 * page, page, PROT_NONE)) {
        /* (the peers would wait for this rank's message for ever) */
        fprintf(stderr, "p2p: rank %d: cannot map the guard pages\n", t_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    snprintf(what, sizeof(what), "size %zu, send buffer %s a guard page", len,
             at_end ? "ending at" : "starting after");
    errors = exchange(at_end ? map + 2 * page - len : map + page, len, 0, msg, what);
    munmap(map, 3 * page);
    return errors;
}

/* Blocking ping-pong between ranks 0 and 1 with a synchronous send: the rendezvous path
 * without the symmetry of Sendrecv. */
static int pingpong(size_t len, int msg)
{
    int errors = 0;
    if (t_rank > 1) {
        return 0;
    }
    uint8_t *buf = t_alloc(len, 3, GUARD);
    int peer = 1 - t_rank;
    if (0 == t_rank) {
        t_fill(buf, len, 0, msg);
        T_CHECK_MPI(MPI_Ssend(buf, (int) len, MPI_BYTE, peer, msg, MPI_COMM_WORLD));
        T_CHECK_MPI(MPI_Recv(buf, (int) len, MPI_BYTE, peer, msg, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
        errors += t_check(buf, len, 1, msg + 1, "ping-pong reply");
    } else {
        T_CHECK_MPI(MPI_Recv(buf, (int) len, MPI_BYTE, peer, msg, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
        errors += t_check(buf, len, 0, msg, "ping-pong request");
        t_fill(buf, len, 1, msg + 1);
        T_CHECK_MPI(MPI_Send(buf, (int) len, MPI_BYTE, peer, msg, MPI_COMM_WORLD));
    }
    errors += t_check_poison(buf + len, GUARD, "ping-pong guard");
    t_free(buf, 3, GUARD);
    return errors;
}

/* Bursts of 1-4 KiB messages to the right neighbour while it sleeps outside MPI (so
 * that it reads none until the whole burst is out), received in reverse order: a burst
 * takes more lines than half a 512 KiB pair ring, so that its records reach the medium-
 * record lap while the reader is behind (btl_smx_fifo.h: they must not go back over the
 * unread ones). One sender a round, in turn, four bursts each. 'msg' is the first of
 * BURST tags. */
#define BURST 128
static int medium_bursts(int msg)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size, errors = 0;
    uint8_t *sbuf[BURST];
    MPI_Request req[BURST];
    size_t len[BURST];

    for (int round = 0; round < 4 * t_size; ++round) {
        const int sender = round % t_size;
        for (int i = 0; i < BURST; ++i) {
            len[i] = 513 + (size_t) ((round * BURST + i) * 97) % 3584;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank == sender) {
            for (int i = 0; i < BURST; ++i) {
                sbuf[i] = t_alloc(len[i], (size_t) i % 7, GUARD);
                t_fill(sbuf[i], len[i], t_rank, msg + round * BURST + i);
                T_CHECK_MPI(MPI_Isend(sbuf[i], (int) len[i], MPI_BYTE, right, msg + i,
                                      MPI_COMM_WORLD, &req[i]));
            }
        } else if ((sender + 1) % t_size == t_rank) {
            usleep(20000); /* the receiver stays out of MPI while the burst goes out */
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if ((sender + 1) % t_size == t_rank) {
            for (int i = BURST - 1; i >= 0; --i) {
                char what[64];
                uint8_t *rbuf = t_alloc(len[i], (size_t) i % 5, GUARD);
                MPI_Status st;

                snprintf(what, sizeof(what), "medium burst %d, message %d of %zu B", round, i,
                         len[i]);
                T_CHECK_MPI(MPI_Recv(rbuf, (int) len[i], MPI_BYTE, left, msg + i,
                                     MPI_COMM_WORLD, &st));
                errors += check_received(rbuf, len[i], &st, left, msg + round * BURST + i, what);
                t_free(rbuf, (size_t) i % 5, GUARD);
            }
        }
        if (t_rank == sender) {
            T_CHECK_MPI(MPI_Waitall(BURST, req, MPI_STATUSES_IGNORE));
            for (int i = 0; i < BURST; ++i) {
                t_free(sbuf[i], (size_t) i % 7, GUARD);
            }
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    static const struct alignment alignments[] = {{0, 0}, {1, 3}, {7, 5}, {4, 0}};
    int nsizes, errors = 0, msg = 0;
    const size_t *sizes;

    t_init(&argc, &argv, "p2p");
    sizes = t_sizes(&nsizes);
    for (int s = 0; s < nsizes; ++s) {
        /* Quick mode keeps one misaligned case per size beyond 64 KiB. */
        int nalign = (t_quick && sizes[s] > 65536) ? 2 : 4;
        for (int a = 0; a < nalign; ++a) {
            errors += ring_exchange(sizes[s], alignments[a], msg++);
        }
        errors += pingpong(sizes[s], msg);
        msg += 2;
    }
    for (size_t len = 0; len <= 600; ++len) {
        const struct alignment a = {len % 13, (len * 5) % 11};
        errors += ring_exchange(len, a, msg++);
        errors += edge_exchange(len, len & 1, msg++);
    }
    errors += medium_bursts(msg);
    return t_finish(errors);
}
