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

/* (0 is what a user types for off, auto and never, and what ompi_info shows; off stays 0,
 * a count, and smx_resolve_limits makes auto and never SMX_AUTO and SMX_NEVER) */
SMX_ENUM(smx_enum_off, "smx_off", {0, "off"});
SMX_ENUM(smx_enum_auto, "smx_auto", {0, "auto"});
SMX_ENUM(smx_enum_measured, "smx_measured", {SMX_MEASURED, "auto"});
SMX_ENUM(smx_enum_measured_never, "smx_measured_never", {SMX_MEASURED, "auto"}, {0, "never"});
/* (a plain MCA enum: these three words and nothing else) */
static const mca_base_var_enum_value_t smx_skew_values[] = {
    {SMX_SKEW_OFF, "off"}, {SMX_SKEW_ON, "on"}, {SMX_SKEW_ALWAYS, "always"}, {0, NULL}};
static const mca_base_var_enum_value_t smx_in_place_values[] = {
    {1, "on"}, {0, "off"}, {0, NULL}};
static const mca_base_var_enum_value_t smx_nontemporal_values[] = {
    {SMX_NT_AUTO, "auto"}, {SMX_NT_NEVER, "never"}, {SMX_NT_ALWAYS, "always"}, {0, NULL}};

/* Indices of the variables whose source decides precedence (smx_resolve_limits). */
static int smx_var_eager_class[SMX_CLASS_COUNT], smx_var_single_class[SMX_CLASS_COUNT];
static int smx_var_single_copy_min = -1, smx_var_skew_eager_limit = -1;
/* The parameters whose 0 is a name (auto, never), as the user set them: the component's
 * fields get the sentinels (smx_resolve_limits). smx_single_copy_min is the generic one,
 * for every class not set by name. */
static int smx_budget_kb, smx_pair_ring_size, smx_single_copy_min_class[SMX_CLASS_COUNT];
static int smx_single_copy_min;
/* A value the MCA system refused (it said so, naming the variable): btl/smx stays out. */
static bool smx_var_refused;

/* A parameter: a row of smx_params. */
struct smx_param {
    const char *name;  /* after btl_smx_; a %s: one per class (storage, index: by class) */
    mca_base_var_type_t type; /* an int, or a string (its default set before the table) */
    void *storage;
    int value;         /* the default of an int */
    mca_base_var_enum_t *values; /* its named values, numbers beside them (SMX_ENUM) */
    const mca_base_var_enum_value_t *words; /* or these words only (an MCA enum) */
    int level;
    mca_base_var_scope_t scope;
    int flags;
    int *index;        /* where its index is kept, or NULL */
    const char *help;
};

#define SMX_ROWS(table) (sizeof(table) / sizeof((table)[0]))
#define SMX_FIELD(name) (&mca_btl_smx_component.name)
/* An int the user sets for this process. */
#define SMX_INT(name_, storage_, default_, level_, ...)                                     \
    {.name = name_, .type = MCA_BASE_VAR_TYPE_INT, .storage = storage_, .value = default_,  \
     .level = OPAL_INFO_LVL_##level_, .scope = MCA_BASE_VAR_SCOPE_LOCAL,                    \
     .flags = MCA_BASE_VAR_FLAG_SETTABLE, __VA_ARGS__}

enum {
    SMX_DEFAULT_PUSH_MAX = 128 * 1024, /* btl_smx_push.c */
};

/* In the order ompi_info lists them; a run of rows by class, class by class. */
static const struct smx_param smx_params[] = {
    SMX_INT("budget_kb", &smx_budget_kb, 0, 4, .values = &smx_enum_auto,
            .help = "KiB of shared memory for a process's messages in flight (auto: 16 MiB "
                    "shared by the node's processes, pages taken at first use; a value set "
                    "here is taken whole at MPI_Init)"),
    SMX_INT("pair_ring_size", &smx_pair_ring_size, 0, 5, .values = &smx_enum_auto,
            .help = "Bytes of a process's ring to a peer it sends to often (a power of two, "
                    "4096-4194304; auto: 512 KiB for its first 4 rings, 128 KiB for later "
                    "ones)"),
    SMX_INT("pair_rings_max", SMX_FIELD(pair_rings_max), 16, 5,
            .help = "Most peers a process writes to through rings of its own (0-65536)"),
    SMX_INT("pair_ring_after", SMX_FIELD(pair_ring_after), 16, 5,
            .help = "Messages to a peer through its queue before it gets a ring "
                    "(0-1000000000)"),
    {.name = "frag_size", .type = MCA_BASE_VAR_TYPE_INT, .storage = SMX_FIELD(frag_size),
     .value = SMX_FRAG_DEFAULT, .level = OPAL_INFO_LVL_5, .scope = MCA_BASE_VAR_SCOPE_ALL_EQ,
     .flags = MCA_BASE_VAR_FLAG_SETTABLE,
     .help = "Payload bytes of the largest fragment (1024-1048576); lowers the unset limits "
             "above it"},
    {.name = "backing_directory", .type = MCA_BASE_VAR_TYPE_STRING,
     .storage = SMX_FIELD(backing_directory), .level = OPAL_INFO_LVL_3,
     .scope = MCA_BASE_VAR_SCOPE_READONLY,
     .help = "Directory of the shared-memory segments' files (a local file system: /dev/shm, "
             "or /tmp)"},
    SMX_INT("max_frags", SMX_FIELD(max_frags), 512, 5,
            .help = "Fragments out at once waiting for room; beyond, ob1 queues sends itself "
                    "(8-1048576)"),
    /* Each class's way is measured (btl_smx_choice.h); a value pins it. */
    SMX_INT("eager_limit_%s", SMX_FIELD(eager_limit), SMX_MEASURED, 4,
            .values = &smx_enum_measured, .index = smx_var_eager_class,
            .help = "Eager limit (bytes, ob1 header included) for peers of class %s: 128 to "
                    "btl_smx_max_send_size; auto: measured per peer and size"),
    SMX_INT("single_copy_min_%s", smx_single_copy_min_class, SMX_MEASURED, 4,
            .values = &smx_enum_measured_never, .index = smx_var_single_class,
            .help = "Rendezvous by single copy (smsc) from this many bytes for peers of class "
                    "%s, never, or auto: measured per peer and size"),
    SMX_INT("single_copy_min", &smx_single_copy_min, SMX_MEASURED, 4,
            .values = &smx_enum_measured_never, .index = &smx_var_single_copy_min,
            .help = "Rendezvous by single copy from this many bytes for every class not set by "
                    "name, never, or auto: measured"),
    SMX_INT("push_max", SMX_FIELD(push_max), SMX_DEFAULT_PUSH_MAX, 5, .values = &smx_enum_off,
            .help = "Double-copy rendezvous up to this size go unasked (0-67108864)"),
    SMX_INT("skew", SMX_FIELD(skew), SMX_SKEW_ON, 4, .words = smx_skew_values,
            .help = "Late receivers get messages up to btl_smx_skew_eager_limit eagerly (on); "
                    "never (off); every receiver late (always: tests)"),
    SMX_INT("in_place", SMX_FIELD(in_place_wanted), 1, 4, .words = smx_in_place_values,
            .help = "Eager messages in place where faster; off keeps MPI_ERR_TRUNCATE"),
    SMX_INT("nontemporal", SMX_FIELD(nontemporal), SMX_NT_AUTO, 5,
            .words = smx_nontemporal_values,
            .help = "Non-temporal stores for payloads from 2 KiB: per peer where measured "
                    "cheaper than memcpy (auto), never, always"),
    SMX_INT("skew_late_us", SMX_FIELD(skew_late_us), 10, 5,
            .help = "Rendezvous waiting this long (us) for their receive make a receiver late "
                    "(1-1000000)"),
    /* a 128 KiB message with its header */
    SMX_INT("skew_eager_limit", SMX_FIELD(skew_eager_limit), 128 * 1024 + 2048, 4,
            .index = &smx_var_skew_eager_limit,
            .help = "Eager limit (bytes) of a class with a late receiver, as far as the area "
                    "holds"),
    /* Not settable: btl_smx_policy.c writes it once the policy is built (the MCA system
     * owns the string and frees it at the end). */
    {.name = "policy", .type = MCA_BASE_VAR_TYPE_STRING, .storage = SMX_FIELD(policy_text),
     .level = OPAL_INFO_LVL_9, .scope = MCA_BASE_VAR_SCOPE_READONLY,
     .flags = MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
     .help = "The policy this process built, as key=value words (read through MPI_T)"},
};

/* The counters (MPI_T performance variables, read-only), fields of the component's stats. */
static const struct smx_counter {
    const char *name;
    int pvar_class;
    unsigned long long *value;
    const char *help;
} smx_counters[] = {
#define SMX_STAT(name) SMX_FIELD(stats.name)
    {"gets_single_copy", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(gets_single_copy),
     "Rendezvous pulled by single copy"},
    {"gets_double_copy", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(gets_double_copy),
     "Rendezvous pulled by double copy (or pushed by the peer)"},
    {"in_place", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(in_place),
     "Eager messages received in place (through a mapping)"},
    {"pushes_ahead", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(pushes_ahead),
     "Rendezvous sent unasked"},
    {"pushes_parked", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(pushes_parked),
     "Peers' ones come before their receive"},
    {"copy_switches", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(copy_switches),
     "Changes of a peer's way (eager, single or double copy) as measured"},
    {"sends_queued", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(sends_queued),
     "Sends that found no room and waited"},
    {"pair_rings", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(pair_rings),
     "Peers this process writes to through a ring of its own"},
    {"frags_peak", MCA_BASE_PVAR_CLASS_HIGHWATERMARK, SMX_STAT(frags_peak),
     "Most fragments out at once (btl_smx_max_frags)"},
    {"skew_late", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(skew_late), "Times late to a sender"},
    {"skew_caught_up", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(skew_caught_up),
     "Times caught up with a sender"},
    {"skew_eager_sends", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(skew_eager_sends),
     "Messages above a fragment sent eagerly"},
    {"streamed_copies", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(streamed_copies),
     "Payloads written with non-temporal stores"},
    {"store_switches", MCA_BASE_PVAR_CLASS_COUNTER, SMX_STAT(store_switches),
     "Changes of a peer's way of writing payloads"},
#undef SMX_STAT
};

/* A row of smx_params, for class cls where its name has a %s. */
static void smx_param_register(const struct smx_param *p, int cls)
{
    const bool by_class = NULL != strstr(p->name, "%s");
    void *storage = by_class ? (void *) ((int *) p->storage + cls) : p->storage;
    const char *name = p->name, *help = p->help;
    mca_base_var_enum_t *values = p->values;
    char name_for[64], help_for[256], words_name[80];
    int index;

    if (by_class) {
        snprintf(name_for, sizeof(name_for), p->name, smx_locality_class_name(cls));
        snprintf(help_for, sizeof(help_for), p->help, smx_locality_class_name(cls));
        name = name_for;
        help = help_for;
    }
    if (MCA_BASE_VAR_TYPE_INT == p->type) {
        *(int *) storage = p->value;
    }
    if (NULL != p->words) {
        snprintf(words_name, sizeof(words_name), "btl_smx_%s", name);
        if (OPAL_SUCCESS != mca_base_var_enum_create(words_name, p->words, &values)) {
            return;
        }
    }
    index = mca_base_component_var_register(&mca_btl_smx_component.super.btl_version, name,
                                            help, p->type, values, 0, p->flags, p->level,
                                            p->scope, storage);
    if (NULL != p->words) {
        OBJ_RELEASE(values);
    }
    if (NULL != p->index) {
        p->index[by_class ? cls : 0] = index;
    }
    smx_var_refused |= index < 0;
}

static bool smx_param_by_class(size_t row)
{
    return row < SMX_ROWS(smx_params) && NULL != strstr(smx_params[row].name, "%s");
}

int mca_btl_smx_params_register(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_base_module_t *m = &mca_btl_smx_module_template;

    smx_var_refused = false;
    (void) mca_base_var_group_component_register(
        &c->super.btl_version, "Shared-memory transport with a topology-aware eager/rendezvous switch");

    /* The strings' defaults (the table holds the ints'): like btl/sm, /dev/shm where it can
     * be written, else the job's session directory; no policy until one is built. */
    c->backing_directory = 0 == access("/dev/shm", W_OK) ? "/dev/shm"
                                                         : opal_process_info.job_session_dir;
    c->policy_text = NULL;
    for (size_t row = 0, end; row < SMX_ROWS(smx_params); row = end) {
        /* (end: past the run of rows by class that starts here) */
        for (end = row + 1; smx_param_by_class(row) && smx_param_by_class(end); ++end) {
        }
        for (int cls = 0; cls < (smx_param_by_class(row) ? SMX_CLASS_COUNT : 1); ++cls) {
            for (size_t at = row; at < end; ++at) {
                smx_param_register(&smx_params[at], cls);
            }
        }
    }
    for (size_t i = 0; i < SMX_ROWS(smx_counters); ++i) {
        const struct smx_counter *k = &smx_counters[i];

        (void) mca_base_component_pvar_register(
            &c->super.btl_version, k->name, k->help, OPAL_INFO_LVL_4, k->pvar_class,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            k->value);
    }

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

/* A parameter's value with its 0 (a name: never, auto) made the component's sentinel. */
_Static_assert(SMX_MEASURED < 0 && SMX_NEVER < 0 && SMX_AUTO < 0 && SMX_NEVER != SMX_MEASURED
                   && SMX_AUTO != SMX_MEASURED && SMX_AUTO != SMX_NEVER,
               "btl/smx's named values: distinct, and none a count could be taken for");
static int smx_named_zero(int value, int sentinel)
{
    return 0 == value ? sentinel : value;
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

    c->budget_kb = smx_named_zero(smx_budget_kb, SMX_AUTO);
    c->pair_ring_size = smx_named_zero(smx_pair_ring_size, SMX_AUTO);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        const bool by_name = smx_var_is_set(smx_var_single_class[cls]);

        if (generic && !smx_var_is_set(smx_var_eager_class[cls])) {
            c->eager_limit[cls] = m->btl_eager_limit > INT_MAX ? INT_MAX : (int) m->btl_eager_limit;
        }
        c->single_copy_min[cls] = smx_named_zero(generic_single && !by_name
                                                     ? smx_single_copy_min
                                                     : smx_single_copy_min_class[cls],
                                                 SMX_NEVER);
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
    c->area_max = c->area_fixed ? (uint64_t) c->budget_kb << 10 : 0;
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
