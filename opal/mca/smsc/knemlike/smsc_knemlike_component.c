/*
 * smsc/knemlike component: parameters, query (proves the device works), enable (exports
 * this process's address space where the module can: CAN_MAP), close.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opal_config.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#include "smsc_knemlike.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <linux/knemlike.h>

/* Above cma (37): a working kernel single-copy device is preferred over ptrace-based CMA. */
#define SMSC_KNEMLIKE_DEFAULT_PRIORITY 40

static int knemlike_component_register(void);
static int knemlike_component_open(void);
static int knemlike_component_close(void);
static int knemlike_component_query(void);
static mca_smsc_module_t *knemlike_component_enable(void);

mca_smsc_knemlike_component_t mca_smsc_knemlike_component = {
    .super = {
        .smsc_version = {
            MCA_SMSC_DEFAULT_VERSION("knemlike"),
            .mca_open_component = knemlike_component_open,
            .mca_close_component = knemlike_component_close,
            .mca_register_component_params = knemlike_component_register,
        },
        .priority = SMSC_KNEMLIKE_DEFAULT_PRIORITY,
        .query = knemlike_component_query,
        .enable = knemlike_component_enable,
    },
    .fd = -1,
};

/* A parameter: a row of knemlike_params. */
struct knemlike_param {
    const char *name;         /* after smsc_knemlike_ */
    mca_base_var_type_t type; /* an int, an unsigned long, a bool or a string */
    void *storage;
    unsigned long value;      /* the default of a number or a bool */
    const char *text;         /* of a string */
    int level;
    mca_base_var_scope_t scope;
    const char *help;
};

#define KNEMLIKE_ROWS(table) (sizeof(table) / sizeof((table)[0]))
#define KNEMLIKE_FIELD(name) (&mca_smsc_knemlike_component.name)
/* A variable the user sets, named as the component's field that holds it. */
#define KNEMLIKE_PARAM(field, type_, level_, scope_, ...)                                   \
    {.name = #field, .type = MCA_BASE_VAR_TYPE_##type_, .storage = KNEMLIKE_FIELD(field),  \
     .level = OPAL_INFO_LVL_##level_, .scope = MCA_BASE_VAR_SCOPE_##scope_, __VA_ARGS__}

/* In the order ompi_info lists them, after the priority (smsc's own). */
static const struct knemlike_param knemlike_params[] = {
    KNEMLIKE_PARAM(device, STRING, 9, READONLY, .text = "/dev/knemlike",
                   .help = "Character device of the knemlike kernel module"),
    /* An entry costs a kernel slot (the module allows 65536 regions per open file) and,
     * when it holds its pages, that memory pinned. */
    KNEMLIKE_PARAM(cache_max_entries, INT, 5, LOCAL, .value = 4096,
                   .help = "Most registrations the registration cache keeps; the least recently "
                           "used unused one is destroyed beyond that (0: no limit; must stay "
                           "below the module's max_regions_per_file, default 65536)"),
    KNEMLIKE_PARAM(cache_max_mb, UNSIGNED_LONG, 5, LOCAL, .value = 0,
                   .help = "Most MiB the registration cache covers (0: auto: the process's "
                           "RLIMIT_MEMLOCK when registrations hold their pages, else no "
                           "limit)"),
    KNEMLIKE_PARAM(hold_pages, BOOL, 5, LOCAL, .value = true,
                   .help = "Registrations keep their pages pinned (counted in RLIMIT_MEMLOCK) so "
                           "that a repeated copy pins nothing; false: pages are found at each "
                           "copy, as CMA does"),
    KNEMLIKE_PARAM(attach_max, INT, 5, LOCAL, .value = 256,
                   .help = "Most peer registrations kept mapped here, so that a copy from or to "
                           "them is a memcpy (0: every copy through the device's ioctl)"),
    KNEMLIKE_PARAM(map, BOOL, 5, ALL_EQ, .value = true,
                   .help = "Export this process's address space so that peers map its buffers "
                           "(CAN_MAP: stock btl/sm then sends in place, the receiver copying "
                           "straight from the sender's buffer); needs a module with exports "
                           "(ABI 3). false: as with a module without exports"),
    /* Nothing is mapped before it is touched: the bound is on address space and on
     * mappings (vm.max_map_count), not on memory. */
    KNEMLIKE_PARAM(map_max_mb, UNSIGNED_LONG, 5, LOCAL, .value = 1024,
                   .help = "Most MiB of each peer's memory kept mapped here once unused "
                           "(mappings in use are never undone; 0: no limit)"),
};

/* The counters (MPI_T performance variables, read-only), registered at enable: the
 * caches' own counts, which MPI_T reads as unsigned long long. */
_Static_assert(sizeof(uint64_t) == sizeof(unsigned long long), "a count is 64 bits");
static const struct knemlike_counter {
    const char *name;
    int pvar_class;
    void *value; /* a 64-bit count */
    const char *help;
} knemlike_counters[] = {
    {"cache_hits", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(cache.stats.hits),
     "Registrations served by the registration cache"},
    {"cache_misses", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(cache.stats.misses),
     "Registrations that created a region"},
    {"cache_evictions", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(cache.stats.evictions),
     "Cached regions destroyed to stay within limits"},
    {"cache_unheld", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(cache.stats.unheld),
     "Registrations made without holding their pages (RLIMIT_MEMLOCK, read-only memory)"},
    {"cache_held_bytes", MCA_BASE_PVAR_CLASS_SIZE, KNEMLIKE_FIELD(cache.stats.held_bytes),
     "Bytes the cached registrations hold pinned now"},
    {"attach_hits", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(attachments.stats.hits),
     "Copies through a peer's registration mapped before"},
    {"attaches", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(attachments.stats.attaches),
     "Peers' registrations mapped here"},
    {"attach_evictions", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(attachments.stats.evictions),
     "Mappings of peers' registrations undone to stay within smsc_knemlike_attach_max"},
    {"attach_refused", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(attachments.stats.refused),
     "Peers' registrations the module would not map (not holding their pages): copied by "
     "ioctl"},
    {"map_hits", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(pvar_map_hits),
     "Peers' buffers mapped through a mapping made before"},
    {"maps", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(pvar_maps),
     "Mappings of peers' exported memory made here"},
    {"map_evictions", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(pvar_map_evictions),
     "Unused mappings of peers' memory undone to stay within smsc_knemlike_map_max_mb"},
    {"map_failures", MCA_BASE_PVAR_CLASS_COUNTER, KNEMLIKE_FIELD(pvar_map_failures),
     "Peers' buffers that could not be mapped"},
};

/* A row of knemlike_params: its default, then the variable. */
static void knemlike_param_register(const struct knemlike_param *p)
{
    switch (p->type) {
    case MCA_BASE_VAR_TYPE_INT:
        *(int *) p->storage = (int) p->value;
        break;
    case MCA_BASE_VAR_TYPE_UNSIGNED_LONG:
        *(unsigned long *) p->storage = p->value;
        break;
    case MCA_BASE_VAR_TYPE_BOOL:
        *(bool *) p->storage = 0 != p->value;
        break;
    default:
        *(char **) p->storage = (char *) p->text;
        break;
    }
    (void) mca_base_component_var_register(&mca_smsc_knemlike_component.super.smsc_version,
                                           p->name, p->help, p->type, NULL, 0,
                                           MCA_BASE_VAR_FLAG_SETTABLE, p->level, p->scope,
                                           p->storage);
}

static int knemlike_component_register(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;

    mca_smsc_base_register_default_params(&c->super, SMSC_KNEMLIKE_DEFAULT_PRIORITY);
    for (size_t i = 0; i < KNEMLIKE_ROWS(knemlike_params); ++i) {
        knemlike_param_register(&knemlike_params[i]);
    }
    return OPAL_SUCCESS;
}

static int knemlike_component_open(void)
{
    OBJ_CONSTRUCT(&mca_smsc_knemlike_component.lock, opal_mutex_t);
    return OPAL_SUCCESS;
}

static void knemlike_close_device(void)
{
    if (0 <= mca_smsc_knemlike_component.fd) {
        close(mca_smsc_knemlike_component.fd); /* the module destroys what is left */
        mca_smsc_knemlike_component.fd = -1;
    }
}

static int knemlike_component_close(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    if (0 <= c->fd) {
        opal_output_verbose(MCA_BASE_VERBOSE_INFO, opal_smsc_base_framework.framework_output,
                            "smsc:knemlike: registration cache: %llu hits, %llu misses, "
                            "%llu evictions, %llu over the limit, %llu failures, %llu not "
                            "holding their pages",
                            (unsigned long long) c->cache.stats.hits,
                            (unsigned long long) c->cache.stats.misses,
                            (unsigned long long) c->cache.stats.evictions,
                            (unsigned long long) c->cache.stats.over_limit,
                            (unsigned long long) c->cache.stats.failures,
                            (unsigned long long) c->cache.stats.unheld);
        if (c->attach) {
            opal_output_verbose(MCA_BASE_VERBOSE_INFO,
                                opal_smsc_base_framework.framework_output,
                                "smsc:knemlike: attachments: %llu copies through one, %llu "
                                "made, %llu evicted, %llu refused",
                                (unsigned long long) c->attachments.stats.hits,
                                (unsigned long long) c->attachments.stats.attaches,
                                (unsigned long long) c->attachments.stats.evictions,
                                (unsigned long long) c->attachments.stats.refused);
        }
        if (c->exported) {
            opal_output_verbose(MCA_BASE_VERBOSE_INFO,
                                opal_smsc_base_framework.framework_output,
                                "smsc:knemlike: peers' memory mapped: %llu hits, %llu mappings "
                                "made, %llu evicted, %llu failed",
                                c->pvar_map_hits, c->pvar_maps, c->pvar_map_evictions,
                                c->pvar_map_failures);
        }
        mca_smsc_knemlike_cache_stop();
        mca_smsc_knemlike_export_destroy();
    }
    knemlike_close_device();
    OBJ_DESTRUCT(&c->lock);
    return OPAL_SUCCESS;
}

/* Did the user name this component in the smsc selection (e.g. --mca smsc knemlike)? */
static bool knemlike_explicitly_requested(void)
{
    const char **value = NULL;
    int index = mca_base_var_find("opal", "smsc", NULL, NULL);
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, NULL, NULL) ||
        NULL == value || NULL == *value || '^' == (*value)[0]) {
        return false;
    }
    return NULL != strstr(*value, "knemlike");
}

static int knemlike_decline(const char *topic, const char *detail)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                        "smsc:knemlike: not available: %s: %s", c->device, detail);
    if (knemlike_explicitly_requested()) {
        char host[256] = "?";
        gethostname(host, sizeof(host) - 1);
        opal_show_help("help-smsc-knemlike.txt", topic, true, host, c->device, detail);
    }
    knemlike_close_device();
    c->super.priority = -1;
    return OPAL_ERR_NOT_AVAILABLE;
}

/* Register a few bytes, copy them back through the device and compare: a permission or
 * device problem shows here, at selection, instead of at the first large message. */
static int knemlike_self_test(char *detail, size_t len)
{
    static const char probe[] = "knemlike self-test: single copy works";
    char got[sizeof(probe)] = {0};
    struct knemlike_segment src = {.addr = (uintptr_t) probe, .len = sizeof(probe)};
    struct knemlike_segment dst = {.addr = (uintptr_t) got, .len = sizeof(got)};
    struct knemlike_create create = {.segments = (uintptr_t) &src, .nr_segments = 1,
                                     .prot = KNEMLIKE_PROT_READ};
    int fd = mca_smsc_knemlike_component.fd, rc = 0;

    if (ioctl(fd, KNEMLIKE_IOC_CREATE, &create)) {
        snprintf(detail, len, "registering a test buffer failed: %s", strerror(errno));
        return -1;
    }
    struct knemlike_copy copy = {.cookie = create.cookie, .local_segments = (uintptr_t) &dst,
                                 .nr_local_segments = 1, .direction = KNEMLIKE_COPY_FROM_REGION};
    if (ioctl(fd, KNEMLIKE_IOC_COPY, &copy)) {
        snprintf(detail, len, "a test copy failed: %s", strerror(errno));
        rc = -1;
    } else if (0 != memcmp(probe, got, sizeof(probe))) {
        snprintf(detail, len, "a test copy returned wrong data");
        rc = -1;
    }
    struct knemlike_destroy destroy = {.cookie = create.cookie};
    (void) ioctl(fd, KNEMLIKE_IOC_DESTROY, &destroy);
    return rc;
}

static int knemlike_component_query(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    struct knemlike_info info;
    char detail[256];

    if (c->cache_max_entries < 0 || c->attach_max < 0) {
        /* A wrong value is the user's to fix, whether or not knemlike was asked for. */
        char value[32];
        bool entries = c->cache_max_entries < 0;
        snprintf(value, sizeof(value), "%d", entries ? c->cache_max_entries : c->attach_max);
        opal_show_help("help-smsc-knemlike.txt", "bad-param", true,
                       entries ? "smsc_knemlike_cache_max_entries" : "smsc_knemlike_attach_max",
                       value, entries ? "0 (no limit) or more" : "0 (never map) or more");
        c->super.priority = -1;
        return OPAL_ERR_BAD_PARAM;
    }
    c->fd = open(c->device, O_RDWR | O_CLOEXEC);
    if (c->fd < 0) {
        int err = errno;
        snprintf(detail, sizeof(detail), "%s", strerror(err));
        return knemlike_decline(ENOENT == err ? "no-device"
                                : (EACCES == err || EPERM == err) ? "no-permission"
                                                                  : "open-failed",
                                detail);
    }
    memset(&info, 0, sizeof(info));
    if (ioctl(c->fd, KNEMLIKE_IOC_GET_INFO, &info)) {
        snprintf(detail, sizeof(detail), "not a knemlike device (GET_INFO: %s)", strerror(errno));
        return knemlike_decline("abi-mismatch", detail);
    }
    /* ABI 3 added exports and kept ABI 2's ioctls as they were: a module of ABI 2 serves
     * copies and registrations, without CAN_MAP. */
    if (info.abi_version < 2 || KNEMLIKE_ABI_VERSION < info.abi_version) {
        snprintf(detail, sizeof(detail),
                 "the loaded module speaks ABI %u, this component was built for ABI %u (and "
                 "works with ABI 2, without mapping peers' memory)",
                 info.abi_version, KNEMLIKE_ABI_VERSION);
        return knemlike_decline("abi-mismatch", detail);
    }
    if (knemlike_self_test(detail, sizeof(detail))) {
        return knemlike_decline("self-test", detail);
    }
    c->hold = c->hold_pages && (info.features & KNEMLIKE_FEATURE_HOLD_PAGES);
    /* Under valgrind a mapping the kernel makes in an ioctl is one valgrind does not know
     * of: copies then go through the ioctl, which it is told about. */
    c->attach = c->attach_max > 0 && (info.features & KNEMLIKE_FEATURE_ATTACH)
                && !knemlike_under_valgrind();
    c->can_attach_exports = 3 <= info.abi_version && (info.features & KNEMLIKE_FEATURE_EXPORT)
                            && !knemlike_under_valgrind();
    c->cache_max_bytes = (uint64_t) c->cache_max_mb << 20;
    if (0 == c->cache_max_mb && c->hold) {
        struct rlimit lock;
        if (0 == getrlimit(RLIMIT_MEMLOCK, &lock) && RLIM_INFINITY != lock.rlim_cur) {
            c->cache_max_bytes = lock.rlim_cur;
        }
    }
    opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, opal_smsc_base_framework.framework_output,
                        "smsc:knemlike: %s works (ABI %u, up to %u segments); registrations "
                        "%s their pages, cache up to %llu bytes (0: no limit); peers' "
                        "registrations %s",
                        c->device, info.abi_version, info.max_segments,
                        c->hold ? "hold" : "do not hold",
                        (unsigned long long) c->cache_max_bytes,
                        c->attach ? "mapped here (copies are memcpy)" : "copied by ioctl");
    return OPAL_SUCCESS;
}

static mca_smsc_module_t *knemlike_component_enable(void)
{
    mca_smsc_knemlike_component_t *c = &mca_smsc_knemlike_component;
    if (c->super.priority < 0 || c->fd < 0) {
        return NULL;
    }
    mca_smsc_knemlike_cache_start();
    /* Before the modex's fence (Open MPI selects smsc before the PML), so that peers find
     * the export when they make their endpoints. (Enabled again after a finalize, with
     * MPI sessions, it starts over.) */
    mca_smsc_knemlike_module.features &= ~(uint64_t) MCA_SMSC_FEATURE_CAN_MAP;
    if (mca_smsc_knemlike_export_publish()) {
        mca_smsc_knemlike_module.features |= MCA_SMSC_FEATURE_CAN_MAP;
    }
    for (size_t i = 0; i < KNEMLIKE_ROWS(knemlike_counters); ++i) {
        const struct knemlike_counter *k = &knemlike_counters[i];

        (void) mca_base_component_pvar_register(
            &c->super.smsc_version, k->name, k->help, OPAL_INFO_LVL_4, k->pvar_class,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            k->value);
    }
    return &mca_smsc_knemlike_module;
}
