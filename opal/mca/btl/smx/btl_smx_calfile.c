/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx calibration file (see btl_smx_calfile.h). Pure hwloc and libc: no Open MPI
 * header, so tests/unit/test_smx_calfile.cc runs it on texts and XML topologies.
 */
#include "btl_smx_calfile.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A longer line is no line of a calibration file. */
#define SMX_CALIB_LINE_MAX 1024

static const char *const smx_key_names[SMX_KEY_COUNT] = {"cpu", "topology", "kernel", "smsc",
                                                         "btl_smx"};

/* What a value may be: its special name (0 stands for it), its least number. */
struct smx_value_rule {
    const char *name; /* "never", "off", or NULL */
    int least;
};

static struct smx_value_rule smx_rule(int i)
{
    if (SMX_CALIB_COST == i) {
        return (struct smx_value_rule){NULL, 0};
    }
    if (i >= SMX_CALIB_EAGER && i < SMX_CALIB_EAGER + SMX_CLASS_COUNT) {
        return (struct smx_value_rule){NULL, SMX_CALIB_EAGER_MIN};
    }
    if (i >= SMX_CALIB_SINGLE && i < SMX_CALIB_SINGLE + SMX_CLASS_COUNT) {
        return (struct smx_value_rule){"never", 0};
    }
    if (SMX_CALIB_EAGER_BUSY == i || SMX_CALIB_EAGER_WINDOW == i) {
        return (struct smx_value_rule){"off", SMX_CALIB_EAGER_MIN};
    }
    return (struct smx_value_rule){"off", 0};
}

const char *smx_calib_name(int i, char *buf, size_t len)
{
    static const char *const fixed[] = {"eager_limit_busy", "single_copy_min_busy",
                                        "eager_limit_window", "single_copy_window_max"};

    if (SMX_CALIB_COST == i) {
        snprintf(buf, len, "btl_smx_single_copy_cost");
    } else if (i >= SMX_CALIB_EAGER && i < SMX_CALIB_EAGER + SMX_CLASS_COUNT) {
        snprintf(buf, len, "btl_smx_eager_limit_%s", smx_locality_class_name(i - SMX_CALIB_EAGER));
    } else if (i >= SMX_CALIB_SINGLE && i < SMX_CALIB_SINGLE + SMX_CLASS_COUNT) {
        snprintf(buf, len, "btl_smx_single_copy_min_%s",
                 smx_locality_class_name(i - SMX_CALIB_SINGLE));
    } else if (i >= SMX_CALIB_EAGER_BUSY && i < SMX_CALIB_COUNT) {
        snprintf(buf, len, "btl_smx_%s", fixed[i - SMX_CALIB_EAGER_BUSY]);
    } else {
        return NULL;
    }
    return buf;
}

const char *smx_key_part_name(int p)
{
    return p >= 0 && p < SMX_KEY_COUNT ? smx_key_names[p] : "unknown";
}

int smx_parse_count(const char *text, int *value)
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

static int smx_index_of(const char *name)
{
    char buf[64];

    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        if (0 == strcmp(name, smx_calib_name(i, buf, sizeof(buf)))) {
            return i;
        }
    }
    return -1;
}

static int smx_fail(char *why, size_t why_len, int line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return line;
}

/* A value of parameter i: its name for 0, or a number of at least its least. */
static bool smx_value_of(int i, const char *text, int32_t *value)
{
    const struct smx_value_rule rule = smx_rule(i);
    int v;

    if (NULL != rule.name && 0 == strcasecmp(text, rule.name)) {
        *value = 0;
        return true;
    }
    if (0 != smx_parse_count(text, &v) || (v < rule.least && !(NULL != rule.name && 0 == v))) {
        return false;
    }
    *value = v;
    return true;
}

static const char *smx_expected(int i, char *buf, size_t len)
{
    const struct smx_value_rule rule = smx_rule(i);

    snprintf(buf, len, "%s%s%d or more%s", NULL != rule.name ? rule.name : "",
             NULL != rule.name ? ", or " : "", rule.least,
             SMX_CALIB_COST == i ? " (% of a memcpy)" : " (bytes, with k, m or g)");
    return buf;
}

/* "# key <part>: <value>" into out; other comments are comments. */
static void smx_key_line(const char *text, struct smx_calib *out)
{
    const char *p = text + 1, *colon;

    p += strspn(p, " \t");
    if (0 != strncmp(p, "key ", 4)) {
        return;
    }
    p += 4;
    colon = strchr(p, ':');
    if (NULL == colon) {
        return;
    }
    for (int k = 0; k < SMX_KEY_COUNT; ++k) {
        if (strlen(smx_key_names[k]) == (size_t) (colon - p)
            && 0 == strncmp(p, smx_key_names[k], (size_t) (colon - p))) {
            snprintf(out->key.part[k], SMX_KEY_LEN, "%s", colon + 1 + strspn(colon + 1, " \t"));
            out->key_set |= 1u << k;
        }
    }
}

/* One line, without its newline, spaces around it removed. */
static int smx_parse_line(char *text, int line, struct smx_calib *out, char *why, size_t why_len)
{
    char *eq, expected[64];
    int i;

    if ('\0' == text[0]) {
        return 0;
    }
    if ('#' == text[0]) {
        smx_key_line(text, out);
        return 0;
    }
    eq = strchr(text, '=');
    if (NULL == eq || eq == text || '\0' == eq[1]
        || strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
               != (size_t) (eq - text)
        || NULL != strpbrk(eq + 1, " \t")) {
        return smx_fail(why, why_len, line, "not a 'name=value' line nor a '#' comment");
    }
    *eq = '\0';
    if (0 != strncmp(text, "btl_smx_", 8)) {
        return 0; /* another component's, for Open MPI */
    }
    i = smx_index_of(text);
    if (i < 0) {
        return smx_fail(why, why_len, line, "%s is no parameter a calibration file sets (the "
                        "single-copy cost and the thresholds only)", text);
    }
    if (!smx_value_of(i, eq + 1, &out->value[i])) {
        return smx_fail(why, why_len, line, "%s=%s: expected %s", text, eq + 1,
                        smx_expected(i, expected, sizeof(expected)));
    }
    out->set |= 1u << i;
    return 0;
}

int smx_calib_parse(const char *text, size_t len, struct smx_calib *out, char *why,
                    size_t why_len)
{
    char buf[SMX_CALIB_LINE_MAX + 1];
    size_t at = 0;
    int line = 0, rc;

    memset(out, 0, sizeof(*out));
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (NULL != nl ? (size_t) (nl - text) : len) - at;
        char *s, *e;

        ++line;
        if (n > SMX_CALIB_LINE_MAX) {
            return smx_fail(why, why_len, line, "a line of more than %d characters",
                            SMX_CALIB_LINE_MAX);
        }
        memcpy(buf, text + at, n);
        buf[n] = '\0';
        at += n + 1;
        if (strlen(buf) != n) {
            return smx_fail(why, why_len, line, "a NUL character");
        }
        for (s = buf; isspace((unsigned char) *s); ++s) {
        }
        for (e = s + strlen(s); e > s && isspace((unsigned char) e[-1]); --e) {
        }
        *e = '\0';
        rc = smx_parse_line(s, line, out, why, why_len);
        if (0 != rc) {
            return rc;
        }
    }
    return 0;
}

int smx_calib_key_mismatch(const struct smx_calib *file, const struct smx_calib_key *now)
{
    for (int p = 0; p < SMX_KEY_COUNT; ++p) {
        if (!(file->key_set & (1u << p)) || 0 != strcmp(file->key.part[p], now->part[p])) {
            return p;
        }
    }
    return -1;
}

/* snprintf at buf + *n, keeping count; false once it no longer fits. */
static bool smx_put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (*n >= len) {
        return false;
    }
    va_start(ap, fmt);
    w = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t) w >= len - *n) {
        *n = len;
        return false;
    }
    *n += (size_t) w;
    return true;
}

int smx_calib_render(char *buf, size_t len, const struct smx_calib_key *k,
                     const int32_t value[SMX_CALIB_COUNT], const char *note)
{
    char name[64];
    size_t n = 0;

    smx_put(buf, len, &n,
            "# btl/smx calibration of this node: Open MPI parameters, one name=value a line.\n"
            "# Written by btl/smx at MPI_Init where it found no file of this node's key: the\n"
            "# single-copy cost (%% of a memcpy) as measured, the thresholds as built in. Edit\n"
            "# them, or let contrib/smx-tune write measured ones (smx-tune calibrate).\n"
            "# Parameters set for a job (--mca, OMPI_MCA_*, parameter files) win over these;\n"
            "# once a key line no longer matches the node, btl/smx measures again and\n"
            "# rewrites this file.\n");
    for (int p = 0; p < SMX_KEY_COUNT; ++p) {
        smx_put(buf, len, &n, "# key %s: %s\n", smx_key_names[p], k->part[p]);
    }
    smx_put(buf, len, &n, "#\n# %s\n", note);
    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        const struct smx_value_rule rule = smx_rule(i);

        if (NULL != rule.name && 0 == value[i]) {
            smx_put(buf, len, &n, "%s=%s\n", smx_calib_name(i, name, sizeof(name)), rule.name);
        } else {
            smx_put(buf, len, &n, "%s=%d\n", smx_calib_name(i, name, sizeof(name)),
                    (int) value[i]);
        }
    }
    return n < len ? (int) n : -1;
}

/* "key : value" of a line of /proc/cpuinfo, both trimmed; false if no colon. */
static bool smx_cpuinfo_field(const char *line, size_t n, char *key, char *value, size_t len)
{
    const char *colon = memchr(line, ':', n);
    size_t kn, vn;

    if (NULL == colon) {
        return false;
    }
    for (kn = (size_t) (colon - line); kn > 0 && isspace((unsigned char) line[kn - 1]); --kn) {
    }
    for (++colon; colon < line + n && isspace((unsigned char) *colon); ++colon) {
    }
    for (vn = (size_t) (line + n - colon); vn > 0 && isspace((unsigned char) colon[vn - 1]); --vn) {
    }
    snprintf(key, len, "%.*s", (int) kn, line);
    snprintf(value, len, "%.*s", (int) vn, colon);
    return true;
}

void smx_calib_cpu_model(const char *cpuinfo, char *out, size_t len)
{
    /* model name, cpu (POWER), cpu family, model, CPU implementer, CPU part */
    static const char *const wanted[] = {"model name", "cpu", "cpu family", "model",
                                         "CPU implementer", "CPU part"};
    enum { NAME, CPU, FAMILY, MODEL, IMPLEMENTER, PART, FIELDS };
    char got[FIELDS][96] = {{0}}, key[96], value[96];
    const char *p = cpuinfo;
    bool seen = false;

    while (NULL != p && '\0' != *p) {
        const char *nl = strchr(p, '\n');
        size_t n = NULL != nl ? (size_t) (nl - p) : strlen(p);

        if (smx_cpuinfo_field(p, n, key, value, sizeof(key))) {
            seen = true;
            for (int f = 0; f < FIELDS; ++f) {
                if ('\0' == got[f][0] && 0 == strcmp(key, wanted[f])) {
                    snprintf(got[f], sizeof(got[f]), "%s", value);
                }
            }
        } else if (seen && 0 == n) {
            break; /* the first processor's block ends */
        }
        p = NULL != nl ? nl + 1 : NULL;
    }
    const char *name = '\0' != got[NAME][0] ? got[NAME] : got[CPU];
    if ('\0' != got[FAMILY][0]) {
        snprintf(out, len, "%s (family %s, model %s)", '\0' != name[0] ? name : "?",
                 got[FAMILY], '\0' != got[MODEL][0] ? got[MODEL] : "?");
    } else if ('\0' != got[IMPLEMENTER][0]) {
        snprintf(out, len, "%s (implementer %s, part %s)", '\0' != name[0] ? name : "?",
                 got[IMPLEMENTER], '\0' != got[PART][0] ? got[PART] : "?");
    } else {
        snprintf(out, len, "%s", '\0' != name[0] ? name : "unknown");
    }
}

/* FNV-1a, 64 bits. */
static uint64_t smx_fnv(uint64_t h, uint64_t v)
{
    for (int b = 0; b < 8; ++b, v >>= 8) {
        h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

static uint64_t smx_digest_obj(uint64_t h, hwloc_obj_t obj)
{
    hwloc_const_cpuset_t set = NULL != obj->complete_cpuset ? obj->complete_cpuset : obj->cpuset;
    int pu;

    h = smx_fnv(h, (uint64_t) obj->type);
    h = smx_fnv(h, (uint64_t) obj->os_index);
    if (hwloc_obj_type_is_cache(obj->type) && NULL != obj->attr) {
        h = smx_fnv(h, obj->attr->cache.size);
        h = smx_fnv(h, (uint64_t) obj->attr->cache.depth);
        h = smx_fnv(h, (uint64_t) obj->attr->cache.linesize);
        h = smx_fnv(h, (uint64_t) (int64_t) obj->attr->cache.associativity);
        h = smx_fnv(h, (uint64_t) obj->attr->cache.type);
    }
    if (NULL != set) {
        hwloc_bitmap_foreach_begin(pu, set) {
            h = smx_fnv(h, (uint64_t) pu);
        }
        hwloc_bitmap_foreach_end();
    }
    return h;
}

uint64_t smx_calib_topology_digest(hwloc_topology_t topology)
{
    const int depth = hwloc_topology_get_depth(topology);
    uint64_t h = 0xcbf29ce484222325ull;
    hwloc_obj_t obj = NULL;

    for (int d = 0; d < depth; ++d) {
        const int n = (int) hwloc_get_nbobjs_by_depth(topology, d);

        h = smx_fnv(h, (uint64_t) d);
        for (int i = 0; i < n; ++i) {
            h = smx_digest_obj(h, hwloc_get_obj_by_depth(topology, d, i));
        }
    }
    while (NULL != (obj = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, obj))) {
        h = smx_digest_obj(h, obj);
    }
    return h;
}
