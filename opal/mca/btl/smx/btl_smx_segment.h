/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx segment (btl_smx_segment.c): my segment sized, created, published and
 * destroyed; its layout is in btl_smx_types.h.
 */
#ifndef MCA_BTL_SMX_SEGMENT_H
#define MCA_BTL_SMX_SEGMENT_H

#include "btl_smx.h"

BEGIN_C_DECLS

/* What a process publishes of its segment (its btl's modex entry): the file descriptor
 * the process keeps open to it, which a process of another job opens through /proc once
 * the file is gone (-1: none); then the part in use of the descriptor a peer maps the
 * segment by (ds_size bytes: opal_shmem_sizeof_shmem_ds, the name without the rest of its
 * OPAL_PATH_MAX bytes), and its cpuset as a list, "" if unknown, NUL-terminated. About 100
 * bytes, where the whole descriptor took 4.2 KiB: every process of a node fetches every
 * other's entry at MPI_Init (N x N of them, through the PMIx server). */
struct smx_modex {
    int32_t fd;
    uint32_t ds_size;
    char data[];
};

/* Size and create my segment (init); publish it (its modex entry); undo both (finalize,
 * or init giving up; my chunks are given back before: mca_btl_smx_chunks_fini). */
int mca_btl_smx_segment_create(void);
int mca_btl_smx_segment_publish(void);
void mca_btl_smx_segment_destroy(void);

END_C_DECLS

#endif /* MCA_BTL_SMX_SEGMENT_H */
