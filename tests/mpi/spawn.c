/*
 * MPI_Comm_spawn: the children form a second job on the same node, which the transport
 * must reach from the parents and the parents from it. Every parent rank exchanges
 * messages of 1 B to 1 MiB both ways with the child of its rank (unaligned, odd sizes, a
 * strided datatype, and a receive from MPI_ANY_SOURCE), then all of them run a
 * collective on the merged communicator. Every byte is checked on the side that
 * receives it; the children's errors come back to the parents, whose verdict is the
 * test's.
 *
 * spawn [--expect-smx]: with --expect-smx, each parent also requires btl/smx's MPI_T
 * counters to show that the large messages from its child came through btl/smx (the
 * gets it served by single or double copy grew while they arrived).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHILDREN 2
static const size_t sizes[] = {1, 7, 64, 255, 4099, 65537, 262147, 1048576};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define CHILD_SENDER(r) (100 + (r))

/* btl/smx's get counters on this rank. Open MPI's counter handles count from the moment
 * they are made: smx_gets_bind before, smx_gets_read after. */
static struct {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[2];
    int bound;
} smx_counters;

static void smx_gets_bind(void)
{
    static const char *names[] = {"btl_smx_gets_single_copy", "btl_smx_gets_double_copy"};
    int n, provided;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)
        || MPI_SUCCESS != MPI_T_pvar_session_create(&smx_counters.session)) {
        return;
    }
    MPI_T_pvar_get_num(&n);
    for (int index = 0; index < n; ++index) {
        char vname[256];
        int len = sizeof(vname), var_class, count;
        MPI_Datatype type;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, vname, &len, NULL, &var_class, &type,
                                               NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            || MPI_UNSIGNED_LONG_LONG != type) {
            continue;
        }
        for (int k = 0; k < 2; ++k) {
            if (0 == strcmp(vname, names[k])
                && MPI_SUCCESS == MPI_T_pvar_handle_alloc(smx_counters.session, index, NULL,
                                                          &smx_counters.handle[k], &count)
                && 1 == count) {
                smx_counters.bound |= 1 << k;
            }
        }
    }
}

/* Gets since smx_gets_bind (single and double copy); -1 if btl/smx has no counters. */
static long long smx_gets_read(void)
{
    long long sum = 0;

    if (3 != smx_counters.bound) {
        return -1;
    }
    for (int k = 0; k < 2; ++k) {
        unsigned long long value = 0;
        if (MPI_SUCCESS != MPI_T_pvar_read(smx_counters.session, smx_counters.handle[k], &value)) {
            return -1;
        }
        sum += (long long) value;
    }
    return sum;
}

/* SMX_TEST_INJECT_FAULT=1: parent rank 1 corrupts the first byte it receives. */
static int inject_fault;

/* One message each way with the peer of my rank on the other side of 'inter'. */
static int exchange(MPI_Comm inter, int parent, int rank)
{
    int errors = 0;
    const int me = parent ? rank : CHILD_SENDER(rank);
    const int them = parent ? CHILD_SENDER(rank) : rank;

    for (size_t i = 0; i < NSIZES; ++i) {
        const size_t len = sizes[i];
        const size_t misalign = 1 + i % 7;
        char what[96];
        uint8_t *out = t_alloc(len, misalign, 64), *in = t_alloc(len, 3, 64);

        t_fill(out, len, me, (int) i);
        memset(in, T_POISON, len);
        snprintf(what, sizeof(what), "%s rank %d: %zu B from the %s", parent ? "parent" : "child",
                 rank, len, parent ? "child" : "parent");
        /* parents send first, children answer: every size crosses both ways */
        if (parent) {
            MPI_Send(out, (int) len, MPI_BYTE, rank, (int) i, inter);
            MPI_Recv(in, (int) len, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : rank, (int) i, inter,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Status st;
            MPI_Recv(in, (int) len, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : rank, (int) i, inter, &st);
            if (st.MPI_SOURCE != rank) {
                fprintf(stderr, "%s: came from remote rank %d\n", what, st.MPI_SOURCE);
                errors++;
            }
            MPI_Send(out, (int) len, MPI_BYTE, rank, (int) i, inter);
        }
        if (inject_fault && parent && 1 == rank && 0 == i) {
            in[len / 2] ^= 0x5a; /* the checks must be able to fail */
        }
        errors += t_check(in, len, them, (int) i, what);
        errors += t_check_guards(in, len, 64, what);
        t_free(out, misalign, 64);
        t_free(in, 3, 64);
    }

    /* a strided datatype: every other 8-byte block of 64 Ki blocks (512 KiB of data) */
    {
        const int blocks = 65536;
        MPI_Datatype vec;
        uint8_t *buf = malloc((size_t) blocks * 16), *want = malloc((size_t) blocks * 16);
        int sender = parent ? them : me; /* the parent receives what the child sent */

        MPI_Type_vector(blocks, 8, 16, MPI_BYTE, &vec);
        MPI_Type_commit(&vec);
        t_fill(want, (size_t) blocks * 16, sender, 99);
        if (parent) {
            memset(buf, T_POISON, (size_t) blocks * 16);
            MPI_Recv(buf, 1, vec, rank, 99, inter, MPI_STATUS_IGNORE);
            for (int b = 0; b < blocks && !errors; ++b) {
                if (memcmp(buf + 16 * b, want + 16 * b, 8)
                    || t_check_poison(buf + 16 * b + 8, 8, "the gap of a strided receive")) {
                    fprintf(stderr, "parent rank %d: strided message from the child: block %d "
                            "wrong\n", rank, b);
                    errors++;
                }
            }
        } else {
            MPI_Send(want, 1, vec, rank, 99, inter);
        }
        MPI_Type_free(&vec);
        free(buf);
        free(want);
    }
    return errors;
}

/* Parents and children in one communicator: an allreduce over all of them. */
static int merged_check(MPI_Comm inter, int high)
{
    MPI_Comm merged;
    int msize, mrank, sum = 0, want = 0, errors = 0;

    MPI_Intercomm_merge(inter, high, &merged);
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
    for (int r = 0; r < msize; ++r) {
        want += r;
    }
    if (sum != want || msize != 2 * CHILDREN) {
        fprintf(stderr, "spawn: the merged communicator is wrong (%d ranks, sum %d)\n", msize,
                sum);
        errors++;
    }
    MPI_Comm_free(&merged);
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Comm parent_comm, inter;
    int expect_smx = argc > 1 && 0 == strcmp(argv[1], "--expect-smx");
    int errors = 0, rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent_comm);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    inject_fault = NULL != getenv("SMX_TEST_INJECT_FAULT") && atoi(getenv("SMX_TEST_INJECT_FAULT")) > 0;
    t_inject_rank = -1; /* (common.c's own injection is not used here) */

    if (MPI_COMM_NULL != parent_comm) {
        /* a child: answer the parent of my rank, join the collective, report */
        inter = parent_comm;
        errors += exchange(inter, 0, rank);
        errors += merged_check(inter, 1);
        MPI_Send(&errors, 1, MPI_INT, rank, 1000, inter);
        MPI_Comm_disconnect(&inter);
        MPI_Finalize();
        return 0;
    }

    if (size != CHILDREN) {
        if (0 == rank) {
            fprintf(stderr, "spawn: run with %d ranks (as many as it spawns)\n", CHILDREN);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    {
        char *child_argv[] = {NULL};
        int codes[CHILDREN];
        MPI_Info info;

        /* on a machine with fewer cores than parents and children together */
        MPI_Info_create(&info);
        MPI_Info_set(info, "PMIX_MAPBY", "slot:oversubscribe");
        MPI_Comm_spawn(argv[0], child_argv, CHILDREN, info, 0, MPI_COMM_WORLD, &inter, codes);
        MPI_Info_free(&info);
        for (int i = 0; i < CHILDREN; ++i) {
            if (MPI_SUCCESS != codes[i]) {
                fprintf(stderr, "spawn: child %d did not start (%d)\n", i, codes[i]);
                errors++;
            }
        }
    }
    smx_gets_bind();
    errors += exchange(inter, 1, rank);
    if (expect_smx) {
        /* the parents' own traffic is not counted: they only talk to their children here */
        long long n = smx_gets_read();
        if (n < 0) {
            fprintf(stderr, "spawn: rank %d: btl/smx's counters are not there\n", rank);
            errors++;
        } else if (n < 3) { /* 262147 B, 1 MiB and the strided 1 MiB at least */
            fprintf(stderr, "spawn: rank %d: btl/smx pulled %lld of the child's large "
                    "messages, fewer than 3\n", rank, n);
            errors++;
        } else {
            printf("spawn: rank %d: %lld rendezvous from the child through btl/smx\n", rank, n);
        }
    }
    errors += merged_check(inter, 0);
    {
        int child_errors = 0;
        MPI_Recv(&child_errors, 1, MPI_INT, rank, 1000, inter, MPI_STATUS_IGNORE);
        errors += child_errors;
    }
    MPI_Comm_disconnect(&inter);
    {
        int all = 0;
        MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("spawn: %s (%d parents, %d children, %d error%s)\n", all ? "FAIL" : "PASS",
                   CHILDREN, CHILDREN, all, 1 == all ? "" : "s");
        }
        errors = all;
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
