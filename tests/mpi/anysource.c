/*
 * MPI_ANY_SOURCE and MPI_ANY_TAG: every rank but 0 sends a series of messages of mixed
 * sizes (small, eager-sized and rendezvous-sized) to rank 0, which receives them all with
 * wildcards. The status must name the true sender, tag and count; the data must be that
 * sender's; and each sender's messages must arrive in the order sent (non-overtaking).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

static const size_t mixed_sizes[] = {0, 1, 17, 4096, 4097, 33000, 65537, 300001, 2 * T_MiB + 9};
#define NMIXED ((int) (sizeof(mixed_sizes) / sizeof(mixed_sizes[0])))

static size_t size_of(int sender, int i)
{
    return mixed_sizes[(i + sender) % NMIXED];
}

int main(int argc, char **argv)
{
    int errors = 0;

    t_init(&argc, &argv, "anysource");
    int per_sender = t_quick ? NMIXED : 3 * NMIXED;
    size_t max = 2 * T_MiB + 9;

    if (0 != t_rank) {
        uint8_t *buf = malloc(max);
        for (int i = 0; i < per_sender; ++i) {
            size_t len = size_of(t_rank, i);
            t_fill(buf, len, t_rank, i);
            T_CHECK_MPI(MPI_Send(buf, (int) len, MPI_BYTE, 0, i, MPI_COMM_WORLD));
        }
        free(buf);
    } else {
        uint8_t *buf = t_alloc(max, 5, 16);
        int *next = calloc((size_t) t_size, sizeof(int));
        for (int n = 0; n < per_sender * (t_size - 1); ++n) {
            MPI_Status st;
            int count;
            char what[96];
            T_CHECK_MPI(MPI_Recv(buf, (int) max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                 MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            int src = st.MPI_SOURCE, tag = st.MPI_TAG;
            if (src <= 0 || src >= t_size) {
                fprintf(stderr, "anysource: status names impossible source %d\n", src);
                errors++;
                continue;
            }
            if (tag != next[src]) {
                fprintf(stderr, "anysource: from rank %d got message %d, expected %d (overtaken)\n",
                        src, tag, next[src]);
                errors++;
            }
            next[src] = tag + 1;
            if ((size_t) count != size_of(src, tag)) {
                fprintf(stderr, "anysource: message %d from %d has count %d, expected %zu\n", tag,
                        src, count, size_of(src, tag));
                errors++;
                continue;
            }
            snprintf(what, sizeof(what), "ANY_SOURCE message %d from rank %d", tag, src);
            errors += t_check(buf, (size_t) count, src, tag, what);
        }
        free(next);
        t_free(buf, 5, 16);
    }
    return t_finish(errors);
}
