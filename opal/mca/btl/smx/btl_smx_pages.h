/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx pages (btl_smx_pages.c): the pages of my segment, taken from the file system
 * and mapped before they are used, so that no transfer stops on a full /dev/shm (SIGBUS)
 * or on page faults.
 */
#ifndef MCA_BTL_SMX_PAGES_H
#define MCA_BTL_SMX_PAGES_H

#include <stdint.h>

BEGIN_C_DECLS

/* The free space in the backing directory my segment was sized by (bytes), for the
 * message of a reservation that fails. */
void mca_btl_smx_pages_have(uint64_t bytes);
/* Take the pages of [offset, offset + len) of my segment from the file system and map
 * them for writing: 0, or an errno (none taken). */
int mca_btl_smx_reserve(uint64_t offset, uint64_t len);
/* Say that 'bytes' could not be reserved at init (errno rc): btl/smx is not used. */
void mca_btl_smx_reserve_refused(uint64_t bytes, int rc);
/* Bytes of my segment reserved so far. */
uint64_t mca_btl_smx_reserved_bytes(void);

END_C_DECLS

#endif /* MCA_BTL_SMX_PAGES_H */
