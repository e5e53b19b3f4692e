/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx btl_sendi (btl_smx_sendi.c): a small message written straight from the upper
 * layer's header and convertor, without a descriptor.
 */
#ifndef MCA_BTL_SMX_SENDI_H
#define MCA_BTL_SMX_SENDI_H

#include "btl_smx.h"

BEGIN_C_DECLS

int mca_btl_smx_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor);

END_C_DECLS

#endif /* MCA_BTL_SMX_SENDI_H */
