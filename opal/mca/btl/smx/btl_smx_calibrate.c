/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx: the numbers measured on the node. Local rank 0 reads the node's calibration
 * file at init (btl_smx_calfile.h: the single-copy cost and the thresholds, keyed by the
 * CPU, the topology, the kernel, the single-copy mechanisms and btl/smx's version); where
 * there is none of this node's key, or the policy needs a cost the file lacks, it runs
 * the probe (what a copy through the smsc component costs against memcpy, out of cache)
 * and writes the file anew. What it found goes to its segment's header, where every other
 * local process reads it at its first add_procs: one reading or one measurement per node,
 * the same decisions everywhere. Values set as MCA parameters win over the file's; the
 * built-in defaults (btl_smx_params.c) serve where neither gives one.
 */
#include "opal_config.h"

#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"
#include "btl_smx_calfile.h"
#include "btl_smx_policy.h"
#include "btl_smx_types.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

_Static_assert(SMX_CALIB_EAGER_MIN == SMX_EAGER_LIMIT_MIN, "one smallest eager limit");
_Static_assert(SMX_CALIB_COUNT <= SMX_CALIB_SLOTS, "the segment header holds every value");

#ifndef SMX_VERSION
#define SMX_VERSION "in-tree" /* built inside an Open MPI tree: the key names its version */
#endif
/* The calibration's own version, in the key: raised whenever the probe or the meaning of a
 * file's values changes, so that files written before are stale. */
#define SMX_CALIB_VERSION 1
/* A larger file is no calibration file. */
#define SMX_CALIB_FILE_MAX (64 * 1024)

/* ------------------------------------------------------------------ the probe */

/* One copy of the probe, and how many of each kind (alternately, each on buffers of its
 * own). */
#define SMX_PROBE_COPY (1024 * 1024)
#define SMX_PROBE_COPIES 8
/* The pool's bounds: where the topology shows no cache, and where a cache is so large
 * that a pool larger than it would make the probe slow (faulting in every page of the
 * pool once is most of what the probe costs). */
#define SMX_PROBE_POOL_MIN (8 * 1024 * 1024)
#define SMX_PROBE_POOL_MAX (128 * 1024 * 1024)
#define SMX_PROBE_POOL_UNKNOWN (40 * 1024 * 1024)

struct smx_probe {
    double cost;                   /* single copy in memcpys; < 0: it could not copy */
    double single_gbs, memcpy_gbs; /* the median copy's rate, GB/s */
    size_t pool;                   /* bytes of buffers it went through */
    double ms;                     /* what the whole probe took */
};

/* The pool the copies go through: a quarter more than the largest cache, so that a buffer
 * a copy takes has left the caches since it was last touched (as a message's buffers
 * have, between one transfer and the next, in a real application). */
static size_t smx_probe_pool(void)
{
    uint64_t cache = NULL != opal_hwloc_topology ? smx_locality_largest_cache(opal_hwloc_topology)
                                                 : 0;
    uint64_t pool = 0 == cache ? SMX_PROBE_POOL_UNKNOWN : cache + cache / 4;

    pool = pool < SMX_PROBE_POOL_MIN ? SMX_PROBE_POOL_MIN
           : pool > SMX_PROBE_POOL_MAX ? SMX_PROBE_POOL_MAX : pool;
    return (size_t) (pool + 2 * SMX_PROBE_COPY - 1) / (2 * SMX_PROBE_COPY) * (2 * SMX_PROBE_COPY);
}

static int smx_by_time(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}

static uint64_t smx_median(uint64_t *t, int n)
{
    qsort(t, (size_t) n, sizeof(*t), smx_by_time);
    return (t[(n - 1) / 2] + t[n / 2]) / 2;
}

/*
 * What a transfer costs by single copy, in memcpys: SMX_PROBE_COPIES copies of 1 MiB
 * through the smsc component (an endpoint to myself) and as many by memcpy, alternately,
 * each from and to buffers of a pool larger than the caches, written once at the start
 * and taken in order, so that both the source and the destination of every copy come
 * from memory; the ratio of the medians. An in-cache copy would measure the mechanism's
 * own cost (CMA pins and maps every page) against a memcpy far faster than any transfer
 * of an application's data.
 */
static void smx_probe_run(struct smx_probe *pr)
{
    const uint64_t start = mca_btl_smx_now_ns();
    const size_t pool = smx_probe_pool(), pairs = pool / (2 * SMX_PROBE_COPY);
    uint64_t t_single[SMX_PROBE_COPIES], t_memcpy[SMX_PROBE_COPIES], single, copy;
    mca_smsc_endpoint_t *self = NULL;
    unsigned char *buf;
    void *reg = NULL;

    memset(pr, 0, sizeof(*pr));
    pr->cost = -1.0;
    pr->pool = pool;
    if (NULL == mca_smsc) {
        return;
    }
    buf = mmap(NULL, pool, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == buf) {
        return;
    }
    /* every page written once, in order (a copy into a page never touched would measure
     * the page fault) */
#if defined(MADV_POPULATE_WRITE)
    if (0 != madvise(buf, pool, MADV_POPULATE_WRITE))
#endif
    {
        memset(buf, 1, pool);
    }
    self = MCA_SMSC_CALL(get_endpoint, opal_proc_local_get());
    if (NULL == self) {
        goto out;
    }
    if (mca_smsc_base_has_feature(MCA_SMSC_FEATURE_REQUIRE_REGISTRATION)) {
        reg = MCA_SMSC_CALL(register_region, buf, pool);
        if (NULL == reg) {
            goto out;
        }
    }
    for (size_t i = 0; i < 2 * SMX_PROBE_COPIES; ++i) {
        unsigned char *from = buf + (i % pairs) * 2 * SMX_PROBE_COPY, *to = from + SMX_PROBE_COPY;
        const uint64_t t0 = mca_btl_smx_now_ns();

        if (0 == i % 2) {
            memcpy(to, from, SMX_PROBE_COPY);
            t_memcpy[i / 2] = mca_btl_smx_now_ns() - t0;
        } else if (OPAL_SUCCESS
                   == MCA_SMSC_CALL(copy_from, self, to, from, SMX_PROBE_COPY, reg)) {
            t_single[i / 2] = mca_btl_smx_now_ns() - t0;
        } else {
            goto out;
        }
    }
    single = smx_median(t_single, SMX_PROBE_COPIES);
    copy = smx_median(t_memcpy, SMX_PROBE_COPIES);
    pr->cost = (double) single / (double) (0 == copy ? 1 : copy);
    pr->single_gbs = (double) SMX_PROBE_COPY / (double) (0 == single ? 1 : single);
    pr->memcpy_gbs = (double) SMX_PROBE_COPY / (double) (0 == copy ? 1 : copy);
out:
    if (NULL != reg) {
        MCA_SMSC_CALL(deregister_region, reg);
    }
    if (NULL != self) {
        MCA_SMSC_CALL(return_endpoint, self);
    }
    munmap(buf, pool);
    pr->ms = (double) (mca_btl_smx_now_ns() - start) / 1e6;
}

/* ------------------------------------------------------------------ the key */

/* The smsc component Open MPI selected: the first of its framework's list, which it
 * sorted by priority and kept to those that can run. */
const char *mca_btl_smx_smsc_selected(void)
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
char mca_btl_smx_ptrace_scope(void)
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

/* Could cma copy here: the same user's processes may read each other's memory (Yama's
 * ptrace_scope at most 1, smsc/cma's test) and the system call is allowed (a container's
 * seccomp may refuse it). */
static bool smx_cma_usable(void)
{
    const char scope = mca_btl_smx_ptrace_scope();
    char byte = 1, got = 0;
    struct iovec local = {&got, 1}, remote = {&byte, 1};

    return ('0' == scope || '1' == scope)
           && 1 == process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

/* The first part of /proc/cpuinfo: the first processor's block is all the key needs. */
static void smx_cpu_now(char *out, size_t len)
{
    char text[16384];
    ssize_t got = -1;
    size_t n = 0;
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

    while (fd >= 0 && n < sizeof(text) - 1
           && (got = read(fd, text + n, sizeof(text) - 1 - n)) > 0) {
        n += (size_t) got;
    }
    if (fd >= 0) {
        close(fd);
    }
    text[n] = '\0';
    smx_calib_cpu_model(text, out, len);
}

static void smx_key_now(struct smx_calib_key *k)
{
    struct utsname u;

    smx_cpu_now(k->part[SMX_KEY_CPU], SMX_KEY_LEN);
    if (NULL != opal_hwloc_topology) {
        snprintf(k->part[SMX_KEY_TOPOLOGY], SMX_KEY_LEN, "hwloc %016llx",
                 (unsigned long long) smx_calib_topology_digest(opal_hwloc_topology));
    } else {
        snprintf(k->part[SMX_KEY_TOPOLOGY], SMX_KEY_LEN, "unknown");
    }
    snprintf(k->part[SMX_KEY_KERNEL], SMX_KEY_LEN, "%s", 0 == uname(&u) ? u.release : "unknown");
    snprintf(k->part[SMX_KEY_SMSC], SMX_KEY_LEN, "%s (usable: cma %s, knemlike %s, xpmem %s)",
             mca_btl_smx_smsc_selected(), smx_cma_usable() ? "yes" : "no",
             0 == access("/dev/knemlike", R_OK | W_OK) ? "yes" : "no",
             0 == access("/dev/xpmem", R_OK | W_OK) ? "yes" : "no");
    snprintf(k->part[SMX_KEY_BTL], SMX_KEY_LEN, "%s (calibration %d), Open MPI %s", SMX_VERSION,
             SMX_CALIB_VERSION, OPAL_VERSION);
}

/* ------------------------------------------------------------------ the file */

enum smx_file_state {
    SMX_FILE_OFF,        /* btl_smx_calibration_file none */
    SMX_FILE_CURRENT,    /* of this node's key: its values are used */
    SMX_FILE_MISSING,    /* to be written */
    SMX_FILE_STALE,      /* another key: to be written anew */
    SMX_FILE_CORRUPT,    /* said so once; left as it is */
    SMX_FILE_UNREADABLE, /* left as it is */
};

/* 'auto': the user's cache directory, ompi-smx/<host>.conf (one file per node where homes
 * are shared); NULL without a cache directory. */
static const char *smx_calib_auto(void)
{
    static char path[PATH_MAX];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char host[256] = "";

    if (0 != gethostname(host, sizeof(host) - 1) || '\0' == host[0]) {
        snprintf(host, sizeof(host), "localhost");
    }
    /* (the XDG base directory specification ignores a relative XDG_CACHE_HOME) */
    if (NULL != xdg && '/' == xdg[0]) {
        snprintf(path, sizeof(path), "%s/ompi-smx/%s.conf", xdg, host);
    } else if (NULL != home && '/' == home[0]) {
        snprintf(path, sizeof(path), "%s/.cache/ompi-smx/%s.conf", home, host);
    } else {
        return NULL;
    }
    return path;
}

const char *mca_btl_smx_calibration_path(void)
{
    const char *path = mca_btl_smx_component.calibration_file;

    if (NULL == path || '\0' == path[0] || 0 == strcmp(path, "none")) {
        return NULL;
    }
    return 0 == strcmp(path, "auto") ? smx_calib_auto() : path;
}

static enum smx_file_state smx_file_read(const char *path, const struct smx_calib_key *now,
                                         struct smx_calib *file, int *line, char *why,
                                         size_t why_len)
{
    struct stat st;
    char *text = NULL;
    ssize_t got = 0;
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), err = errno, p;

    *line = 0;
    if (fd < 0) {
        snprintf(why, why_len, "%s", strerror(err));
        return ENOENT == err || ENOTDIR == err ? SMX_FILE_MISSING : SMX_FILE_UNREADABLE;
    }
    if (0 != fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(why, why_len, "not a regular file");
        return SMX_FILE_UNREADABLE;
    }
    if (st.st_size > SMX_CALIB_FILE_MAX) {
        close(fd);
        snprintf(why, why_len, "larger than %d bytes", SMX_CALIB_FILE_MAX);
        return SMX_FILE_CORRUPT;
    }
    text = malloc(SMX_CALIB_FILE_MAX);
    while (NULL != text && n < SMX_CALIB_FILE_MAX
           && (got = read(fd, text + n, SMX_CALIB_FILE_MAX - n)) > 0) {
        n += (size_t) got;
    }
    err = NULL == text ? ENOMEM : got < 0 ? errno : 0;
    close(fd);
    if (0 != err) {
        free(text);
        snprintf(why, why_len, "%s", strerror(err));
        return SMX_FILE_UNREADABLE;
    }
    *line = smx_calib_parse(text, n, file, why, why_len);
    free(text);
    if (0 != *line) {
        return SMX_FILE_CORRUPT;
    }
    p = smx_calib_key_mismatch(file, now);
    if (p >= 0) {
        if (file->key_set & (1u << p)) {
            snprintf(why, why_len, "its key's %s is '%s', here '%s'", smx_key_part_name(p),
                     file->key.part[p], now->part[p]);
        } else {
            snprintf(why, why_len, "it has no '# key %s:' line", smx_key_part_name(p));
        }
        return SMX_FILE_STALE;
    }
    return SMX_FILE_CURRENT;
}

/* The directories above path that are missing, made for this user alone. */
static void smx_make_parents(const char *path)
{
    char dir[PATH_MAX];

    snprintf(dir, sizeof(dir), "%s", path);
    for (char *s = strchr(dir + 1, '/'); NULL != s; s = strchr(s + 1, '/')) {
        *s = '\0';
        (void) mkdir(dir, 0700); /* (one that exists, or cannot be made, fails below) */
        *s = '/';
    }
}

/* Write the text to a new file beside path and rename it there, so that a reader finds
 * the old file or the new one, never a part. */
static bool smx_file_write(const char *path, const char *text, size_t len, char *why,
                           size_t why_len)
{
    char tmp[PATH_MAX + 8];
    size_t done = 0;
    ssize_t w = 0;
    int fd, err = 0;

    smx_make_parents(path);
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    while (done < len && (w = write(fd, text + done, len - done)) > 0) {
        done += (size_t) w;
    }
    if (done < len) {
        err = w < 0 ? errno : ENOSPC;
    } else if (0 != fchmod(fd, 0644)) {
        err = errno;
    }
    if (0 != close(fd) && 0 == err) {
        err = errno;
    }
    if (0 == err && 0 != rename(tmp, path)) {
        err = errno;
    }
    if (0 != err) {
        unlink(tmp);
    }
out:
    snprintf(why, why_len, "%s", strerror(err));
    return 0 == err;
}

/* A new file: the key, the cost measured, the built-in thresholds. */
static bool smx_file_new(const char *path, const struct smx_calib_key *key,
                         const struct smx_probe *pr, const char *smsc, char *why, size_t why_len)
{
    int32_t value[SMX_CALIB_COUNT];
    char note[256], text[8192];
    int len;

    mca_btl_smx_params_defaults(value);
    value[SMX_CALIB_COST] = (int32_t) lround(pr->cost * 100.0);
    snprintf(note, sizeof(note), "single copy (%s) out of cache: %.2f memcpys (%.1f GB/s against "
             "%.1f GB/s; copies of 1 MiB through %zu MiB)", smsc, pr->cost, pr->single_gbs,
             pr->memcpy_gbs, pr->pool >> 20);
    len = smx_calib_render(text, sizeof(text), key, value, note);
    if (len < 0) {
        snprintf(why, why_len, "its text does not fit");
        return false;
    }
    return smx_file_write(path, text, (size_t) len, why, why_len);
}

/* ------------------------------------------------------------------ at init, at add_procs */

/* What became of the file, for btl_base_verbose info. */
static const char *smx_file_outcome(enum smx_file_state state)
{
    switch (state) {
    case SMX_FILE_CURRENT: return "read";
    case SMX_FILE_MISSING: return "missing";
    case SMX_FILE_STALE: return "stale";
    case SMX_FILE_CORRUPT: return "corrupt, left as it is";
    case SMX_FILE_UNREADABLE: return "unreadable, left as it is";
    default: return "none";
    }
}

void mca_btl_smx_calibrate_node(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_node_numbers *n = &((struct smx_segment_header *) c->segment)->node;
    const char *path = mca_btl_smx_calibration_path();
    enum smx_file_state state = SMX_FILE_OFF;
    struct smx_calib_key key;
    struct smx_calib file;
    struct smx_probe pr;
    char why[512] = "", err[256] = "", measured[192] = "", wrote[320] = "";
    int line = 0;

    if (0 != c->local_rank) {
        return;
    }
    n->cost = -1.0;
    n->cost_from = SMX_COST_NONE;
    n->from_file = 0;
    if (NULL != path) {
        smx_key_now(&key);
        state = smx_file_read(path, &key, &file, &line, why, sizeof(why));
    }
    if (SMX_FILE_CURRENT == state) {
        n->from_file = file.set;
        memcpy(n->value, file.value, sizeof(file.value));
        if (file.set & (1u << SMX_CALIB_COST)) {
            n->cost = (double) file.value[SMX_CALIB_COST] / 100.0;
            n->cost_from = SMX_COST_FILE;
        }
    } else if (SMX_FILE_CORRUPT == state) {
        char where[16] = "(the file)";

        if (line > 0) {
            snprintf(where, sizeof(where), "%d", line);
        }
        opal_show_help("help-btl-smx.txt", "calibration-corrupt", true,
                       opal_process_info.nodename, path, where, why);
    }
    /* the file's thresholds first: whether the policy needs a cost may depend on them */
    (void) mca_btl_smx_params_take(n->value, n->from_file);
    if (SMX_COST_NONE == n->cost_from && c->num_local > 1 && SMX_MEASURE == c->single_copy_cost
        && mca_btl_smx_policy_needs_cost()) {
        smx_probe_run(&pr);
        n->cost = pr.cost;
        n->cost_from = pr.cost < 0.0 ? SMX_COST_UNMEASURABLE : SMX_COST_MEASURED;
        snprintf(measured, sizeof(measured), "; single copy measured at %.2f memcpys out of "
                 "cache (%.1f GB/s against memcpy's %.1f; the probe took %.1f ms, a pool of "
                 "%zu MiB)", pr.cost, pr.single_gbs, pr.memcpy_gbs, pr.ms, pr.pool >> 20);
        if (pr.cost >= 0.0 && (SMX_FILE_MISSING == state || SMX_FILE_STALE == state)) {
            if (smx_file_new(path, &key, &pr, mca_btl_smx_smsc_selected(), err, sizeof(err))) {
                snprintf(wrote, sizeof(wrote), ", %s",
                         SMX_FILE_MISSING == state ? "written" : "rewritten");
            } else {
                snprintf(wrote, sizeof(wrote), ", not written (%s): the numbers serve this "
                         "job only", err);
            }
        }
    }
    opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT, "btl:smx: calibration: %s: %s%s%s%s%s%s",
                        NULL != path ? path : "btl_smx_calibration_file", smx_file_outcome(state),
                        '\0' != why[0] && SMX_FILE_CORRUPT != state ? " (" : "",
                        SMX_FILE_CORRUPT != state ? why : "",
                        '\0' != why[0] && SMX_FILE_CORRUPT != state ? ")" : "", measured, wrote);
    __atomic_store_n(&n->ready, 1, __ATOMIC_RELEASE);
}

void mca_btl_smx_policy_build_for_node(const struct smx_segment_header *h)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_node_numbers *n = NULL != h && 1 == __atomic_load_n(&h->node.ready,
                                                                         __ATOMIC_ACQUIRE)
                                           ? &h->node : NULL;
    const char *thresholds = NULL != n && 0 != mca_btl_smx_params_take(n->value, n->from_file)
                                 ? "file" : "defaults";
    struct smx_probe pr;

    if (!mca_btl_smx_policy_needs_cost()) {
        mca_btl_smx_policy_build(NAN, "not-needed", thresholds);
    } else if (SMX_MEASURE != c->single_copy_cost) {
        mca_btl_smx_policy_build((double) c->single_copy_cost / 100.0, "parameter", thresholds);
    } else if (NULL != n && SMX_COST_NONE != n->cost_from) {
        mca_btl_smx_policy_build(n->cost, SMX_COST_FILE == n->cost_from ? "file"
                                          : SMX_COST_MEASURED == n->cost_from ? "local-rank-0"
                                                                            : "unmeasurable",
                                 thresholds);
    } else {
        /* local rank 0 was not offered, or ran other parameters */
        smx_probe_run(&pr);
        mca_btl_smx_policy_build(pr.cost, pr.cost < 0.0 ? "unmeasurable" : "this-process",
                                 thresholds);
    }
}
