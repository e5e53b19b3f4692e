/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx locality classification (see btl_smx_locality.h). Pure hwloc: no Open MPI
 * header, so tests/unit/test_smx_locality.cc runs it on hwloc XML topologies.
 */
#include "btl_smx_locality.h"

#include <stddef.h>

static const char *const smx_class_names[SMX_CLASS_COUNT] = {"l2", "l3", "package", "numa",
                                                              "remote"};

const char *smx_locality_class_name(int cls)
{
    return (cls >= 0 && cls < SMX_CLASS_COUNT) ? smx_class_names[cls] : "unknown";
}

/* Is 'set' inside the cpuset of one object of 'type'? Objects of a type are disjoint, so
 * one containing object is enough. */
static int smx_inside_one(hwloc_topology_t topology, hwloc_obj_type_t type,
                          hwloc_const_cpuset_t set)
{
    hwloc_obj_t obj = NULL;

    while (NULL != (obj = hwloc_get_next_obj_by_type(topology, type, obj))) {
        if (NULL != obj->cpuset && hwloc_bitmap_isincluded(set, obj->cpuset)) {
            return 1;
        }
    }
    return 0;
}

enum smx_locality_class smx_locality_class(hwloc_topology_t topology, hwloc_const_cpuset_t a,
                                           hwloc_const_cpuset_t b)
{
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topology);
    hwloc_bitmap_t both = hwloc_bitmap_alloc();
    enum smx_locality_class cls = SMX_CLASS_REMOTE;

    if (NULL == both) {
        return SMX_CLASS_REMOTE; /* the widest class is always a safe answer */
    }
    /* Unknown or unbound: may run anywhere on the machine. */
    hwloc_bitmap_or(both, (NULL == a || hwloc_bitmap_iszero(a)) ? all : a,
                    (NULL == b || hwloc_bitmap_iszero(b)) ? all : b);

    /* SMT siblings share every cache of their core, so a core counts as a shared L2 even
     * on machines whose topology lists no L2. */
    if (smx_inside_one(topology, HWLOC_OBJ_CORE, both)
        || smx_inside_one(topology, HWLOC_OBJ_L2CACHE, both)) {
        cls = SMX_CLASS_L2;
    } else if (smx_inside_one(topology, HWLOC_OBJ_L3CACHE, both)) {
        cls = SMX_CLASS_L3;
    } else if (smx_inside_one(topology, HWLOC_OBJ_PACKAGE, both)) {
        cls = SMX_CLASS_PACKAGE;
    } else if (smx_inside_one(topology, HWLOC_OBJ_NUMANODE, both)) {
        cls = SMX_CLASS_NUMA;
    }
    hwloc_bitmap_free(both);
    return cls;
}

int smx_locality_classes_present(hwloc_topology_t topology, hwloc_const_cpuset_t mine,
                                 int present[SMX_CLASS_COUNT])
{
    hwloc_bitmap_t pu_set = hwloc_bitmap_alloc();
    hwloc_obj_t pu = NULL;
    int count = 0;

    for (int c = 0; c < SMX_CLASS_COUNT; ++c) {
        present[c] = 0;
    }
    if (NULL == pu_set) {
        present[SMX_CLASS_REMOTE] = 1;
        return 1;
    }
    /* A peer's class is that of the farthest PU of its cpuset (objects nest), so trying
     * every single PU finds every class a peer can have, unbound peers included. */
    while (NULL != (pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu))) {
        hwloc_bitmap_only(pu_set, pu->os_index);
        present[smx_locality_class(topology, mine, pu_set)] = 1;
    }
    hwloc_bitmap_free(pu_set);
    for (int c = 0; c < SMX_CLASS_COUNT; ++c) {
        count += present[c];
    }
    if (0 == count) { /* a topology without PUs: never leave the caller with no class */
        present[SMX_CLASS_REMOTE] = 1;
        count = 1;
    }
    return count;
}

static unsigned long long smx_largest_cache_of(hwloc_topology_t topology, hwloc_obj_type_t type)
{
    unsigned long long largest = 0;
    hwloc_obj_t obj = NULL;

    while (NULL != (obj = hwloc_get_next_obj_by_type(topology, type, obj))) {
        if (NULL != obj->attr && obj->attr->cache.size > largest) {
            largest = obj->attr->cache.size;
        }
    }
    return largest;
}

unsigned long long smx_locality_largest_l2(hwloc_topology_t topology)
{
    return smx_largest_cache_of(topology, HWLOC_OBJ_L2CACHE);
}

unsigned long long smx_locality_largest_cache(hwloc_topology_t topology)
{
    unsigned long long largest = 0, size;

    for (int t = HWLOC_OBJ_L1CACHE; t <= HWLOC_OBJ_L5CACHE; ++t) {
        size = smx_largest_cache_of(topology, (hwloc_obj_type_t) t);
        largest = size > largest ? size : largest;
    }
    return largest;
}
