/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx endpoints (btl_smx_endpoint.c): peers found, attached (their segment mapped,
 * their class and smsc endpoint taken) and given up on.
 */
#ifndef MCA_BTL_SMX_ENDPOINT_H
#define MCA_BTL_SMX_ENDPOINT_H

#include "btl_smx.h"

BEGIN_C_DECLS

/* btl_smx_endpoint.c: the local rank of a peer of this job on this node other than me,
 * SMX_GUEST for a process of another job on this node, -1 if none; the endpoint of a
 * peer (local rank, or SMX_GUEST), attached on first sight, NULL if it cannot be reached;
 * the peer of another job that took slot k of my queue (NULL: none that can be
 * reached). */
#define SMX_GUEST (-2)
int mca_btl_smx_local_rank_of(opal_proc_t *proc);
mca_btl_smx_endpoint_t *mca_btl_smx_endpoint_of(opal_proc_t *proc, int local_rank);
mca_btl_smx_endpoint_t *mca_btl_smx_guest(uint32_t k);
/* A peer broke the protocol (what it sent cannot be): say so and abort the job. */
void mca_btl_smx_fatal(mca_btl_smx_endpoint_t *ep, const char *what) __opal_attribute_noreturn__;

END_C_DECLS

#endif /* MCA_BTL_SMX_ENDPOINT_H */
