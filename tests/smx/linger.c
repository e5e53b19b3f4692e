/*
 * Joins the job, exchanges one message with everybody (so btl/smx has attached every
 * peer's segment), prints READY and waits: a target for kill -9 in the cleanup test.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("READY %d\n", rank);
    fflush(stdout);
    sleep(60);
    MPI_Finalize();
    return 0;
}
