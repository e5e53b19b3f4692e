/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx calibration file: the text of a node's file of measured numbers, its key and
 * its parser (btl_smx_calibrate.c reads, measures and writes it at init).
 *
 * The file is an Open MPI parameter file: one 'name=value' per line, '#' comments, the
 * form contrib/smx-tune writes and both 'mpirun --tune' and openmpi-mca-params.conf read.
 * The key of the node it was measured on is in comment lines, so that every parameter
 * line stays an Open MPI parameter:
 *   # key cpu: AMD EPYC (family 25, model 17)
 *   # key topology: hwloc 8c1f0e2a93b7d4c5
 *   # key kernel: 6.1.0-56-amd64
 *   # key smsc: cma (usable: cma yes, knemlike no, xpmem no)
 *   # key btl_smx: 0.1.0 (calibration 1), Open MPI 5.0.7
 * A file whose key lines are not all those of this node is stale.
 *
 * This file depends on nothing but hwloc and libc so that it can be unit-tested
 * (tests/unit/test_smx_calfile.cc).
 */
#ifndef MCA_BTL_SMX_CALFILE_H
#define MCA_BTL_SMX_CALFILE_H

#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>

#include "btl_smx_locality.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parameters a calibration file may set, by index (bit i of a mask is value i). */
enum smx_calib_param {
    SMX_CALIB_COST = 0,                                   /* btl_smx_single_copy_cost */
    SMX_CALIB_EAGER = 1,                                  /* + class: btl_smx_eager_limit_<c> */
    SMX_CALIB_SINGLE = SMX_CALIB_EAGER + SMX_CLASS_COUNT, /* + class: _single_copy_min_<c> */
    SMX_CALIB_EAGER_BUSY = SMX_CALIB_SINGLE + SMX_CLASS_COUNT, /* btl_smx_eager_limit_busy */
    SMX_CALIB_SINGLE_BUSY,                                /* btl_smx_single_copy_min_busy */
    SMX_CALIB_EAGER_WINDOW,                               /* btl_smx_eager_limit_window */
    SMX_CALIB_WINDOW_MAX,                                 /* btl_smx_single_copy_window_max */
    SMX_CALIB_COUNT
};

/* The smallest eager limit a file may give: SMX_EAGER_LIMIT_MIN (btl_smx.h). */
#define SMX_CALIB_EAGER_MIN 128

/* The parts of the key, in the order the file gives them. */
enum smx_key_part {
    SMX_KEY_CPU = 0, /* /proc/cpuinfo's model name, family and model */
    SMX_KEY_TOPOLOGY, /* a digest of the hwloc topology */
    SMX_KEY_KERNEL,  /* uname's release */
    SMX_KEY_SMSC,    /* the smsc component selected, and which ones are usable here */
    SMX_KEY_BTL,     /* btl/smx's version and the calibration's, Open MPI's */
    SMX_KEY_COUNT
};
#define SMX_KEY_LEN 256

struct smx_calib_key {
    char part[SMX_KEY_COUNT][SMX_KEY_LEN];
};

/* What a file holds. */
struct smx_calib {
    uint32_t set; /* bit i: value[i] given */
    int32_t value[SMX_CALIB_COUNT];
    uint32_t key_set; /* bit p: key.part[p] given */
    struct smx_calib_key key;
};

/* The full parameter name of value i ("btl_smx_eager_limit_l3"); NULL if i is none. */
const char *smx_calib_name(int i, char *buf, size_t len);
/* The name of key part p ("cpu"). */
const char *smx_key_part_name(int p);

/* A size or count as btl/smx's integer parameters take it: digits with an optional k, m
 * or g suffix, at most INT_MAX. 0 and *value set, or -1. */
int smx_parse_count(const char *text, int *value);

/*
 * Parse a file's text (len bytes, no NUL needed). Returns 0, or the number of the first
 * line it cannot take, with why it cannot in 'why': a line that is neither a comment nor
 * 'name=value', a btl_smx parameter no calibration file may set, a value out of its
 * range. Parameters of other components (smsc=cma, written by contrib/smx-tune for
 * mpirun --tune) are left to Open MPI. A later line for the same name wins, as in Open
 * MPI's parameter files.
 */
int smx_calib_parse(const char *text, size_t len, struct smx_calib *out, char *why,
                    size_t why_len);

/* The first part of 'now' that 'file' lacks or gives otherwise; -1 if none: the file is
 * this node's. */
int smx_calib_key_mismatch(const struct smx_calib *file, const struct smx_calib_key *now);

/*
 * The text of a file for key 'k' with every value of 'value' (the cost in % of a memcpy,
 * the thresholds), 'note' (what was measured, one line) as a comment. Returns its length,
 * or -1 if it does not fit in len bytes.
 */
int smx_calib_render(char *buf, size_t len, const struct smx_calib_key *k,
                     const int32_t value[SMX_CALIB_COUNT], const char *note);

/* The CPU from the text of /proc/cpuinfo (its first processor): "AMD EPYC (family 25,
 * model 17)", or the ARM implementer and part where there is no family; "unknown" if
 * neither. */
void smx_calib_cpu_model(const char *cpuinfo, char *out, size_t len);

/* A digest of the topology's caches, cores, packages and NUMA nodes and which PUs each
 * covers (not memory sizes, nor I/O): equal for machines of one build. */
uint64_t smx_calib_topology_digest(hwloc_topology_t topology);

#ifdef __cplusplus
}
#endif

#endif /* MCA_BTL_SMX_CALFILE_H */
