/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx component: open/close, and init, which checks the parameters
 * (btl_smx_params.c), creates this process's segment and one module per locality class
 * that can occur here.
 */
#include "opal_config.h"

#include "opal/mca/btl/base/base.h"
#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_clock.h"
#include "btl_smx_frag.h"
#include "btl_smx_get.h"
#include "btl_smx_pages.h"
#include "btl_smx_params.h"
#include "btl_smx_policy.h"
#include "btl_smx_recv.h"
#include "btl_smx_segment.h"
#include "btl_smx_skew.h"
#include "btl_smx_types.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The smsc component Open MPI selected ("none"). */
static const char *smx_smsc_selected(void)
{
    opal_list_t *list = &opal_smsc_base_framework.framework_components;
    mca_base_component_list_item_t *cli;

    if (NULL == mca_smsc || opal_list_is_empty(list)) {
        return "none";
    }
    cli = (mca_base_component_list_item_t *) opal_list_get_first(list);
    return cli->cli_component->mca_component_name;
}

/* Yama's ptrace_scope ('0' where there is no Yama). */
static char smx_ptrace_scope(void)
{
    char scope = '0';
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (1 != read(fd, &scope, 1)) {
            scope = '0';
        }
        close(fd);
    }
    return scope;
}

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
            .mca_register_component_params = mca_btl_smx_params_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_NONE,
        },
        .btl_init = smx_component_init,
        /* No btl_progress: bml/r2 registers it per module, and with several modules an idle
         * one could register it at low priority first. init registers it once instead. */
        .btl_progress = NULL,
    },
    .segment_fd = -1,
};

static int smx_component_open(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->poll_lock, opal_mutex_t);
    c->completed = NULL;
    OBJ_CONSTRUCT(&c->frags, opal_free_list_t);
    OBJ_CONSTRUCT(&c->small_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&c->get_ops, opal_free_list_t);
    OBJ_CONSTRUCT(&c->serves, opal_free_list_t);
    c->frags_out = 0;
    memset(&c->stats, 0, sizeof(c->stats));
    return OPAL_SUCCESS;
}

static int smx_component_close(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    OBJ_DESTRUCT(&c->frags);
    OBJ_DESTRUCT(&c->small_frags);
    OBJ_DESTRUCT(&c->get_ops);
    OBJ_DESTRUCT(&c->serves);
    OBJ_DESTRUCT(&c->poll_lock);
    OBJ_DESTRUCT(&c->lock);
    return OPAL_SUCCESS;
}

/* The classes some peer of mine can fall into here; my binding kept for add_procs, and
 * the hardware threads this job may use (hw_threads: a crowded node, btl_smx_policy.c). */
static int smx_find_classes(int present[SMX_CLASS_COUNT])
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    hwloc_bitmap_t mine;

    c->hw_threads = 0;
    c->l2_bytes = 0;
    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        /* Without a topology every peer is "anywhere": the widest class. */
        for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
            present[cls] = (SMX_CLASS_REMOTE == cls);
        }
        return 1;
    }
    c->hw_threads = hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(opal_hwloc_topology));
    c->l2_bytes = smx_locality_largest_l2(opal_hwloc_topology);
    if (c->hw_threads < 0) {
        c->hw_threads = 0; /* infinite or empty: unknown */
    }
    mine = hwloc_bitmap_alloc();
    if (NULL == mine) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (0 != hwloc_get_cpubind(opal_hwloc_topology, mine, HWLOC_CPUBIND_PROCESS)) {
        hwloc_bitmap_zero(mine); /* unknown binding: anywhere */
    }
    c->my_cpuset = mine;
    return smx_locality_classes_present(opal_hwloc_topology, mine, present);
}

/* Limits come from the policy, built at the first add_procs (mca_btl_smx_policy_setup):
 * ob1 reads a module's limits only after bml_add_procs. */
static mca_btl_smx_module_t *smx_module_create(int cls)
{
    mca_btl_smx_module_t *module = calloc(1, sizeof(*module));

    if (NULL != module) {
        module->super = mca_btl_smx_module_template;
        module->cls = cls;
    }
    return module;
}

/* What init made, undone when it gives up afterwards. */
static void smx_init_undo(void)
{
    mca_btl_smx_frag_lists_fini();
    mca_btl_smx_get_lists_fini();
    mca_btl_smx_segment_destroy();
}

static mca_btl_base_module_t **smx_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    mca_btl_base_module_t **modules;
    int present[SMX_CLASS_COUNT];

    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    *num_btls = 0;
    /* Alone on the node, smx still starts: processes of a job spawned later reach me
     * through it (its segment then costs what they send me). */
    if (!mca_btl_smx_params_valid()) {
        return NULL;
    }
    mca_btl_smx_clock_init(true);
    if (smx_find_classes(present) < 0 || OPAL_SUCCESS != mca_btl_smx_segment_create()) {
        mca_btl_smx_segment_destroy();
        return NULL;
    }
    if (NULL != mca_smsc && mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
        ssize_t handle_size = mca_smsc_base_registration_data_size();
        if (handle_size <= 0) {
            opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                                "btl:smx: not used: the smsc component's "
                                "registration data has no size (%zd)", handle_size);
            mca_btl_smx_segment_destroy();
            return NULL;
        }
        c->smsc_data_size = (size_t) handle_size;
    } else {
        c->smsc_data_size = 0;
    }
    /* Always a handle of the same size, whatever btl_smx_push_max says: processes of one
     * job may be started with different values (an MPMD job), and a receiver reads the
     * handle's bytes in a sender's rendezvous header at its own module's size. */
    m->btl_registration_handle_size = sizeof(struct mca_btl_base_registration_handle_t)
                                      + c->smsc_data_size;
    /* Yama's ptrace_scope 3 forbids every process to read another's memory, root's too:
     * cma would fail on every peer, and the kernel log a line for each attempt (smsc/cma
     * still offers itself, its test only asks for ptrace_scope 0 or a ptracer exception).
     * No single copy then, said once, and no attempt. */
    c->smsc_forbidden = NULL != mca_smsc && 0 == strcmp(smx_smsc_selected(), "cma")
                        && '3' == smx_ptrace_scope();
    if (c->smsc_forbidden) {
        opal_show_help("help-btl-smx.txt", "cma-forbidden", true, opal_process_info.nodename);
    }
    /* get is always there (single copy, or the double-copy pipeline: btl_smx_get.c);
     * put needs single copy */
    m->btl_flags |= MCA_BTL_FLAGS_GET;
    if (NULL != mca_smsc && !c->smsc_forbidden) {
        m->btl_flags |= MCA_BTL_FLAGS_PUT;
        m->btl_put = mca_btl_smx_put;
    }
    /* Where peers map my memory, ob1 hands eager messages over by prepare_src, which
     * leaves the data in the user's buffer (btl_smx_module.c); elsewhere it packs them
     * straight into shared memory through btl_sendi. */
    c->in_place = 0 != c->in_place_wanted && NULL != mca_smsc && !c->smsc_forbidden
                  && mca_smsc_base_has_feature(MCA_SMSC_FEATURE_CAN_MAP);
    if (c->in_place) {
        m->btl_flags |= MCA_BTL_FLAGS_SEND_INPLACE;
    }
    if (OPAL_SUCCESS != mca_btl_smx_frag_lists_init()
        || OPAL_SUCCESS != mca_btl_smx_get_lists_init()) {
        smx_init_undo();
        return NULL;
    }
    mca_btl_smx_skew_init(); /* (the area is known now) */
    /* the chunks every process must have, reserved now or btl/smx is not used (it says why) */
    if (0 != mca_btl_smx_chunks_start()) {
        smx_init_undo();
        return NULL;
    }

    modules = calloc(SMX_CLASS_COUNT, sizeof(*modules));
    if (NULL == modules) {
        smx_init_undo();
        return NULL;
    }
    c->num_modules = 0;
    c->modules_finalized = 0;
    bool created = true;
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (!present[cls]) {
            continue;
        }
        c->modules[cls] = smx_module_create(cls);
        if (NULL == c->modules[cls]) {
            created = false;
            break;
        }
        modules[c->num_modules++] = &c->modules[cls]->super;
    }
    /* Peers learn of my segment only once nothing here can fail any more. */
    if (!created || OPAL_SUCCESS != mca_btl_smx_segment_publish()) {
        for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
            free(c->modules[cls]);
            c->modules[cls] = NULL;
        }
        c->num_modules = 0;
        free(modules);
        smx_init_undo();
        return NULL;
    }
    /* One progress function for all modules, registered once. */
    opal_progress_register(mca_btl_smx_progress);
    c->progress_registered = true;
    *num_btls = c->num_modules;
    char rest[48] = "";
    if (c->ring_size_rest != c->ring_size) {
        snprintf(rest, sizeof(rest), ", %u KiB after the first %d", c->ring_size_rest >> 10,
                 SMX_RINGS_LARGE);
    }
    opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                        "btl:smx: %d local processes, %s single copy, %d module%s, a budget of "
                        "%llu KiB for messages in flight, rings of %u KiB%s (segments of %.1f "
                        "MiB, %.0f KiB of it reserved now, the rest as it is used)",
                        c->num_local, NULL != mca_smsc ? "with" : "without", c->num_modules,
                        1 == c->num_modules ? "" : "s", (unsigned long long) (c->area_max >> 10),
                        c->ring_size >> 10, rest, (double) c->segment_size / 1048576.0,
                        (double) mca_btl_smx_reserved_bytes() / 1024.0);
    return modules;
}
