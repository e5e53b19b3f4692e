/*
 * btl/smx component: parameters, open/close, init.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"

#include <limits.h>
#include <stdio.h>

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
        .btl_progress = mca_btl_smx_progress,
    },
    .output = -1,
};

static void smx_register_int(const char *name, const char *help, int level, int *storage)
{
    (void) mca_base_component_var_register(&mca_btl_smx_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0,
                                           MCA_BASE_VAR_FLAG_SETTABLE, level,
                                           MCA_BASE_VAR_SCOPE_LOCAL, storage);
}

static int smx_component_register(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module;

    (void) mca_base_var_group_component_register(
        &c->super.btl_version, "Shared-memory transport with a topology-aware eager/rendezvous switch");

    c->verbose = 0;
    smx_register_int("verbose",
                     "Verbosity of btl/smx: 1 says why the component is not used, 10 prints each "
                     "peer it reaches (default: 0)",
                     OPAL_INFO_LVL_5, &c->verbose);
    c->ring_slots = 32;
    smx_register_int("ring_slots",
                     "Slots in the ring each local sender has in this process's segment (2 to "
                     "4096; default: 32)",
                     OPAL_INFO_LVL_5, &c->ring_slots);
    c->frag_size = 32 * 1024;
    smx_register_int("frag_size",
                     "Payload bytes of one ring slot: the largest fragment (1024 to 1048576; "
                     "btl_smx_max_send_size may not exceed it; default: 32768)",
                     OPAL_INFO_LVL_5, &c->frag_size);

    /* The same starting points as btl/sm, so the two compare like for like until the
     * topology-aware switch sets them per locality class. */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_HIGH - 1; /* sm keeps the default until smx wins */
    m->btl_eager_limit = 4 * 1024;
    m->btl_rndv_eager_limit = 32 * 1024;
    m->btl_max_send_size = 32 * 1024;
    m->btl_min_rdma_pipeline_size = INT_MAX;
    m->btl_rdma_pipeline_send_length = m->btl_eager_limit;
    m->btl_rdma_pipeline_frag_size = m->btl_eager_limit;
    m->btl_flags = MCA_BTL_FLAGS_SEND;
    m->btl_bandwidth = 20000;
    m->btl_latency = 1;
    mca_btl_base_param_register(&c->super.btl_version, m);
    return OPAL_SUCCESS;
}

static int smx_component_open(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->poll_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->completed, opal_list_t);
    return OPAL_SUCCESS;
}

static int smx_component_close(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    OBJ_DESTRUCT(&c->completed);
    OBJ_DESTRUCT(&c->poll_lock);
    OBJ_DESTRUCT(&c->lock);
    if (0 <= c->output) {
        opal_output_close(c->output);
        c->output = -1;
    }
    return OPAL_SUCCESS;
}

/* Refuse values that cannot work, naming the parameter; never clamp silently. */
static bool smx_parameters_valid(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_base_module_t *m = &mca_btl_smx_module;
    char value[64];
    const char *name = NULL, *expected = NULL;

    if (c->ring_slots < 2 || c->ring_slots > 4096) {
        name = "btl_smx_ring_slots", expected = "2 to 4096";
        snprintf(value, sizeof(value), "%d", c->ring_slots);
    } else if (c->frag_size < 1024 || c->frag_size > 1024 * 1024) {
        name = "btl_smx_frag_size", expected = "1024 to 1048576";
        snprintf(value, sizeof(value), "%d", c->frag_size);
    } else if (m->btl_max_send_size > (size_t) c->frag_size) {
        name = "btl_smx_max_send_size", expected = "at most btl_smx_frag_size";
        snprintf(value, sizeof(value), "%zu", m->btl_max_send_size);
    } else if (m->btl_eager_limit > m->btl_max_send_size) {
        name = "btl_smx_eager_limit", expected = "at most btl_smx_max_send_size";
        snprintf(value, sizeof(value), "%zu", m->btl_eager_limit);
    } else if (m->btl_rndv_eager_limit > m->btl_max_send_size) {
        name = "btl_smx_rndv_eager_limit", expected = "at most btl_smx_max_send_size";
        snprintf(value, sizeof(value), "%zu", m->btl_rndv_eager_limit);
    }
    if (NULL == name) {
        return true;
    }
    opal_show_help("help-btl-smx.txt", "bad-param", true, name, value, expected);
    return false;
}

static mca_btl_base_module_t **smx_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module;
    mca_btl_base_module_t **modules;

    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    *num_btls = 0;
    if (0 == opal_process_info.num_local_peers) {
        opal_output_verbose(1, c->output, "btl:smx: not used: no other process on this node");
        return NULL;
    }
    if (!smx_parameters_valid() || OPAL_SUCCESS != mca_btl_smx_segment_create()) {
        return NULL;
    }
    if (NULL != mca_smsc) {
        m->btl_flags |= MCA_BTL_FLAGS_RDMA;
        m->btl_get = mca_btl_smx_get;
        m->btl_put = mca_btl_smx_put;
        if (mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
            m->btl_registration_handle_size = (size_t) mca_smsc_base_registration_data_size();
        } else {
            m->btl_register_mem = NULL;
            m->btl_deregister_mem = NULL;
        }
    } else {
        m->btl_register_mem = NULL;
        m->btl_deregister_mem = NULL;
    }
    modules = calloc(1, sizeof(*modules));
    if (NULL == modules) {
        return NULL;
    }
    modules[0] = m;
    *num_btls = 1;
    opal_output_verbose(1, c->output, "btl:smx: %d local processes, %s single copy",
                        c->num_local, NULL != mca_smsc ? "with" : "without");
    return modules;
}
