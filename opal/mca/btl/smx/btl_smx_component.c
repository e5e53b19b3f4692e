/*
 * btl/smx component: parameters, open/close, init.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#include "btl_smx.h"

static int smx_component_register(void);
static int smx_component_open(void);
static int smx_component_close(void);
static mca_btl_base_module_t **smx_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);

mca_btl_smx_component_t mca_btl_smx_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("smx"),
            .mca_open_component = smx_component_open,
            .mca_close_component = smx_component_close,
            .mca_register_component_params = smx_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_NONE,
        },
        .btl_init = smx_component_init,
    },
    .output = -1,
};

static int smx_component_register(void)
{
    mca_base_component_t *c = &mca_btl_smx_component.super.btl_version;

    (void) mca_base_var_group_component_register(
        c, "Shared-memory transport with a topology-aware eager/rendezvous switch");

    mca_btl_smx_component.verbose = 0;
    (void) mca_base_component_var_register(
        c, "verbose",
        "Verbosity of btl/smx: 1 says why the component is not used, 10 prints each peer's "
        "locality class and thresholds (default: 0)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_LOCAL, &mca_btl_smx_component.verbose);
    return OPAL_SUCCESS;
}

static int smx_component_open(void)
{
    mca_btl_smx_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_btl_smx_component.output, mca_btl_smx_component.verbose);
    return OPAL_SUCCESS;
}

static int smx_component_close(void)
{
    if (0 <= mca_btl_smx_component.output) {
        opal_output_close(mca_btl_smx_component.output);
        mca_btl_smx_component.output = -1;
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_module_t **smx_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;

    /* Scaffolding: the component loads and documents itself, but carries no traffic yet. */
    *num_btls = 0;
    opal_output_verbose(1, mca_btl_smx_component.output,
                        "btl:smx: not used: the transport is not implemented in this build "
                        "yet; select btl sm,self for shared memory");
    return NULL;
}
