/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx skew (btl_smx_skew.c): a late receiver gets larger messages eagerly
 * (docs/using-smx.md, "A late receiver").
 */
#ifndef MCA_BTL_SMX_SKEW_H
#define MCA_BTL_SMX_SKEW_H

#include "btl_smx.h"

BEGIN_C_DECLS

/* The eager limit to late receivers this area allows (init, after the segment). */
void mca_btl_smx_skew_init(void);
/* Receiver: a get from ep starts (now: its clock, ns), or ended. */
void mca_btl_smx_skew_get_start(mca_btl_smx_endpoint_t *ep, uint32_t stamp);
/* Receiver: a message from ep, a sender I am late to, is handed over. */
void mca_btl_smx_skew_heard(mca_btl_smx_endpoint_t *ep);

END_C_DECLS

#endif /* MCA_BTL_SMX_SKEW_H */
