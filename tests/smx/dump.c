/*
 * ob1's own dump of a communicator (mca_pml_ob1_dump, what a debugger or a hung job's
 * diagnosis calls) asks every BTL that reaches a peer to describe its endpoint; a BTL
 * without btl_dump crashed it. Both ranks exchange a message, then rank 0 dumps
 * MPI_COMM_WORLD; the test script reads what btl/smx printed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>

/* exported by libmpi (Open MPI's ob1), not declared in mpi.h */
extern int mca_pml_ob1_dump(MPI_Comm comm, int verbose);

int main(int argc, char **argv)
{
    int rank, size, token = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Sendrecv_replace(&token, 1, MPI_INT, 1 - rank, 0, 1 - rank, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    if (0 == rank) {
        int rc = mca_pml_ob1_dump(MPI_COMM_WORLD, 1);
        printf("dump: returned %d\n", rc);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
