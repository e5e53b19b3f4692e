/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx parameters (btl_smx_params.c): registered at component open, checked and
 * turned into the component's settings at init.
 */
#ifndef MCA_BTL_SMX_PARAMS_H
#define MCA_BTL_SMX_PARAMS_H

#include "btl_smx.h"

BEGIN_C_DECLS

int mca_btl_smx_params_register(void);
bool mca_btl_smx_params_valid(void);

END_C_DECLS

#endif /* MCA_BTL_SMX_PARAMS_H */
