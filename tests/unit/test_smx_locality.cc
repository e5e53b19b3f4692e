// Unit tests of btl/smx's locality classification (opal/mca/btl/smx/btl_smx_locality.c)
// on the synthetic hwloc topologies of tests/topologies (see the README there).
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

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

TEST_F(Topology, SmtSiblingsShareACoreAndCountAsL2)
{
    load("two-sockets-smt.xml");
    EXPECT_EQ(SMX_CLASS_L2, cls("0", "1"));
    EXPECT_EQ(SMX_CLASS_L2, cls("6", "7"));
}

TEST_F(Topology, CoresOfOneSocketShareTheL3)
{
    load("two-sockets-smt.xml");
    EXPECT_EQ(SMX_CLASS_L3, cls("0", "2"));
    EXPECT_EQ(SMX_CLASS_L3, cls("1", "3"));
}

TEST_F(Topology, OtherSocketAndNumaNodeIsRemote)
{
    load("two-sockets-smt.xml");
    EXPECT_EQ(SMX_CLASS_REMOTE, cls("0", "4"));
    EXPECT_EQ(SMX_CLASS_REMOTE, cls("3", "7"));
}

TEST_F(Topology, ClassesTheMachineLacksAreMerged)
{
    load("two-sockets-smt.xml");
    // The L3 spans the package and each package is one NUMA node: no "package", no "numa".
    EXPECT_EQ("l2,l3,remote", present("0"));
}

TEST_F(Topology, ASharedL2WithoutL3)
{
    load("shared-l2.xml");
    EXPECT_EQ(SMX_CLASS_L2, cls("0", "1"));
    EXPECT_EQ(SMX_CLASS_PACKAGE, cls("1", "2"));
    EXPECT_EQ("l2,package", present("3"));
}

TEST_F(Topology, OtherL3OfTheSamePackageIsPackageEvenAcrossNumaNodes)
{
    load("numa-per-l3.xml");
    EXPECT_EQ(SMX_CLASS_L3, cls("0", "1"));
    EXPECT_EQ(SMX_CLASS_PACKAGE, cls("1", "2"));
    EXPECT_EQ(SMX_CLASS_REMOTE, cls("0", "4"));
    // A peer bound to my own core is possible too (oversubscribed binding): "l2".
    EXPECT_EQ("l2,l3,package,remote", present("0"));
}

TEST_F(Topology, TwoPackagesBehindOneNumaNodeAreNuma)
{
    load("two-packages-one-numa.xml");
    EXPECT_EQ(SMX_CLASS_L3, cls("0", "1"));
    EXPECT_EQ(SMX_CLASS_NUMA, cls("1", "2"));
    EXPECT_EQ("l2,l3,numa", present("0"));
}

TEST_F(Topology, TheDevelopmentVmPairsCoresThroughTheL3)
{
    load("dev-vm-2core.xml");
    EXPECT_EQ(SMX_CLASS_L3, cls("0", "1"));
    // "l2" only for a peer bound to the same core as mine.
    EXPECT_EQ("l2,l3", present("0"));
    EXPECT_EQ("l2,l3", present("1"));
}

TEST_F(Topology, AnUnboundProcessTakesTheWidestClassItMayRunIn)
{
    load("two-sockets-smt.xml");
    // An empty cpuset means "not bound": it may be scheduled on the other socket.
    EXPECT_EQ(SMX_CLASS_REMOTE, cls("", "0"));
    EXPECT_EQ(SMX_CLASS_REMOTE, cls("0-7", "0"));
    // Bound to a whole socket: shares that socket's L3 with a core in it, never an L2.
    EXPECT_EQ(SMX_CLASS_L3, cls("0-3", "1"));
    // An unbound process sees one class only: every peer is "anywhere".
    EXPECT_EQ("remote", present(""));
}

TEST_F(Topology, UnboundProcessesOnTheDevelopmentVmShareTheL3)
{
    load("dev-vm-2core.xml");
    EXPECT_EQ(SMX_CLASS_L3, cls("", ""));
}

TEST_F(Topology, LargestL2FromTheTopology)
{
    load("dev-vm-2core.xml");
    EXPECT_EQ(4194304ull, smx_locality_largest_l2(topo));
}

TEST_F(Topology, TheLargestCacheIsTheLastLevel)
{
    load("dev-vm-2core.xml");
    EXPECT_EQ(16ull << 20, smx_locality_largest_cache(topo));
}

TEST_F(Topology, WithoutAnL3TheLargestCacheIsTheL2)
{
    load("shared-l2.xml");
    EXPECT_EQ(4ull << 20, smx_locality_largest_cache(topo));
}

// Synthetic topologies: L2s of a given size, and none at all.
TEST(LocalityL2, SizeGivenAndNone)
{
    hwloc_topology_t t;

    ASSERT_EQ(0, hwloc_topology_init(&t));
    ASSERT_EQ(0, hwloc_topology_set_synthetic(t, "pack:2 l2:2(size=1048576) core:1 pu:1"));
    ASSERT_EQ(0, hwloc_topology_load(t));
    EXPECT_EQ(1ull << 20, smx_locality_largest_l2(t));
    hwloc_topology_destroy(t);

    ASSERT_EQ(0, hwloc_topology_init(&t));
    ASSERT_EQ(0, hwloc_topology_set_synthetic(t, "pack:1 core:4 pu:2"));
    ASSERT_EQ(0, hwloc_topology_load(t));
    EXPECT_EQ(0ull, smx_locality_largest_l2(t));
    hwloc_topology_destroy(t);
}

TEST(LocalityClassName, NamesUsedInParameterNames)
{
    EXPECT_STREQ("l2", smx_locality_class_name(SMX_CLASS_L2));
    EXPECT_STREQ("l3", smx_locality_class_name(SMX_CLASS_L3));
    EXPECT_STREQ("package", smx_locality_class_name(SMX_CLASS_PACKAGE));
    EXPECT_STREQ("numa", smx_locality_class_name(SMX_CLASS_NUMA));
    EXPECT_STREQ("remote", smx_locality_class_name(SMX_CLASS_REMOTE));
    EXPECT_STREQ("unknown", smx_locality_class_name(SMX_CLASS_COUNT));
}

} // namespace
