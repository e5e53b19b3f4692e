/*
 * btl/smx: Open MPI shared-memory BTL with a topology-aware eager/rendezvous switch.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_BTL_SMX_H
#define MCA_BTL_SMX_H

#include "opal_config.h"

#include "opal/mca/btl/btl.h"

BEGIN_C_DECLS

struct mca_btl_smx_component_t {
    mca_btl_base_component_3_0_0_t super;
    /** btl_smx_verbose: 0 silent; 1 why the component declines; 10 per-peer decisions */
    int verbose;
    /** opal_output stream at that verbosity */
    int output;
};
typedef struct mca_btl_smx_component_t mca_btl_smx_component_t;

OPAL_DECLSPEC extern mca_btl_smx_component_t mca_btl_smx_component;

END_C_DECLS

#endif /* MCA_BTL_SMX_H */
