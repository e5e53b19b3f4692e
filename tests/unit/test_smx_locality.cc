// Unit tests of btl/smx's locality classification (opal/mca/btl/smx/btl_smx_locality.c)
// on the synthetic hwloc topologies of tests/topologies (see the README there).
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "../../opal/mca/btl/smx/btl_smx_locality.h"
#include "unit_topology.h"

namespace {

// One topology loaded from XML, and cpusets written as hwloc lists ("0", "0-1", "").
class Topology : public ::testing::Test {
protected:
    hwloc_topology_t topo = nullptr;

    void load(const char *name)
    {
        ASSERT_EQ(0, hwloc_topology_init(&topo));
        ASSERT_EQ(0, hwloc_topology_set_xml(topo, topology_path(name).c_str()))
            << "cannot read " << topology_path(name);
        ASSERT_EQ(0, hwloc_topology_load(topo));
    }
    void TearDown() override
    {
        if (topo != nullptr) {
            hwloc_topology_destroy(topo);
        }
    }
    enum smx_locality_class cls(const char *a, const char *b)
    {
        hwloc_bitmap_t sa = hwloc_bitmap_alloc(), sb = hwloc_bitmap_alloc();
        hwloc_bitmap_list_sscanf(sa, a);
        hwloc_bitmap_list_sscanf(sb, b);
        enum smx_locality_class c = smx_locality_class(topo, sa, sb);
        // The relation is symmetric: both ends of a pair must pick the same module class.
        EXPECT_EQ(c, smx_locality_class(topo, sb, sa)) << a << " vs " << b;
        hwloc_bitmap_free(sa);
        hwloc_bitmap_free(sb);
        return c;
    }
    std::string present(const char *mine)
    {
        int p[SMX_CLASS_COUNT];
        hwloc_bitmap_t s = hwloc_bitmap_alloc();
        hwloc_bitmap_list_sscanf(s, mine);
        smx_locality_classes_present(topo, s, p);
        hwloc_bitmap_free(s);
        std::string out;
        for (int c = 0; c < SMX_CLASS_COUNT; ++c) {
            if (p[c]) {
                out += std::string(out.empty() ? "" : ",") + smx_locality_class_name(c);
            }
        }
        return out;
    }
};

// A parameterized test's name: its row's.
template <typename Row> std::string row_name(const ::testing::TestParamInfo<Row> &info)
{
    return info.param.name;
}

// Each row: a topology of tests/topologies, two cpusets (hwloc lists; "" is not bound),
// the class both ends must pick, and why.
struct PairCase {
    const char *name;
    const char *topology;
    const char *a, *b;
    enum smx_locality_class want;
    const char *why;
};

// (gtest names a failing row by its name)
void PrintTo(const PairCase &c, std::ostream *os) { *os << c.name; }

const PairCase kPairs[] = {
    {"SmtSiblings", "two-sockets-smt.xml", "0", "1", SMX_CLASS_L2,
     "SMT siblings share a core and count as l2"},
    {"SmtSiblingsOfTheOtherSocket", "two-sockets-smt.xml", "6", "7", SMX_CLASS_L2,
     "SMT siblings share a core and count as l2"},
    {"CoresOfOneSocket", "two-sockets-smt.xml", "0", "2", SMX_CLASS_L3,
     "cores of one socket share the L3"},
    {"OtherThreadsOfOneSocket", "two-sockets-smt.xml", "1", "3", SMX_CLASS_L3,
     "cores of one socket share the L3"},
    {"OtherSocket", "two-sockets-smt.xml", "0", "4", SMX_CLASS_REMOTE,
     "the other socket and NUMA node is remote"},
    {"OtherSocketOtherThreads", "two-sockets-smt.xml", "3", "7", SMX_CLASS_REMOTE,
     "the other socket and NUMA node is remote"},
    {"SharedL2WithoutL3", "shared-l2.xml", "0", "1", SMX_CLASS_L2, "a shared L2, no L3"},
    {"OtherL2WithoutL3", "shared-l2.xml", "1", "2", SMX_CLASS_PACKAGE,
     "another L2 of the package, no L3: package"},
    {"NumaPerL3SameL3", "numa-per-l3.xml", "0", "1", SMX_CLASS_L3, "one L3"},
    {"NumaPerL3OtherL3", "numa-per-l3.xml", "1", "2", SMX_CLASS_PACKAGE,
     "another L3 of the same package is package, even across NUMA nodes"},
    {"NumaPerL3OtherPackage", "numa-per-l3.xml", "0", "4", SMX_CLASS_REMOTE,
     "another package"},
    {"TwoPackagesOneNumaSameL3", "two-packages-one-numa.xml", "0", "1", SMX_CLASS_L3,
     "one L3"},
    {"TwoPackagesOneNumaOtherPackage", "two-packages-one-numa.xml", "1", "2", SMX_CLASS_NUMA,
     "two packages behind one NUMA node are numa"},
    {"DevelopmentVm", "dev-vm-2core.xml", "0", "1", SMX_CLASS_L3,
     "the development VM pairs its cores through the L3"},
    {"UnboundAgainstBound", "two-sockets-smt.xml", "", "0", SMX_CLASS_REMOTE,
     "an empty cpuset means not bound: it may be scheduled on the other socket"},
    {"BoundToAllAgainstBound", "two-sockets-smt.xml", "0-7", "0", SMX_CLASS_REMOTE,
     "bound to every PU: anywhere"},
    {"BoundToASocketAgainstACoreInIt", "two-sockets-smt.xml", "0-3", "1", SMX_CLASS_L3,
     "bound to a whole socket: shares its L3 with a core in it, never an L2"},
    {"UnboundOnTheDevelopmentVm", "dev-vm-2core.xml", "", "", SMX_CLASS_L3,
     "unbound processes on the development VM share the L3"},
};

class PairClass : public Topology, public ::testing::WithParamInterface<PairCase> {};

TEST_P(PairClass, BothEndsPickTheClass)
{
    const PairCase &c = GetParam();
    load(c.topology);
    EXPECT_EQ(c.want, cls(c.a, c.b)) << c.why;
}

INSTANTIATE_TEST_SUITE_P(Topologies, PairClass, ::testing::ValuesIn(kPairs),
                         row_name<PairCase>);

// Each row: a topology, my cpuset, the classes my peers can be in (the classes the machine
// lacks merged into the next), and why.
struct PresentCase {
    const char *name;
    const char *topology;
    const char *mine;
    const char *want;
    const char *why;
};

// (gtest names a failing row by its name)
void PrintTo(const PresentCase &c, std::ostream *os) { *os << c.name; }

const PresentCase kPresent[] = {
    {"TwoSocketsSmt", "two-sockets-smt.xml", "0", "l2,l3,remote",
     "the L3 spans the package and each package is one NUMA node: no package, no numa"},
    {"SharedL2", "shared-l2.xml", "3", "l2,package", "no L3"},
    {"NumaPerL3", "numa-per-l3.xml", "0", "l2,l3,package,remote",
     "a peer bound to my own core is possible too (oversubscribed binding): l2"},
    {"TwoPackagesOneNuma", "two-packages-one-numa.xml", "0", "l2,l3,numa", ""},
    {"DevelopmentVmCore0", "dev-vm-2core.xml", "0", "l2,l3",
     "l2 only for a peer bound to the same core as mine"},
    {"DevelopmentVmCore1", "dev-vm-2core.xml", "1", "l2,l3",
     "l2 only for a peer bound to the same core as mine"},
    {"Unbound", "two-sockets-smt.xml", "", "remote",
     "an unbound process sees one class only: every peer is anywhere"},
};

class ClassesPresent : public Topology, public ::testing::WithParamInterface<PresentCase> {};

TEST_P(ClassesPresent, AreTheClassesAPeerCanBeIn)
{
    const PresentCase &c = GetParam();
    load(c.topology);
    EXPECT_EQ(c.want, present(c.mine)) << c.why;
}

INSTANTIATE_TEST_SUITE_P(Topologies, ClassesPresent, ::testing::ValuesIn(kPresent),
                         row_name<PresentCase>);

// Each row: a topology (a file of tests/topologies, or hwloc's synthetic description),
// what is asked of it and the bytes it must answer.
struct CacheCase {
    const char *name;
    const char *topology;
    bool synthetic;
    unsigned long long (*largest)(hwloc_topology_t);
    unsigned long long want;
};

// (gtest names a failing row by its name)
void PrintTo(const CacheCase &c, std::ostream *os) { *os << c.name; }

const CacheCase kCaches[] = {
    {"LargestL2OfTheDevelopmentVm", "dev-vm-2core.xml", false, smx_locality_largest_l2,
     4194304ull},
    {"TheLargestCacheIsTheLastLevel", "dev-vm-2core.xml", false, smx_locality_largest_cache,
     16ull << 20},
    {"WithoutAnL3TheLargestCacheIsTheL2", "shared-l2.xml", false, smx_locality_largest_cache,
     4ull << 20},
    {"L2OfAGivenSize", "pack:2 l2:2(size=1048576) core:1 pu:1", true, smx_locality_largest_l2,
     1ull << 20},
    {"NoL2", "pack:1 core:4 pu:2", true, smx_locality_largest_l2, 0ull},
};

class CacheSize : public Topology, public ::testing::WithParamInterface<CacheCase> {};

TEST_P(CacheSize, IsReadFromTheTopology)
{
    const CacheCase &c = GetParam();
    if (c.synthetic) {
        ASSERT_EQ(0, hwloc_topology_init(&topo));
        ASSERT_EQ(0, hwloc_topology_set_synthetic(topo, c.topology));
        ASSERT_EQ(0, hwloc_topology_load(topo));
    } else {
        load(c.topology);
    }
    EXPECT_EQ(c.want, c.largest(topo));
}

INSTANTIATE_TEST_SUITE_P(Topologies, CacheSize, ::testing::ValuesIn(kCaches),
                         row_name<CacheCase>);

TEST(LocalityClassName, NamesUsedInParameterNames)
{
    const struct {
        int cls;
        const char *name;
    } names[] = {
        {SMX_CLASS_L2, "l2"},         {SMX_CLASS_L3, "l3"},         {SMX_CLASS_PACKAGE, "package"},
        {SMX_CLASS_NUMA, "numa"},     {SMX_CLASS_REMOTE, "remote"}, {SMX_CLASS_COUNT, "unknown"},
    };
    for (const auto &n : names) {
        EXPECT_STREQ(n.name, smx_locality_class_name(n.cls)) << "class " << n.cls;
    }
}

} // namespace
