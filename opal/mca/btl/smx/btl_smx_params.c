/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx parameters: registration, the generic-to-class resolution and validation.
 * Help strings say what a value does and its unit; docs/using-smx.md ("How btl/smx
 * decides") says why each default is what it is.
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_params.h"
#include "btl_smx_types.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/*
 * Integer parameters whose special values have names ("auto", "never", "off") instead
 * of sentinels: the name or a number >= 0, with an optional k/m/g suffix for sizes.
 * Anything else is refused by the MCA system itself, naming the variable.
 */

/* A size or count: digits with an optional k, m or g suffix, at most INT_MAX. 0 and
 * *value set, or -1. */
static int smx_parse_count(const char *text, int *value)
{
    char *end;
    long long v;

    if (!isdigit((unsigned char) text[0])) {
        return -1;
    }
    errno = 0;
    v = strtoll(text, &end, 10);
    if (0 != errno) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': v = v > INT_MAX ? v : v << 10, ++end; break;
    case 'm': case 'M': v = v > INT_MAX ? v : v << 20, ++end; break;
    case 'g': case 'G': v = v > INT_MAX ? v : v << 30, ++end; break;
    default: break;
    }
    if ('\0' != *end || v > INT_MAX) {
        return -1;
    }
    *value = (int) v;
    return 0;
}
static int smx_enum_count(mca_base_var_enum_t *self, int *count)
{
    *count = self->enum_value_count;
    return OPAL_SUCCESS;
}

static int smx_enum_value(mca_base_var_enum_t *self, int index, int *value, const char **string)
{
    if (index < 0 || index >= self->enum_value_count) {
        return OPAL_ERR_VALUE_OUT_OF_BOUNDS;
    }
    if (NULL != value) {
        *value = self->enum_values[index].value;
    }
    if (NULL != string) {
        *string = self->enum_values[index].string; /* as Open MPI's bool enumerator: its
                                                      callers (MPI_T) copy, never free */
    }
    return OPAL_SUCCESS;
}

static int smx_enum_from_string(mca_base_var_enum_t *self, const char *text, int *value)
{
    text += strspn(text, " \t");
    for (int i = 0; i < self->enum_value_count; ++i) {
        if (0 == strcasecmp(text, self->enum_values[i].string)) {
            *value = self->enum_values[i].value;
            return OPAL_SUCCESS;
        }
    }
    return 0 == smx_parse_count(text, value) ? OPAL_SUCCESS : OPAL_ERR_VALUE_OUT_OF_BOUNDS;
}

static int smx_enum_to_string(mca_base_var_enum_t *self, const int value, char **string)
{
    for (int i = 0; i < self->enum_value_count; ++i) {
        if (value == self->enum_values[i].value) {
            if (NULL != string) {
                *string = strdup(self->enum_values[i].string);
            }
            return OPAL_SUCCESS;
        }
    }
    if (value < 0) {
        return OPAL_ERR_VALUE_OUT_OF_BOUNDS;
    }
    if (NULL != string && 0 > asprintf(string, "%d", value)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

static int smx_enum_dump(mca_base_var_enum_t *self, char **out, mca_base_var_enum_dump_type_t type)
{
    char names[64] = "";

    (void) type;
    for (int i = 0; i < self->enum_value_count; ++i) {
        strncat(names, self->enum_values[i].string, sizeof(names) - strlen(names) - 1);
        strncat(names, ", ", sizeof(names) - strlen(names) - 1);
    }
    return 0 > asprintf(out, "%sor a number >= 0", names) ? OPAL_ERR_OUT_OF_RESOURCE
                                                          : OPAL_SUCCESS;
}

#define SMX_ENUM(var, name, ...)                                                            \
    static mca_base_var_enum_value_t var##_values[] = {__VA_ARGS__, {0, NULL}};             \
    static mca_base_var_enum_t var = {                                                      \
        .super = OPAL_OBJ_STATIC_INIT(opal_object_t),                                       \
        .enum_is_static = true,                                                             \
        .enum_name = name,                                                                  \
        .get_count = smx_enum_count,                                                        \
        .get_value = smx_enum_value,                                                        \
        .value_from_string = smx_enum_from_string,                                          \
        .string_from_value = smx_enum_to_string,                                            \
        .dump = smx_enum_dump,                                                              \
        .enum_value_count = sizeof(var##_values) / sizeof(var##_values[0]) - 1,             \
        .enum_values = var##_values,                                                        \
    }

SMX_ENUM(smx_enum_off, "smx_off", {SMX_OFF, "off"});
SMX_ENUM(smx_enum_auto, "smx_auto", {SMX_AUTO, "auto"});
SMX_ENUM(smx_enum_measured, "smx_measured", {SMX_MEASURED, "auto"});
SMX_ENUM(smx_enum_measured_never, "smx_measured_never", {SMX_MEASURED, "auto"},
         {SMX_NEVER, "never"});
/* (a plain MCA enum: these three words and nothing else) */
static mca_base_var_enum_value_t smx_skew_values[] = {
    {SMX_SKEW_OFF, "off"}, {SMX_SKEW_ON, "on"}, {SMX_SKEW_ALWAYS, "always"}, {0, NULL}};
static mca_base_var_enum_value_t smx_nontemporal_values[] = {
    {SMX_NT_AUTO, "auto"}, {SMX_NT_NEVER, "never"}, {SMX_NT_ALWAYS, "always"}, {0, NULL}};

/* Indices of the variables whose source decides precedence (smx_resolve_limits). */
static int smx_var_eager_class[SMX_CLASS_COUNT], smx_var_single_class[SMX_CLASS_COUNT];
static int smx_var_single_copy_min = -1, smx_var_skew_eager_limit = -1;
/* btl_smx_single_copy_min: every class not set by name */
static int smx_single_copy_min = SMX_MEASURED;
/* A value the MCA system refused (it said so, naming the variable): btl/smx stays out. */
static bool smx_var_refused;

static int smx_var(const char *name, const char *help, mca_base_var_type_t type,
                   mca_base_var_enum_t *values, int level, mca_base_var_scope_t scope, void *storage)
{
    int index = mca_base_component_var_register(&mca_btl_smx_component.super.btl_version, name,
                                                help, type, values, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                                level, scope, storage);
    if (index < 0) {
        smx_var_refused = true;
    }
    return index;
}

#define SMX_INT(name, help, values, level, storage) \
    smx_var(name, help, MCA_BASE_VAR_TYPE_INT, values, level, MCA_BASE_VAR_SCOPE_LOCAL, storage)
#define SMX_BOOL(name, help, level, storage) \
    smx_var(name, help, MCA_BASE_VAR_TYPE_BOOL, NULL, level, MCA_BASE_VAR_SCOPE_LOCAL, storage)

static void smx_pvar(const char *name, const char *help, int pvar_class,
                     unsigned long long *value)
{
    (void) mca_base_component_pvar_register(
        &mca_btl_smx_component.super.btl_version, name, help, OPAL_INFO_LVL_4, pvar_class,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL, value);
}

enum {
    SMX_DEFAULT_PUSH_MAX = 128 * 1024, /* btl_smx_push.c */
};

int mca_btl_smx_params_register(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    char name[64], help[160];

    smx_var_refused = false;
    (void) mca_base_var_group_component_register(
        &c->super.btl_version, "Shared-memory transport with a topology-aware eager/rendezvous switch");

    c->budget_kb = SMX_AUTO;
    SMX_INT("budget_kb", "KiB of shared memory for a process's messages in flight (auto: "
            "16 MiB shared by the node's processes, each page taken at its first use; a value "
            "set here is taken whole at MPI_Init)",
            &smx_enum_auto, OPAL_INFO_LVL_4, &c->budget_kb);
    c->pair_ring_size = SMX_AUTO;
    SMX_INT("pair_ring_size", "Bytes of a process's ring to a peer it sends to often (a power "
            "of two, 4096-4194304; auto: 512 KiB for its first 4 rings, 128 KiB for later "
            "ones)", &smx_enum_auto, OPAL_INFO_LVL_5, &c->pair_ring_size);
    c->pair_rings_max = 16;
    SMX_INT("pair_rings_max", "Most peers a process writes to through rings of its own "
            "(0-65536)", NULL, OPAL_INFO_LVL_5, &c->pair_rings_max);
    c->pair_ring_after = 16;
    SMX_INT("pair_ring_after", "Messages to a peer through its queue before it gets a ring "
            "(0-1000000000)", NULL, OPAL_INFO_LVL_5, &c->pair_ring_after);
    c->frag_size = SMX_FRAG_DEFAULT;
    smx_var("frag_size", "Payload bytes of the largest fragment (1024-1048576); lowers the "
            "unset limits above it", MCA_BASE_VAR_TYPE_INT, NULL,
            OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->frag_size);
    /* like btl/sm: /dev/shm where it can be written, else the job's session directory */
    c->backing_directory = 0 == access("/dev/shm", W_OK) ? "/dev/shm"
                                                         : opal_process_info.job_session_dir;
    (void) mca_base_component_var_register(&c->super.btl_version, "backing_directory",
                                           "Directory of the shared-memory segments' files (a "
                                           "local file system: /dev/shm, or /tmp)",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
                                           MCA_BASE_VAR_SCOPE_READONLY, &c->backing_directory);
    c->max_frags = 512;
    SMX_INT("max_frags", "Fragments out at once waiting for room; beyond, ob1 queues sends "
            "itself (8-1048576)", NULL, OPAL_INFO_LVL_5, &c->max_frags);

    /* Each class's way is measured (btl_smx_choice.h); a value pins it. */
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const char *cname = smx_locality_class_name(cls);

        c->eager_limit[cls] = SMX_MEASURED;
        snprintf(name, sizeof(name), "eager_limit_%s", cname);
        snprintf(help, sizeof(help), "Eager limit (bytes, ob1 header included) for peers of "
                 "class %s: 128 to btl_smx_max_send_size; auto: measured per peer and size",
                 cname);
        smx_var_eager_class[cls] = SMX_INT(name, help, &smx_enum_measured, OPAL_INFO_LVL_4,
                                           &c->eager_limit[cls]);
        c->single_copy_min[cls] = SMX_MEASURED;
        snprintf(name, sizeof(name), "single_copy_min_%s", cname);
        snprintf(help, sizeof(help), "Rendezvous by single copy (smsc) from this many bytes for "
                 "peers of class %s, never, or auto: measured per peer and size", cname);
        smx_var_single_class[cls] = SMX_INT(name, help, &smx_enum_measured_never,
                                            OPAL_INFO_LVL_4, &c->single_copy_min[cls]);
    }
    smx_single_copy_min = SMX_MEASURED;
    smx_var_single_copy_min = SMX_INT("single_copy_min", "Rendezvous by single copy from this "
                                      "many bytes for every class not set by name, never, or "
                                      "auto: measured", &smx_enum_measured_never,
                                      OPAL_INFO_LVL_4, &smx_single_copy_min);
    c->push_max = SMX_DEFAULT_PUSH_MAX;
    SMX_INT("push_max", "Double-copy rendezvous up to this size go unasked (0-67108864)",
            &smx_enum_off, OPAL_INFO_LVL_5, &c->push_max);
    {
        mca_base_var_enum_t *skew_enum = NULL;
        c->skew = SMX_SKEW_ON;
        if (OPAL_SUCCESS == mca_base_var_enum_create("btl_smx_skew", smx_skew_values, &skew_enum)) {
            SMX_INT("skew", "Late receivers get messages up to btl_smx_skew_eager_limit eagerly "
                    "(on); never (off); every receiver late (always: tests)",
                    skew_enum, OPAL_INFO_LVL_4, &c->skew);
            OBJ_RELEASE(skew_enum);
        }
    }
    {
        mca_base_var_enum_t *nt_enum = NULL;
        c->nontemporal = SMX_NT_AUTO;
        if (OPAL_SUCCESS
            == mca_base_var_enum_create("btl_smx_nontemporal", smx_nontemporal_values, &nt_enum)) {
            SMX_INT("nontemporal", "Non-temporal stores for payloads from 2 KiB: per peer where "
                    "measured cheaper than memcpy (auto), never, always",
                    nt_enum, OPAL_INFO_LVL_5, &c->nontemporal);
            OBJ_RELEASE(nt_enum);
        }
    }
    c->skew_late_us = 10;
    SMX_INT("skew_late_us", "Rendezvous waiting this long (us) for their receive make a "
            "receiver late (1-1000000)", NULL, OPAL_INFO_LVL_5,
            &c->skew_late_us);
    c->skew_eager_limit = 128 * 1024 + 2048; /* a 128 KiB message with its header */
    smx_var_skew_eager_limit = SMX_INT("skew_eager_limit", "Eager limit (bytes) of a class with a late receiver, as far "
            "as the area holds", NULL, OPAL_INFO_LVL_4, &c->skew_eager_limit);
    /* Not settable: btl_smx_policy.c writes it once the policy is built (the MCA system
     * owns the string and frees it at the end). */
    c->policy_text = NULL;
    (void) mca_base_component_var_register(&c->super.btl_version, "policy", "The policy this "
                                           "process built, as key=value words (read through MPI_T)",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                           MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_9,
                                           MCA_BASE_VAR_SCOPE_READONLY, &c->policy_text);
    smx_pvar("gets_single_copy", "Rendezvous pulled by single copy", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.gets_single_copy);
    smx_pvar("gets_double_copy", "Rendezvous pulled by double copy (or pushed by the peer)",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.gets_double_copy);
    smx_pvar("pushes_ahead", "Rendezvous sent unasked", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.pushes_ahead);
    smx_pvar("pushes_parked", "Peers' ones come before their receive", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.pushes_parked);
    smx_pvar("copy_switches", "Changes of a peer's way (eager, single or double copy) as "
             "measured",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.copy_switches);
    smx_pvar("sends_queued", "Sends that found no room and waited", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.sends_queued);
    smx_pvar("pair_rings", "Peers this process writes to through a ring of its own",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.pair_rings);
    smx_pvar("frags_peak", "Most fragments out at once (btl_smx_max_frags)",
             MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &c->stats.frags_peak);
    smx_pvar("skew_late", "Times late to a sender", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.skew_late);
    smx_pvar("skew_caught_up", "Times caught up with a sender", MCA_BASE_PVAR_CLASS_COUNTER,
             &c->stats.skew_caught_up);
    smx_pvar("skew_eager_sends", "Messages above a fragment sent eagerly",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.skew_eager_sends);
    smx_pvar("streamed_copies", "Payloads written with non-temporal stores",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.streamed_copies);
    smx_pvar("store_switches", "Changes of a peer's way of writing payloads",
             MCA_BASE_PVAR_CLASS_COUNTER, &c->stats.store_switches);

    /* The generic BTL parameters (btl_smx_eager_limit, ...) are registered on the module
     * template; a generic eager limit the user sets applies to every class not set by
     * name. Get and put are flagged at init, once the smsc component is known: their
     * generic parameters (limits, alignments, the RDMA pipeline, which is off) are not
     * registered. */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_HIGH - 1;
    m->btl_eager_limit = 4 * 1024;
    m->btl_rndv_eager_limit = 32 * 1024;
    m->btl_max_send_size = SMX_FRAG_DEFAULT;
    m->btl_min_rdma_pipeline_size = INT_MAX;
    m->btl_get_limit = SIZE_MAX;
    m->btl_put_limit = SIZE_MAX;
    m->btl_flags = MCA_BTL_FLAGS_SEND;
    m->btl_bandwidth = 20000;
    m->btl_latency = 1;
    mca_btl_base_param_register(&c->super.btl_version, m);
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

static int smx_generic_var(const char *name)
{
    return mca_base_var_find("opal", "btl", "smx", name);
}

/* The parameter that supplied a class's eager limit: its own unless only the generic
 * btl_smx_eager_limit was set. */
static const char *smx_eager_name(int cls, char *buf, size_t len)
{
    if (!smx_var_is_set(smx_var_eager_class[cls]) && smx_var_is_set(smx_generic_var("eager_limit"))) {
        snprintf(buf, len, "btl_smx_eager_limit");
    } else {
        snprintf(buf, len, "btl_smx_eager_limit_%s", smx_locality_class_name(cls));
    }
    return buf;
}

/* The generic eager limit and single-copy threshold, when set, go to every class not set
 * by name; a smaller fragment pulls down btl_smx_max_send_size and the rendezvous's first
 * fragment where they would not fit. Values the user set stay as they are, for
 * mca_btl_smx_params_valid to judge. */
static void smx_resolve_limits(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    const bool generic = smx_var_is_set(smx_generic_var("eager_limit"));
    const bool generic_single = smx_var_is_set(smx_var_single_copy_min);

    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (generic && !smx_var_is_set(smx_var_eager_class[cls])) {
            c->eager_limit[cls] = m->btl_eager_limit > INT_MAX ? INT_MAX : (int) m->btl_eager_limit;
        }
        if (generic_single && !smx_var_is_set(smx_var_single_class[cls])) {
            c->single_copy_min[cls] = smx_single_copy_min;
        }
    }
    if (c->frag_size >= 1024 && !smx_var_is_set(smx_generic_var("max_send_size"))
        && m->btl_max_send_size > (size_t) c->frag_size) {
        m->btl_max_send_size = (size_t) c->frag_size;
    }
    if (!smx_var_is_set(smx_generic_var("rndv_eager_limit"))
        && m->btl_rndv_eager_limit > m->btl_max_send_size) {
        m->btl_rndv_eager_limit = m->btl_max_send_size;
    }
}

static bool smx_refuse(const char *name, long long value, const char *expected)
{
    char text[32];

    snprintf(text, sizeof(text), "%lld", value);
    opal_show_help("help-btl-smx.txt", "bad-param", true, name, text, expected);
    return false;
}

static bool smx_in(const char *name, long long value, long long lo, long long hi)
{
    char expected[64];

    if (value >= lo && value <= hi) {
        return true;
    }
    snprintf(expected, sizeof(expected), "%lld to %lld", lo, hi);
    return smx_refuse(name, value, expected);
}

/* An eager limit: auto (measured), or SMX_EAGER_LIMIT_MIN (ob1 refuses a BTL whose
 * eager limit cannot hold its largest header, 80 bytes in 5.0.x, and MPI_Init then
 * fails) to a whole fragment. */
static bool smx_eager_valid(const char *name, int limit)
{
    const size_t most = mca_btl_smx_module_template.btl_max_send_size;
    char expected[128];

    if (SMX_MEASURED == limit || (limit >= SMX_EAGER_LIMIT_MIN && (size_t) limit <= most)) {
        return true;
    }
    snprintf(expected, sizeof(expected), "auto, or %d (ob1's headers) to btl_smx_max_send_size "
             "(%zu)", SMX_EAGER_LIMIT_MIN, most);
    return smx_refuse(name, limit, expected);
}

bool mca_btl_smx_params_valid(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_base_module_t *m = &mca_btl_smx_module_template;
    char name[64], expected[128];

    if (smx_var_refused) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                            "btl:smx: not used: the MCA system refused a value "
                            "of one of its parameters (named above)");
        return false;
    }
    smx_resolve_limits();
    if (NULL == c->backing_directory || '\0' == c->backing_directory[0]) {
        opal_show_help("help-btl-smx.txt", "bad-param", true, "btl_smx_backing_directory", "",
                       "a directory on a local file system");
        return false;
    }
    if (SMX_AUTO != c->pair_ring_size
        && (c->pair_ring_size < 4096 || c->pair_ring_size > 4 * 1024 * 1024
            || 0 != (c->pair_ring_size & (c->pair_ring_size - 1)))) {
        return smx_refuse("btl_smx_pair_ring_size", c->pair_ring_size,
                          "auto, or a power of two from 4096 to 4194304");
    }
    if (!smx_in("btl_smx_frag_size", c->frag_size, 1024, 1024 * 1024)
        || !smx_in("btl_smx_max_frags", c->max_frags, 8, 1024 * 1024)
        || !smx_in("btl_smx_pair_rings_max", c->pair_rings_max, 0, 65536)
        || !smx_in("btl_smx_pair_ring_after", c->pair_ring_after, 0, 1000000000)) {
        return false;
    }
    /* A size the user chose is used as it is; the default may shrink to fit
     * (mca_btl_smx_segment_create). */
    c->area_fixed = SMX_AUTO != c->budget_kb;
    c->area_max = (uint64_t) c->budget_kb << 10;
    if (c->area_fixed
        && (c->budget_kb < 0 || c->area_max < mca_btl_smx_area_min()
            || c->budget_kb > 16 * 1024 * 1024)) {
        snprintf(expected, sizeof(expected), "auto, or %llu (five fragments of "
                 "btl_smx_frag_size %d) to 16777216",
                 (unsigned long long) ((mca_btl_smx_area_min() + 1023) >> 10), c->frag_size);
        return smx_refuse("btl_smx_budget_kb", c->budget_kb, expected);
    }
    if (!smx_in("btl_smx_max_send_size", (long long) m->btl_max_send_size, 1024, c->frag_size)) {
        return false;
    }
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (!smx_eager_valid(smx_eager_name(cls, name, sizeof(name)), c->eager_limit[cls])) {
            return false;
        }
    }
    if (m->btl_rndv_eager_limit > m->btl_max_send_size) {
        snprintf(expected, sizeof(expected), "at most btl_smx_max_send_size (%zu)",
                 m->btl_max_send_size);
        return smx_refuse("btl_smx_rndv_eager_limit", (long long) m->btl_rndv_eager_limit,
                          expected);
    }
    /* (the skew's default limit is cut to fit the fragments and area: btl_smx_skew.c) */
    if (!smx_in("btl_smx_push_max", c->push_max, 0, SMX_PUSH_MOST)
        || !smx_in("btl_smx_skew_late_us", c->skew_late_us, 1, 1000000)
        || !smx_in("btl_smx_skew_eager_limit", c->skew_eager_limit, SMX_EAGER_LIMIT_MIN,
                   smx_var_is_set(smx_var_skew_eager_limit)
                       ? (long long) SMX_MULTI_MAX * c->frag_size : INT_MAX)) {
        return false;
    }
    return true;
}
