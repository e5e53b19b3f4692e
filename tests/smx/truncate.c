/*
 * A message larger than its receive must fail that receive with MPI_ERR_TRUNCATE, whether
 * the receive was posted before the message came or after, and the part received must be
 * the message's first bytes. (Past them ob1 itself may write, as it does on stock btl/sm:
 * the buffer here is as large as the message.) Rank 0 sends LEN bytes, rank 1 receives into RECV_LEN bytes,
 * once unexpected (posted after the message came), once posted first.
 *
 *   truncate LEN RECV_LEN
 *
 * Prints "truncate: PASS" or "truncate: FAIL ..." (rank 1). Used by
 * tests/check-smx-semantics.sh on btl/smx with every receiver taken for late (messages above a fragment then go in
 * several chunks: ob1 must still see the whole message).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t byte_of(size_t i)
{
    return (uint8_t) (i * 13u + (i >> 10) + 5u);
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (3 != argc || 2 != size) {
        if (0 == rank) {
            fprintf(stderr, "usage (2 ranks): truncate LEN RECV_LEN\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const size_t len = strtoul(argv[1], NULL, 0), recv_len = strtoul(argv[2], NULL, 0);
    uint8_t *buf = malloc(len);

    if (NULL == buf || recv_len >= len) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int posted = 0; posted < 2; ++posted) {
        if (0 == rank) {
            for (size_t i = 0; i < len; ++i) {
                buf[i] = byte_of(i);
            }
            /* unexpected: rank 1 posts its receive after a barrier that follows the send
             * (eager messages are in by then); posted: after rank 1's word */
            MPI_Request s;
            if (posted) {
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            MPI_Isend(buf, (int) len, MPI_BYTE, 1, posted, MPI_COMM_WORLD, &s);
            if (!posted) {
                MPI_Barrier(MPI_COMM_WORLD);
            }
            MPI_Wait(&s, MPI_STATUS_IGNORE);
        } else {
            MPI_Status st;
            MPI_Request r;
            int rc, cls;

            for (size_t i = 0; i < len; ++i) {
                buf[i] = 0;
            }
            if (!posted) {
                MPI_Barrier(MPI_COMM_WORLD);
                rc = MPI_Recv(buf, (int) recv_len, MPI_BYTE, 0, posted, MPI_COMM_WORLD, &st);
            } else {
                MPI_Irecv(buf, (int) recv_len, MPI_BYTE, 0, posted, MPI_COMM_WORLD, &r);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
                rc = MPI_Wait(&r, &st);
            }
            if (MPI_ERR_IN_STATUS == rc) {
                rc = st.MPI_ERROR;
            }
            MPI_Error_class(rc, &cls);
            if (MPI_ERR_TRUNCATE != cls) {
                printf("truncate: FAIL %s receive of %zu bytes, message of %zu: error class "
                       "%d, not MPI_ERR_TRUNCATE (%d)\n", posted ? "a posted" : "an unexpected",
                       recv_len, len, cls, MPI_ERR_TRUNCATE);
                errors++;
            }
            for (size_t i = 0; i < recv_len; ++i) {
                if (buf[i] != byte_of(i)) {
                    printf("truncate: FAIL %s receive: byte %zu is %u, not %u\n",
                           posted ? "posted" : "unexpected", i, buf[i], byte_of(i));
                    errors++;
                    break;
                }
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("truncate: %s\n", 0 == errors ? "PASS" : "FAIL");
    }
    free(buf);
    MPI_Finalize();
    return 0 != errors;
}
