/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx locality classes: what a pair of processes shares, from hwloc alone.
 *
 * This file depends on nothing but hwloc so that the classification can be unit-tested
 * on synthetic topologies (the XML files of tests/topologies) without MPI.
 */
#ifndef MCA_BTL_SMX_LOCALITY_H
#define MCA_BTL_SMX_LOCALITY_H

#include <hwloc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From the closest to the farthest pair. The order matters: a pair is given the first
 * class whose object contains both processes. */
enum smx_locality_class {
    SMX_CLASS_L2 = 0,  /* same core (SMT siblings) or a shared L2 */
    SMX_CLASS_L3,      /* a shared L3, separate L2 */
    SMX_CLASS_PACKAGE, /* same package, no shared cache */
    SMX_CLASS_NUMA,    /* same NUMA node, different packages */
    SMX_CLASS_REMOTE,  /* nothing but the machine: another NUMA node */
    SMX_CLASS_COUNT
};

/* Short names used in MCA parameter names (btl_smx_eager_limit_<name>) and messages. */
const char *smx_locality_class_name(int cls);

/*
 * The class of a pair bound to cpusets 'a' and 'b' on 'topology': the narrowest of core /
 * L2, L3, package, NUMA node that contains both cpusets whole. An unbound process (cpuset
 * of the whole machine) therefore lands in the class of the widest object, the class its
 * scheduler may place it in. An empty or NULL cpuset counts as the whole machine.
 */
enum smx_locality_class smx_locality_class(hwloc_topology_t topology, hwloc_const_cpuset_t a,
                                           hwloc_const_cpuset_t b);

/*
 * Sets present[c] to 1 for every class some peer of a process bound to 'mine' can fall
 * into on this machine (classes the machine lacks, e.g. NUMA when there is one NUMA node
 * per package, stay 0: they merge into the next wider class by construction). Returns the
 * number of classes present.
 */
int smx_locality_classes_present(hwloc_topology_t topology, hwloc_const_cpuset_t mine,
                                 int present[SMX_CLASS_COUNT]);

/* Bytes of the largest L2 cache in 'topology'; 0 if it lists none (or no size). */
unsigned long long smx_locality_largest_l2(hwloc_topology_t topology);
/* Bytes of the largest cache of any level in 'topology' (its last level); 0 if it lists
 * none. */
unsigned long long smx_locality_largest_cache(hwloc_topology_t topology);

#ifdef __cplusplus
}
#endif

#endif /* MCA_BTL_SMX_LOCALITY_H */
