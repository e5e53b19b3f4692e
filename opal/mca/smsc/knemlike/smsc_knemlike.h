/*
 * smsc/knemlike: shared-memory single copy through the knemlike kernel module.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_SMSC_KNEMLIKE_H
#define MCA_SMSC_KNEMLIKE_H

#include "opal_config.h"

#include "opal/mca/smsc/smsc.h"

BEGIN_C_DECLS

struct mca_smsc_knemlike_component_t {
    mca_smsc_component_t super;
    /** smsc_knemlike_device: path of the character device */
    char *device;
};
typedef struct mca_smsc_knemlike_component_t mca_smsc_knemlike_component_t;

OPAL_DECLSPEC extern mca_smsc_knemlike_component_t mca_smsc_knemlike_component;

END_C_DECLS

#endif /* MCA_SMSC_KNEMLIKE_H */
