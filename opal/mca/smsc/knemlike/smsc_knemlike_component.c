/*
 * smsc/knemlike component: parameters, query, enable.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/util/output.h"

#include "smsc_knemlike.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Above cma (37): a working kernel single-copy device is preferred over ptrace-based CMA. */
#define SMSC_KNEMLIKE_DEFAULT_PRIORITY 40

static int knemlike_component_register(void);
static int knemlike_component_query(void);
static mca_smsc_module_t *knemlike_component_enable(void);

mca_smsc_knemlike_component_t mca_smsc_knemlike_component = {
    .super = {
        .smsc_version = {
            MCA_SMSC_DEFAULT_VERSION("knemlike"),
            .mca_register_component_params = knemlike_component_register,
        },
        .priority = SMSC_KNEMLIKE_DEFAULT_PRIORITY,
        .query = knemlike_component_query,
        .enable = knemlike_component_enable,
    },
};

static int knemlike_component_register(void)
{
    mca_smsc_base_register_default_params(&mca_smsc_knemlike_component.super,
                                          SMSC_KNEMLIKE_DEFAULT_PRIORITY);

    mca_smsc_knemlike_component.device = "/dev/knemlike";
    (void) mca_base_component_var_register(
        &mca_smsc_knemlike_component.super.smsc_version, "device",
        "Character device of the knemlike kernel module (default: /dev/knemlike)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_smsc_knemlike_component.device);
    return OPAL_SUCCESS;
}

static int knemlike_decline(const char *reason)
{
    opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                        "smsc:knemlike: not available: %s", reason);
    mca_smsc_knemlike_component.super.priority = -1;
    return OPAL_ERR_NOT_AVAILABLE;
}

static int knemlike_component_query(void)
{
    if (0 != access(mca_smsc_knemlike_component.device, R_OK | W_OK)) {
        char reason[256];
        snprintf(reason, sizeof(reason), "cannot open %s: %s (is knemlike.ko loaded?)",
                 mca_smsc_knemlike_component.device, strerror(errno));
        return knemlike_decline(reason);
    }
    /* Scaffolding: the single-copy module is not implemented in this build yet. */
    return knemlike_decline("single copy through the device is not implemented in this build");
}

static mca_smsc_module_t *knemlike_component_enable(void)
{
    return NULL;
}
