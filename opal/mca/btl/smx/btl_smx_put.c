/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx put: single copy into the peer's memory through the selected SMSC component
 * (only offered when one is selected; ob1 uses get, one-sided components may use put).
 */
#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"

#include "btl_smx.h"
#include "btl_smx_get.h"

int mca_btl_smx_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                    void *cbcontext, void *cbdata)
{
    int rc;

    if (NULL == endpoint->smsc_endpoint) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    rc = MCA_SMSC_CALL(copy_to, endpoint->smsc_endpoint, local_address,
                       (void *) (uintptr_t) remote_address, size,
                       mca_btl_smx_smsc_data(remote_handle));
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}
