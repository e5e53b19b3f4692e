/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx component: every MCA parameter (registered here, in one place), their
 * validation, open/close, and init, which creates one module per locality class.
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"
#include "btl_smx_types.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

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
        /* No btl_progress: bml/r2 registers it per module, and with several modules an idle
         * one could register it at low priority first. init registers it once instead. */
        .btl_progress = NULL,
    },
    .output = -1,
};

/* The smallest eager limit accepted: ob1 refuses a BTL whose eager limit cannot hold its
 * largest header (80 bytes in 5.0.x, and MPI_Init then fails), so every limit that sets a
 * module's eager limit starts above it, with room for a later version's. */
#define SMX_EAGER_LIMIT_MIN 128

/* A fragment: 32 KiB of data plus room for ob1's headers, so that a 32 KiB message still
 * fits one eager fragment (measured here: 32 KiB eager beats both stock configurations). */
#define SMX_FRAG_DEFAULT (32 * 1024 + 2048)

/* Per-class defaults and where each comes from (repeated in the parameters' help and in
 * README.md). Shared-cache classes send eagerly up to a whole fragment: with double copy
 * either way, eager saves the rendezvous round trips (measured on the development
 * machine: 4 KiB 2.2 us vs 2.8-3.2 us stock, 16 KiB 5.8 vs 6.4). Other classes keep
 * btl/sm's limits, since single copy takes over there (paper 003). */
static const struct smx_class_limits smx_default_limits[SMX_CLASS_COUNT] = {
    [SMX_CLASS_L2] = {.eager_limit = SMX_FRAG_DEFAULT, .rndv_eager_limit = SMX_FRAG_DEFAULT,
                      .single_copy_min = 0},
    [SMX_CLASS_L3] = {.eager_limit = SMX_FRAG_DEFAULT, .rndv_eager_limit = SMX_FRAG_DEFAULT,
                      .single_copy_min = 0},
    [SMX_CLASS_PACKAGE] = {.eager_limit = 4096, .rndv_eager_limit = 32768, .single_copy_min = 2048},
    [SMX_CLASS_NUMA] = {.eager_limit = 4096, .rndv_eager_limit = 32768, .single_copy_min = 1024},
    [SMX_CLASS_REMOTE] = {.eager_limit = 4096, .rndv_eager_limit = 32768, .single_copy_min = 1024},
};

static const char *const smx_single_copy_source[SMX_CLASS_COUNT] = {
    [SMX_CLASS_L2] = "peers sharing an L2 (or a core): never (0); a shared cache makes double "
                     "copy the faster (paper 002), and even a shared L3 does on the development "
                     "machine (double copy 8.3 GB/s vs CMA 5.3 GB/s at 1 MiB)",
    [SMX_CLASS_L3] = "peers sharing an L3 only: never (0); measured on the development machine "
                     "(own L2, shared L3), btl/sm's double copy beats CMA single copy at every "
                     "size from 4 KiB to 4 MiB; on a 16-core Xeon a lone pair also prefers double "
                     "copy above 128 KiB. A busy node switches anyway (single_copy_min_busy)",
    [SMX_CLASS_PACKAGE] = "same package, no shared cache: 2048, LiMIC2's same-socket threshold "
                          "(paper 003); not measurable on the development machine",
    [SMX_CLASS_NUMA] = "same NUMA node, other package: 1024, LiMIC2's across-socket threshold "
                       "(paper 003); not measurable on the development machine",
    [SMX_CLASS_REMOTE] = "other NUMA node: 1024, LiMIC2's across-socket threshold (paper 003; "
                         "paper 002 measures single copy about 2x faster across NUMA nodes); not "
                         "measurable on the development machine",
};

static const char *const smx_class_words[SMX_CLASS_COUNT] = {
    [SMX_CLASS_L2] = "peers sharing an L2 cache or a core",
    [SMX_CLASS_L3] = "peers sharing an L3 cache but not an L2",
    [SMX_CLASS_PACKAGE] = "peers in the same package without a shared cache",
    [SMX_CLASS_NUMA] = "peers on the same NUMA node in another package",
    [SMX_CLASS_REMOTE] = "peers on another NUMA node",
};

/* Indices of the variables whose source decides precedence (see smx_resolve_limits). */
static int smx_var_class[SMX_CLASS_COUNT][3];
static int smx_var_eager_limit_busy = -1;
static int smx_var_eager_limit_window = -1;
static int smx_var_ring_slots = -1;

static int smx_register_var(const char *name, const char *help, mca_base_var_type_t type,
                            int level, void *storage)
{
    return mca_base_component_var_register(&mca_btl_smx_component.super.btl_version, name, help,
                                           type, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, level,
                                           MCA_BASE_VAR_SCOPE_LOCAL, storage);
}

static void smx_register_class_params(int cls)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const char *cname = smx_locality_class_name(cls);
    char name[64], help[1024];

    c->limits[cls] = smx_default_limits[cls];

    snprintf(name, sizeof(name), "eager_limit_%s", cname);
    snprintf(help, sizeof(help),
             "Largest message (bytes, ob1 header included) sent eagerly to %s; overrides "
             "btl_smx_eager_limit for this class. At least 128, at most "
             "btl_smx_rndv_eager_limit_%s (default: %" PRId64 "; %s)",
             smx_class_words[cls], cname, smx_default_limits[cls].eager_limit,
             cls <= SMX_CLASS_L3 ? "a whole fragment: double copy either way, eager saves the "
                                   "rendezvous, measured faster than btl/sm from 4 to 32 KiB "
                                   "on the development machine"
                                 : "btl/sm's eager limit: single copy takes over above it "
                                   "(paper 003)");
    smx_var_class[cls][0] = smx_register_var(name, help, MCA_BASE_VAR_TYPE_INT64_T,
                                             OPAL_INFO_LVL_4, &c->limits[cls].eager_limit);

    snprintf(name, sizeof(name), "rndv_eager_limit_%s", cname);
    snprintf(help, sizeof(help),
             "Size (bytes, header included) of the first fragment of a rendezvous to %s, "
             "used when the data cannot go by btl_get (non-contiguous); overrides "
             "btl_smx_rndv_eager_limit for this class. At least btl_smx_eager_limit_%s, at "
             "most btl_smx_max_send_size (default: %" PRId64 ", the larger of btl/sm's 32 KiB "
             "and the eager limit)",
             smx_class_words[cls], cname, smx_default_limits[cls].rndv_eager_limit);
    smx_var_class[cls][1] = smx_register_var(name, help, MCA_BASE_VAR_TYPE_INT64_T,
                                             OPAL_INFO_LVL_4, &c->limits[cls].rndv_eager_limit);

    snprintf(name, sizeof(name), "single_copy_min_%s", cname);
    snprintf(help, sizeof(help),
             "Smallest contiguous message (bytes) to %s copied once through the selected "
             "single-copy (smsc) component instead of twice through shared memory; only "
             "messages above the eager limit can be single-copied; 0 = never. Without an smsc "
             "component every message is double-copied. Default %" PRId64 ": %s",
             smx_class_words[cls], smx_default_limits[cls].single_copy_min,
             smx_single_copy_source[cls]);
    smx_var_class[cls][2] = smx_register_var(name, help, MCA_BASE_VAR_TYPE_INT64_T,
                                             OPAL_INFO_LVL_4, &c->limits[cls].single_copy_min);
}

static void smx_register_pvar(const char *name, const char *what, int pvar_class,
                              unsigned long long *value)
{
    (void) mca_base_component_pvar_register(
        &mca_btl_smx_component.super.btl_version, name, what, OPAL_INFO_LVL_4, pvar_class,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, value);
}

static int smx_component_register(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;

    (void) mca_base_var_group_component_register(
        &c->super.btl_version,
        "Shared-memory transport with a topology-aware eager/rendezvous switch");

    c->verbose = 0;
    smx_register_var("verbose",
                     "Verbosity of btl/smx: 1 says why the component is not used, 10 prints "
                     "each peer's locality class and thresholds (default: 0)",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &c->verbose);
    c->ring_slots = 32;
    smx_var_ring_slots = smx_register_var(
        "ring_slots",
        "Slots in the ring each local sender has in this process's segment (a power of two "
        "from 2 to 4096; default: 32, i.e. 1 MiB in flight per pair with 32 KiB slots, halved "
        "down to 4 while a segment would exceed btl_smx_segment_max_mb; a value set "
        "explicitly is used as it is)",
        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &c->ring_slots);
    c->segment_max_mb = 64;
    smx_register_var("segment_max_mb",
                     "Size a process's segment (one ring per local process) should stay within, "
                     "in MiB, when btl_smx_ring_slots is left at its default: the node needs "
                     "local processes x segment in /dev/shm, so the rings get fewer slots as the "
                     "processes grow (1 to 1048576; default: 64, which keeps 32 slots up to 60 "
                     "processes, 16 up to 120, 8 up to 240, then 4: with 128 processes 4.3 GiB "
                     "of /dev/shm instead of 17 GiB)",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &c->segment_max_mb);
    c->frag_size = SMX_FRAG_DEFAULT;
    smx_register_var("frag_size",
                     "Payload bytes of one ring slot: the largest fragment (1024 to 1048576; "
                     "btl_smx_max_send_size may not exceed it; default: 34816 = 32 KiB of data "
                     "and room for ob1's header: large enough for copies to stream, small enough "
                     "to stay in a private L2). A smaller value also lowers the defaults of "
                     "btl_smx_max_send_size, of the eager and rendezvous limits and of "
                     "btl_smx_eager_limit_busy to fit; values set explicitly are checked, not "
                     "changed",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &c->frag_size);
    smx_register_pvar("gets_single_copy",
                      "Rendezvous transfers this process pulled by one copy through the "
                      "selected SMSC component", MCA_BASE_PVAR_CLASS_COUNTER,
                      &c->stats.gets_single_copy);
    smx_register_pvar("gets_double_copy",
                      "Rendezvous transfers this process pulled through the shared-memory rings "
                      "(copied in by the sender, out by this process; or pushed by the sender)",
                      MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.gets_double_copy);
    smx_register_pvar("exchange_pushes",
                      "Peers' double-copy requests this process served by one copy straight "
                      "into the peer (btl_smx_exchange_push)", MCA_BASE_PVAR_CLASS_COUNTER,
                      &c->stats.exchange_pushes);
    smx_register_pvar("sends_queued",
                      "Sends that found the peer's ring full (or sends of its already queued) "
                      "and waited in this process", MCA_BASE_PVAR_CLASS_COUNTER,
                      &c->stats.sends_queued);
    smx_register_pvar("frags_peak",
                      "Most send descriptors this process had handed out at once; at "
                      "btl_smx_max_frags, ob1 queued further sends itself",
                      MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &c->stats.frags_peak);
    c->max_frags = 512;
    smx_register_var("max_frags",
                     "Fragments (btl_smx_frag_size bytes each) this process may have handed to "
                     "the upper layer at once, for messages waiting on a full ring; at the "
                     "limit ob1 keeps further sends queued itself, at no memory cost (8 to "
                     "1048576; default: 512, btl/sm's btl_sm_free_list_max: 17 MiB with the "
                     "default fragment size)",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &c->max_frags);

    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        smx_register_class_params(cls);
    }
    c->single_copy_min_busy = 8 * 1024;
    smx_register_var("single_copy_min_busy",
                     "Single-copy threshold (bytes) of every class while the node is busy (see "
                     "btl_smx_busy_ranks and btl_smx_busy_transfers): a class uses the smaller "
                     "of this and its own btl_smx_single_copy_min_<class>, where single copy is "
                     "cheap (btl_smx_single_copy_cost_max); 0 = busy changes "
                     "nothing. Default 8192, btl_smx_eager_limit_busy: on a 16-core Xeon a "
                     "16-rank all-to-all runs up to 1.5x faster with single copy from 16 KiB "
                     "to 4 MiB, because double-copying ranks saturate the caches (paper 002, "
                     "section VI), and a lone ping-pong there already prefers single copy from "
                     "16 to 128 KiB",
                     MCA_BASE_VAR_TYPE_INT64_T, OPAL_INFO_LVL_4, &c->single_copy_min_busy);
    c->busy_transfers = 1;
    smx_register_var("busy_transfers",
                     "The node counts as busy while more than this many large transfers (btl_get "
                     "of a rendezvous, single or double copy) of this job are in flight on it, "
                     "counted in shared memory; -1 = never busy by this count. Default 1: a "
                     "lone ping-pong has at most one in flight, an all-to-all has one per rank",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &c->busy_transfers);
    c->exchange_push = true;
    smx_register_var("exchange_push",
                     "When a peer asks this process for data by double copy while this process "
                     "is itself pulling data from that peer by double copy (an exchange: both "
                     "would copy twice), send the peer's data by one single copy into its "
                     "buffer instead, where a single copy is cheap enough "
                     "(btl_smx_single_copy_cost_max). Needs a single-copy component without "
                     "registration (cma). Default true: on a 16-core Xeon a 2-rank exchange of "
                     "64 KiB-4 MiB runs 1.05-1.09x faster pushed",
                     MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &c->exchange_push);
    c->single_copy_cost_max = 2.5;
    smx_register_var("single_copy_cost_max",
                     "The rules that move transfers to single copy whatever the class -- the "
                     "exchange push (btl_smx_exchange_push), single copy on an oversubscribed "
                     "node (btl_smx_single_copy_oversubscribed) and on a busy node "
                     "(btl_smx_single_copy_min_busy) -- replace two memcpys by one copy through "
                     "the smsc component; they apply only where that copy costs at most this "
                     "many memcpys. Each process measures it once, at its first add_procs (4 "
                     "MiB of its own memory, best of 5, a few ms); btl_smx_verbose 1 prints it. "
                     "0: never apply them; -1: always, without measuring. Default 2.5: CMA "
                     "measured 1.2-1.5 memcpys on a 16-core Xeon (2.4 at most, 16 ranks "
                     "starting at once), where the rules gain 5-50 %, and 3.1-5.6 on an AMD EPYC "
                     "VM, where pushing loses 25 % and single copy at 4 ranks on 2 cores 35 %",
                     MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_5, &c->single_copy_cost_max);
    c->busy_ranks = 8;
    smx_register_var("busy_ranks",
                     "The node counts as busy from the start when this job runs more than this "
                     "many processes on it (they share the caches and the memory bus); -1 = "
                     "never busy by this count. Default 8: measured on a 16-core Xeon, an "
                     "all-to-all of 16 KiB messages runs 1.12x faster than btl/sm eagerly at 8 "
                     "ranks but 0.8-0.89x at 16 ranks, where single copy wins",
                     MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &c->busy_ranks);
    c->single_copy_oversubscribed = true;
    smx_register_var("single_copy_oversubscribed",
                     "When this job runs more processes on the node than there are hardware "
                     "threads it may use (hwloc's allowed cpuset), every rendezvous of every "
                     "class goes by single copy, if a single-copy component is selected and a "
                     "single copy is cheap enough (btl_smx_single_copy_cost_max): double copy "
                     "needs the sending process on a CPU to serve each request, single copy "
                     "does not. Default true: 4 ranks on 2 Intel cores, all-to-all of 64 "
                     "KiB-1 MiB, 0.87-0.93x btl/sm+cma with double copy, 1.0x with single copy",
                     MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, &c->single_copy_oversubscribed);
    c->eager_limit_busy = 8 * 1024;
    smx_var_eager_limit_busy = smx_register_var("eager_limit_busy",
                     "Eager limit (bytes, ob1 header included) of every class on a node that "
                     "is busy by btl_smx_busy_ranks: a class uses the smaller of this and its "
                     "own btl_smx_eager_limit_<class>; 0 = no change. Default 8192: at 16 "
                     "ranks on a 16-core Xeon, 4 KiB messages still gain 1.3x eagerly, 16 KiB "
                     "messages lose",
                     MCA_BASE_VAR_TYPE_INT64_T, OPAL_INFO_LVL_4, &c->eager_limit_busy);
    /* The single-copy window: where single copy is cheap, a lone pair sharing a cache
     * loses with an eager double copy at 32 KiB (its two copies run one after the other),
     * ties at 64 KiB and gains from 256 KiB with the pipelined one (the copies overlap). */
    c->single_copy_window_max = 64 * 1024;
    smx_register_var("single_copy_window_max",
                     "Where single copy is cheap enough for it "
                     "(btl_smx_single_copy_window_cost_max), every rendezvous up to this many "
                     "bytes goes by single copy, whatever the class's own threshold, and "
                     "every class sends eagerly at most "
                     "btl_smx_eager_limit_window; 0 = no window. Default 65536, from a 16-core "
                     "Xeon (CMA 1.2-1.5 memcpys), 2 ranks sharing the L3, ping-pong against "
                     "btl/sm's CMA single copy: smx's eager double copy ran at 0.85-1.05x at 32 "
                     "KiB over four runs, its pipelined double copy at 1.01x at 64 KiB and "
                     "1.25x at 256 KiB (runs made before the window existed: it has not been "
                     "measured there itself)",
                     MCA_BASE_VAR_TYPE_INT64_T, OPAL_INFO_LVL_4, &c->single_copy_window_max);
    c->eager_limit_window = 16 * 1024 + 1024;
    smx_var_eager_limit_window = smx_register_var("eager_limit_window",
                     "Eager limit (bytes, ob1 header included) of every class while the "
                     "single-copy window is open (btl_smx_single_copy_window_max): a class uses "
                     "the smaller of this and its own btl_smx_eager_limit_<class>; 0 = no "
                     "change. Default 17408, a 16 KiB message and ob1's header: at 16 KiB the "
                     "Xeon's eager double copy beat btl/sm's CMA single copy in 2- and 4-rank "
                     "all-to-alls (1.19x, 1.07x) and ran at 0.94-1.21x in ping-pong",
                     MCA_BASE_VAR_TYPE_INT64_T, OPAL_INFO_LVL_4, &c->eager_limit_window);
    c->single_copy_window_cost_max = 1.75;
    smx_register_var("single_copy_window_cost_max",
                     "The single-copy window (btl_smx_single_copy_window_max) opens only where "
                     "a copy through the smsc component costs at most this many memcpys, as "
                     "measured at the first add_procs (see btl_smx_single_copy_cost_max). 0: "
                     "never open; -1: always, without measuring. Default 1.75: below the two "
                     "memcpys of the eager double copy it replaces, with a margin for the "
                     "per-call cost that a 4 MiB measurement spreads thin; a 16-core Xeon "
                     "measured 1.2-1.5, an AMD EPYC VM 3.1-5.6 (window closed)",
                     MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_5, &c->single_copy_window_cost_max);

    /* Module template: the generic BTL parameters (btl_smx_eager_limit, ...) are
     * registered on it; the per-class values above override them, see README.md. */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_HIGH - 1; /* sm keeps the default until smx wins */
    m->btl_eager_limit = 4 * 1024;
    m->btl_rndv_eager_limit = 32 * 1024;
    m->btl_max_send_size = SMX_FRAG_DEFAULT;
    /* RDMA pipeline (put by the receiver) off: large messages go by btl_get, whole. */
    m->btl_min_rdma_pipeline_size = INT_MAX;
    m->btl_rdma_pipeline_send_length = m->btl_eager_limit;
    m->btl_rdma_pipeline_frag_size = m->btl_eager_limit;
    m->btl_get_limit = SIZE_MAX;
    m->btl_put_limit = SIZE_MAX;
    m->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_GET | MCA_BTL_FLAGS_PUT;
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
    c->free_frags = NULL;
    c->free_small_frags = NULL;
    c->frags_out = 0;
    memset(&c->stats, 0, sizeof(c->stats));
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

static bool smx_var_is_set(int index)
{
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;

    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, NULL, &source, NULL)) {
        return false;
    }
    return MCA_BASE_VAR_SOURCE_DEFAULT != source;
}

/* Which parameter supplied a class's value: the per-class one unless only the generic
 * btl_smx_<what> was set, which then applies to every class. */
static const char *smx_limit_name(int cls, int what, char *buf, size_t len)
{
    static const char *const whats[3] = {"eager_limit", "rndv_eager_limit", "single_copy_min"};
    int generic = (2 == what) ? -1 : mca_base_var_find("opal", "btl", "smx", whats[what]);

    if (!smx_var_is_set(smx_var_class[cls][what]) && smx_var_is_set(generic)) {
        snprintf(buf, len, "btl_smx_%s", whats[what]);
    } else {
        snprintf(buf, len, "btl_smx_%s_%s", whats[what], smx_locality_class_name(cls));
    }
    return buf;
}

/* Give the generic btl_smx_eager_limit / btl_smx_rndv_eager_limit, when the user set them
 * and did not set the per-class value, to every class. */
static void smx_resolve_limits(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    int eager = mca_base_var_find("opal", "btl", "smx", "eager_limit");
    int rndv = mca_base_var_find("opal", "btl", "smx", "rndv_eager_limit");

    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (smx_var_is_set(eager) && !smx_var_is_set(smx_var_class[cls][0])) {
            /* a size_t set to "-1" wraps: keep it visibly wrong rather than negative */
            c->limits[cls].eager_limit = m->btl_eager_limit > INT64_MAX
                                             ? INT64_MAX : (int64_t) m->btl_eager_limit;
        }
        if (smx_var_is_set(rndv) && !smx_var_is_set(smx_var_class[cls][1])) {
            c->limits[cls].rndv_eager_limit = m->btl_rndv_eager_limit > INT64_MAX
                                                  ? INT64_MAX
                                                  : (int64_t) m->btl_rndv_eager_limit;
        }
    }
    /* A fragment smaller than the default one: the defaults that would not fit in it
     * follow it down, so that btl_smx_frag_size alone is enough to shrink the rings.
     * Values the user set are left as they are, for smx_parameters_valid to judge. */
    if (c->frag_size >= 1024 && c->frag_size < SMX_FRAG_DEFAULT) {
        int64_t cap;

        if (!smx_var_is_set(mca_base_var_find("opal", "btl", "smx", "max_send_size"))
            && m->btl_max_send_size > (size_t) c->frag_size) {
            m->btl_max_send_size = (size_t) c->frag_size;
        }
        cap = m->btl_max_send_size > INT64_MAX ? INT64_MAX : (int64_t) m->btl_max_send_size;
        for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
            if (!smx_var_is_set(smx_var_class[cls][0]) && !smx_var_is_set(eager)
                && c->limits[cls].eager_limit > cap) {
                c->limits[cls].eager_limit = cap;
            }
            if (!smx_var_is_set(smx_var_class[cls][1]) && !smx_var_is_set(rndv)
                && c->limits[cls].rndv_eager_limit > cap) {
                c->limits[cls].rndv_eager_limit = cap;
            }
        }
        if (!smx_var_is_set(smx_var_eager_limit_busy) && c->eager_limit_busy > cap) {
            c->eager_limit_busy = cap;
        }
        if (!smx_var_is_set(smx_var_eager_limit_window) && c->eager_limit_window > cap) {
            c->eager_limit_window = cap;
        }
    }
}

static bool smx_refuse(const char *name, const char *value, const char *expected)
{
    opal_show_help("help-btl-smx.txt", "bad-param", true, name, value, expected);
    return false;
}

/* An eager limit that overrides every class's under some condition (busy, the window):
 * 0 (no change) or one that a fragment can hold. */
static bool smx_override_eager_limit_valid(const char *name, int64_t limit)
{
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    char value[64], expected[128];

    if (0 == limit || (limit >= SMX_EAGER_LIMIT_MIN && limit <= (int64_t) m->btl_max_send_size)) {
        return true;
    }
    snprintf(value, sizeof(value), "%" PRId64, limit);
    snprintf(expected, sizeof(expected), "0 (no change) or %d to btl_smx_max_send_size (%zu)",
             SMX_EAGER_LIMIT_MIN, m->btl_max_send_size);
    return smx_refuse(name, value, expected);
}

/* A limit on the measured single-copy cost: 0 (never), -1 (always) or a positive number. */
static bool smx_cost_limit_valid(const char *name, double limit)
{
    char value[64];

    if (limit >= 0.0 || -1.0 == limit) {
        return true;
    }
    snprintf(value, sizeof(value), "%g", limit);
    return smx_refuse(name, value, "0 (never), -1 (always) or a positive number of memcpys");
}

/* Refuse values that cannot work, naming the parameter; never clamp silently. */
static bool smx_parameters_valid(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    char value[64], expected[128], name[96];

    if (c->ring_slots < 2 || c->ring_slots > 4096
        || 0 != (c->ring_slots & (c->ring_slots - 1))) {
        snprintf(value, sizeof(value), "%d", c->ring_slots);
        return smx_refuse("btl_smx_ring_slots", value, "a power of two from 2 to 4096");
    }
    if (c->frag_size < 1024 || c->frag_size > 1024 * 1024) {
        snprintf(value, sizeof(value), "%d", c->frag_size);
        return smx_refuse("btl_smx_frag_size", value, "1024 to 1048576");
    }
    if (c->segment_max_mb < 1 || c->segment_max_mb > 1024 * 1024) {
        snprintf(value, sizeof(value), "%d", c->segment_max_mb);
        return smx_refuse("btl_smx_segment_max_mb", value, "1 to 1048576");
    }
    if (c->max_frags < 8 || c->max_frags > 1024 * 1024) {
        snprintf(value, sizeof(value), "%d", c->max_frags);
        return smx_refuse("btl_smx_max_frags", value, "8 to 1048576");
    }
    /* One ring's size is a 32-bit field of the segment header. */
    uint64_t slot_bytes = smx_slot_bytes((uint64_t) c->frag_size);
    if (sizeof(struct smx_ring) + slot_bytes * (uint64_t) c->ring_slots > UINT32_MAX) {
        int most = 2;
        while (sizeof(struct smx_ring) + slot_bytes * (uint64_t) most * 2 <= UINT32_MAX) {
            most *= 2;
        }
        snprintf(value, sizeof(value), "%d", c->ring_slots);
        snprintf(expected, sizeof(expected),
                 "at most %d with btl_smx_frag_size %d (one ring must stay below 4 GiB)", most,
                 c->frag_size);
        return smx_refuse("btl_smx_ring_slots", value, expected);
    }
    if (m->btl_max_send_size > (size_t) c->frag_size || m->btl_max_send_size < 1024) {
        snprintf(value, sizeof(value), "%zu", m->btl_max_send_size);
        snprintf(expected, sizeof(expected), "1024 to btl_smx_frag_size (%d)", c->frag_size);
        return smx_refuse("btl_smx_max_send_size", value, expected);
    }
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const struct smx_class_limits *l = &c->limits[cls];

        if (l->eager_limit < SMX_EAGER_LIMIT_MIN
            || l->eager_limit > (int64_t) m->btl_max_send_size) {
            snprintf(value, sizeof(value), "%" PRId64, l->eager_limit);
            snprintf(expected, sizeof(expected),
                     "%d (ob1's headers) to btl_smx_max_send_size (%zu): a fragment must "
                     "hold an eager message",
                     SMX_EAGER_LIMIT_MIN, m->btl_max_send_size);
            return smx_refuse(smx_limit_name(cls, 0, name, sizeof(name)), value, expected);
        }
        if (l->rndv_eager_limit < l->eager_limit
            || l->rndv_eager_limit > (int64_t) m->btl_max_send_size) {
            snprintf(value, sizeof(value), "%" PRId64, l->rndv_eager_limit);
            snprintf(expected, sizeof(expected),
                     "the class's eager limit (%" PRId64 ") to btl_smx_max_send_size (%zu)",
                     l->eager_limit, m->btl_max_send_size);
            return smx_refuse(smx_limit_name(cls, 1, name, sizeof(name)), value, expected);
        }
        if (l->single_copy_min < 0) {
            snprintf(value, sizeof(value), "%" PRId64, l->single_copy_min);
            return smx_refuse(smx_limit_name(cls, 2, name, sizeof(name)), value,
                              "0 (never) or a size in bytes");
        }
    }
    if (c->single_copy_min_busy < 0) {
        snprintf(value, sizeof(value), "%" PRId64, c->single_copy_min_busy);
        return smx_refuse("btl_smx_single_copy_min_busy", value,
                          "0 (busy changes nothing) or a size in bytes");
    }
    if (!smx_cost_limit_valid("btl_smx_single_copy_cost_max", c->single_copy_cost_max)) {
        return false;
    }
    if (c->busy_transfers < -1) {
        snprintf(value, sizeof(value), "%d", c->busy_transfers);
        return smx_refuse("btl_smx_busy_transfers", value, "-1 (never busy) or a count >= 0");
    }
    if (c->busy_ranks < -1) {
        snprintf(value, sizeof(value), "%d", c->busy_ranks);
        return smx_refuse("btl_smx_busy_ranks", value, "-1 (never busy) or a count >= 0");
    }
    if (!smx_override_eager_limit_valid("btl_smx_eager_limit_busy", c->eager_limit_busy)
        || !smx_override_eager_limit_valid("btl_smx_eager_limit_window", c->eager_limit_window)) {
        return false;
    }
    if (c->single_copy_window_max < 0) {
        snprintf(value, sizeof(value), "%" PRId64, c->single_copy_window_max);
        return smx_refuse("btl_smx_single_copy_window_max", value,
                          "0 (no window) or a size in bytes");
    }
    return smx_cost_limit_valid("btl_smx_single_copy_window_cost_max",
                                c->single_copy_window_cost_max);
}

/* The classes some peer of mine can fall into here; my binding kept for add_procs, and
 * the hardware threads this job may use (hw_threads, for the oversubscription rule). */
static int smx_find_classes(int present[SMX_CLASS_COUNT])
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    hwloc_bitmap_t mine;

    c->hw_threads = 0;
    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        /* Without a topology every peer is "anywhere": the widest class. */
        for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
            present[cls] = (SMX_CLASS_REMOTE == cls);
        }
        return 1;
    }
    c->hw_threads = hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(opal_hwloc_topology));
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

static mca_btl_smx_module_t *smx_module_create(int cls)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_module_t *module = calloc(1, sizeof(*module));

    if (NULL == module) {
        return NULL;
    }
    module->super = mca_btl_smx_module_template;
    module->cls = cls;
    /* What ob1 reads from the module (pml_ob1_sendreq.h): its eager limit and the size of
     * a rendezvous's first fragment. The single-copy threshold is not an ob1 notion: ob1
     * sends every contiguous message above the eager limit by btl_get when the module has
     * MCA_BTL_FLAGS_GET, and btl_smx_get.c picks single or double copy there. */
    mca_btl_smx_module_set_eager_limit(module, (size_t) c->limits[cls].eager_limit);
    if (c->crowded && 0 != c->eager_limit_busy
        && c->eager_limit_busy < c->limits[cls].eager_limit) {
        /* the rendezvous first fragment stays: it is at least the class's eager limit */
        mca_btl_smx_module_set_eager_limit(module, (size_t) c->eager_limit_busy);
    }
    module->super.btl_rndv_eager_limit = (size_t) c->limits[cls].rndv_eager_limit;
    return module;
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
    if (0 == opal_process_info.num_local_peers) {
        opal_output_verbose(1, c->output, "btl:smx: not used: no other process on this node");
        return NULL;
    }
    smx_resolve_limits();
    if (!smx_parameters_valid()) {
        return NULL;
    }
    /* A number of slots the user chose is used as it is; the default one may shrink to fit
     * (mca_btl_smx_segment_create). */
    c->slots = c->ring_slots;
    c->slots_fixed = smx_var_is_set(smx_var_ring_slots);
    if (smx_find_classes(present) < 0 || OPAL_SUCCESS != mca_btl_smx_segment_create()) {
        mca_btl_smx_segment_destroy();
        return NULL;
    }
    /* num_local is known now (segment_create) */
    c->crowded = c->busy_ranks >= 0 && c->num_local > c->busy_ranks;
    c->oversubscribed = c->single_copy_oversubscribed && c->hw_threads > 0
                        && c->num_local > c->hw_threads;
    if (NULL != mca_smsc && mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
        ssize_t handle_size = mca_smsc_base_registration_data_size();
        if (handle_size <= 0) {
            opal_output_verbose(1, c->output, "btl:smx: not used: the smsc component's "
                                "registration data has no size (%zd)", handle_size);
            mca_btl_smx_segment_destroy();
            return NULL;
        }
        m->btl_registration_handle_size = (size_t) handle_size;
    } else {
        /* Nothing to register: ob1 then skips registration altogether. */
        m->btl_register_mem = NULL;
        m->btl_deregister_mem = NULL;
        m->btl_registration_handle_size = 0;
    }
    c->single_copy_cost = -1.0;
    c->single_copy_cost_known = false;
    c->busy_single_copy = true;
    c->window_open = false;
    c->can_push = c->exchange_push && NULL != mca_smsc
                  && !mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION);
    if (NULL == mca_smsc) {
        /* get stays: it is the double-copy pipeline (btl_smx_get.c); put needs single copy */
        m->btl_flags &= ~MCA_BTL_FLAGS_PUT;
        m->btl_put = NULL;
    }

    modules = calloc(SMX_CLASS_COUNT, sizeof(*modules));
    if (NULL == modules) {
        mca_btl_smx_segment_destroy();
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
        mca_btl_smx_segment_destroy();
        return NULL;
    }
    /* One progress function for all modules, registered once. */
    opal_progress_register(mca_btl_smx_progress);
    c->progress_registered = true;
    *num_btls = c->num_modules;
    opal_output_verbose(1, c->output,
                        "btl:smx: %d local processes, %s single copy, %d module%s, rings of %d "
                        "slots (%.1f MiB per process)%s%s",
                        c->num_local, NULL != mca_smsc ? "with" : "without", c->num_modules,
                        1 == c->num_modules ? "" : "s", c->slots,
                        (double) c->segment_size / 1048576.0,
                        c->crowded ? ", node busy (more than btl_smx_busy_ranks processes)" : "",
                        c->oversubscribed ? ", oversubscribed (more processes than hardware "
                                            "threads)"
                                          : "");
    return modules;
}
