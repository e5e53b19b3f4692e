/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx receiving (btl_smx_recv.c): my queue and the rings of my frequent senders
 * polled, each message handed to the upper layer or to the room of its kind.
 */
#ifndef MCA_BTL_SMX_RECV_H
#define MCA_BTL_SMX_RECV_H

#include "btl_smx.h"

BEGIN_C_DECLS

int mca_btl_smx_progress(void);

END_C_DECLS

#endif /* MCA_BTL_SMX_RECV_H */
