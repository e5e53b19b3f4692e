/*
 * A btl/smx performance variable read through MPI_T, for the tests in this directory. A
 * counter's handle counts from the moment it is bound (Open MPI reads it as the change
 * since then): bind before what is to be counted.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMX_TEST_PVAR_H
#define SMX_TEST_PVAR_H

#include <mpi.h>

struct pvar {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int bound;
};

static inline void pvar_bind(struct pvar *p, const char *name, int var_class)
{
    int index, count;

    p->bound = MPI_SUCCESS == MPI_T_pvar_get_index(name, var_class, &index)
               && MPI_SUCCESS == MPI_T_pvar_session_create(&p->session);
    if (p->bound
        && MPI_SUCCESS != MPI_T_pvar_handle_alloc(p->session, index, NULL, &p->handle, &count)) {
        MPI_T_pvar_session_free(&p->session);
        p->bound = 0;
    }
}

/* Its value, and the handle freed; -1 when it could not be bound or read. */
static inline long long pvar_take(struct pvar *p)
{
    unsigned long long value = 0;
    int rc;

    if (!p->bound) {
        return -1;
    }
    rc = MPI_T_pvar_read(p->session, p->handle, &value);
    MPI_T_pvar_handle_free(p->session, &p->handle);
    MPI_T_pvar_session_free(&p->session);
    return MPI_SUCCESS == rc ? (long long) value : -1;
}

#endif /* SMX_TEST_PVAR_H */
