// Unit tests of btl/smx's calibration file (opal/mca/btl/smx/btl_smx_calfile.c): what a file
// may say, what makes it corrupt and at which line, what makes it stale, and the key's parts
// from /proc/cpuinfo texts and the hwloc topologies of tests/topologies.
// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "../../opal/mca/btl/smx/btl_smx_calfile.h"
#include "unit_topology.h"

namespace {

struct Parsed {
    int line; // 0: taken
    std::string why;
    struct smx_calib c;
};

Parsed parse(const std::string &text)
{
    Parsed p;
    char why[256] = "";
    p.line = smx_calib_parse(text.data(), text.size(), &p.c, why, sizeof(why));
    p.why = why;
    return p;
}

struct smx_calib_key node_key()
{
    struct smx_calib_key k;
    const char *parts[SMX_KEY_COUNT] = {"AMD EPYC (family 25, model 17)", "hwloc 0123456789abcdef",
                                        "6.1.0-56-amd64",
                                        "cma (usable: cma yes, knemlike no, xpmem no)",
                                        "0.1.0 (calibration 1), Open MPI 5.0.7"};
    for (int p = 0; p < SMX_KEY_COUNT; ++p) {
        snprintf(k.part[p], SMX_KEY_LEN, "%s", parts[p]);
    }
    return k;
}

std::string key_lines(const struct smx_calib_key &k)
{
    std::string out;
    for (int p = 0; p < SMX_KEY_COUNT; ++p) {
        out += std::string("# key ") + smx_key_part_name(p) + ": " + k.part[p] + "\n";
    }
    return out;
}

int index_of(const char *name)
{
    char buf[64];
    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        if (std::string(name) == smx_calib_name(i, buf, sizeof(buf))) {
            return i;
        }
    }
    return -1;
}

// The value a one-line file gives name, or INT_MIN if the line is refused.
int value_of(const std::string &line)
{
    Parsed p = parse(line + "\n");
    int i = index_of(line.substr(0, line.find('=')).c_str());
    if (p.line != 0 || i < 0 || !(p.c.set & (1u << i))) {
        return INT_MIN;
    }
    return p.c.value[i];
}

TEST(CalibFile, WhatBtlSmxWritesReadsBackAsThisNodesFile)
{
    const struct smx_calib_key k = node_key();
    int32_t value[SMX_CALIB_COUNT];
    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        value[i] = 128 + 1000 * i;
    }
    value[SMX_CALIB_SINGLE + SMX_CLASS_L2] = 0;   // never
    value[SMX_CALIB_EAGER_BUSY] = 0;              // off
    char text[8192];
    int len = smx_calib_render(text, sizeof(text), &k, value, "measured: a note");
    ASSERT_GT(len, 0);
    Parsed p = parse(std::string(text, (size_t) len));
    ASSERT_EQ(0, p.line) << p.why;
    EXPECT_EQ(-1, smx_calib_key_mismatch(&p.c, &k));
    EXPECT_EQ((1u << SMX_CALIB_COUNT) - 1, p.c.set);
    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        EXPECT_EQ(value[i], p.c.value[i]) << i;
    }
    EXPECT_NE(nullptr, strstr(text, "btl_smx_single_copy_min_l2=never\n"));
    EXPECT_NE(nullptr, strstr(text, "btl_smx_eager_limit_busy=off\n"));
    EXPECT_NE(nullptr, strstr(text, "# measured: a note\n"));
    EXPECT_EQ(-1, smx_calib_render(text, 200, &k, value, "note")) << "a text that does not fit";
}

TEST(CalibFile, EveryParameterItMaySetHasItsOwnName)
{
    char buf[64];
    std::vector<std::string> names;
    for (int i = 0; i < SMX_CALIB_COUNT; ++i) {
        ASSERT_NE(nullptr, smx_calib_name(i, buf, sizeof(buf)));
        EXPECT_EQ(0, strncmp(buf, "btl_smx_", 8)) << buf;
        for (const std::string &n : names) {
            EXPECT_NE(n, buf);
        }
        names.push_back(buf);
    }
    EXPECT_EQ(nullptr, smx_calib_name(SMX_CALIB_COUNT, buf, sizeof(buf)));
    EXPECT_EQ("btl_smx_single_copy_cost", names[SMX_CALIB_COST]);
    EXPECT_EQ("btl_smx_eager_limit_l3", names[SMX_CALIB_EAGER + SMX_CLASS_L3]);
    EXPECT_EQ("btl_smx_single_copy_min_remote", names[SMX_CALIB_SINGLE + SMX_CLASS_REMOTE]);
    EXPECT_EQ("btl_smx_single_copy_window_max", names[SMX_CALIB_WINDOW_MAX]);
}

TEST(CalibFile, ValuesAsTheParametersTakeThem)
{
    EXPECT_EQ(8192, value_of("btl_smx_eager_limit_l3=8k"));
    EXPECT_EQ(1 << 20, value_of("btl_smx_single_copy_min_numa=1M"));
    EXPECT_EQ(0, value_of("btl_smx_single_copy_min_l2=never"));
    EXPECT_EQ(0, value_of("btl_smx_single_copy_min_l2=0"));
    EXPECT_EQ(0, value_of("btl_smx_eager_limit_busy=off"));
    EXPECT_EQ(0, value_of("btl_smx_single_copy_window_max=OFF"));
    EXPECT_EQ(142, value_of("btl_smx_single_copy_cost=142"));
    EXPECT_EQ(0, value_of("btl_smx_single_copy_cost=0"));
    EXPECT_EQ(128, value_of("btl_smx_eager_limit_remote=128"));
}

TEST(CalibFile, CommentsBlankLinesAndSpacesAroundALineAreNothing)
{
    Parsed p = parse("# a comment\n\n   \n\t# key cpu : not a key line (space before ':')\n"
                     "  btl_smx_eager_limit_l3=4096  \r\n#btl_smx_eager_limit_l2=1\n");
    ASSERT_EQ(0, p.line) << p.why;
    EXPECT_EQ(1u << (SMX_CALIB_EAGER + SMX_CLASS_L3), p.c.set);
    EXPECT_EQ(0u, p.c.key_set);
}

TEST(CalibFile, OtherComponentsParametersAreLeftToOpenMpi)
{
    // smx-tune writes smsc=<mechanism> for mpirun --tune
    Parsed p = parse("smsc=cma\nbtl=smx,self\nbtl_smx_single_copy_min_l3=65536\n");
    ASSERT_EQ(0, p.line) << p.why;
    EXPECT_EQ(1u << (SMX_CALIB_SINGLE + SMX_CLASS_L3), p.c.set);
}

TEST(CalibFile, ALaterLineForTheSameNameWins)
{
    EXPECT_EQ(2048, value_of("btl_smx_eager_limit_l3=1024\nbtl_smx_eager_limit_l3=2048"));
}

TEST(CalibFile, SmxTunesFileWithoutAKeyIsReadButStale)
{
    const struct smx_calib_key k = node_key();
    Parsed p = parse("# Open MPI MCA parameters for btl/smx, measured on this node by "
                     "contrib/smx-tune.\n#\n# class l3: CPUs 0 and 1, eager limit 34816\n"
                     "#   -> single copy from 64 KiB\nbtl_smx_single_copy_min_l3=65536\n"
                     "btl_smx_single_copy_window_max=off\nsmsc=cma\n");
    ASSERT_EQ(0, p.line) << p.why;
    EXPECT_EQ(SMX_KEY_CPU, smx_calib_key_mismatch(&p.c, &k));
}

TEST(CalibFileCorrupt, ALineInNeitherFormIsNamedByItsNumber)
{
    const char *bad[] = {"btl_smx_eager_limit_l3 = 4096", "garbage", "=5", "btl_smx_eager_limit_l3=",
                         "name=two words", "na-me=1", "--mca btl_smx_eager_limit_l3 4096"};
    for (const char *line : bad) {
        Parsed p = parse(std::string("# first\nbtl_smx_eager_limit_l2=4096\n") + line + "\n# last\n");
        EXPECT_EQ(3, p.line) << line;
        EXPECT_NE(std::string::npos, p.why.find("not a 'name=value' line")) << line << ": " << p.why;
    }
}

TEST(CalibFileCorrupt, AnSmxParameterNoFileMaySetIsNamed)
{
    Parsed p = parse("btl_smx_eager_limit_l3=4096\nbtl_smx_budget_kb=4096\n");
    EXPECT_EQ(2, p.line);
    EXPECT_NE(std::string::npos, p.why.find("btl_smx_budget_kb")) << p.why;
    EXPECT_EQ(1, parse("btl_smx_eager_limit_l9=4096\n").line) << "a class that is none";
}

TEST(CalibFileCorrupt, AValueOutOfItsRangeSaysWhatIsExpected)
{
    const char *bad[] = {"btl_smx_eager_limit_l3=127", "btl_smx_eager_limit_l3=0",
                         "btl_smx_eager_limit_l3=never", "btl_smx_single_copy_cost=-5",
                         "btl_smx_single_copy_cost=measure", "btl_smx_single_copy_min_l3=1.5",
                         "btl_smx_single_copy_min_l3=off", "btl_smx_single_copy_min_l3=4096x",
                         "btl_smx_single_copy_min_l3=99999999999", "btl_smx_single_copy_min_l3=4g",
                         "btl_smx_eager_limit_busy=64", "btl_smx_single_copy_window_max=never",
                         "btl_smx_single_copy_min_l3=+4096"};
    for (const char *line : bad) {
        Parsed p = parse(std::string(line) + "\n");
        EXPECT_EQ(1, p.line) << line;
        EXPECT_NE(std::string::npos, p.why.find("expected")) << line << ": " << p.why;
    }
    EXPECT_NE(std::string::npos, parse("btl_smx_eager_limit_l3=127\n").why.find("128 or more"));
}

TEST(CalibFileCorrupt, ALongLineOrANulCharacter)
{
    EXPECT_EQ(2, parse("# ok\n# " + std::string(2000, 'x') + "\n").line);
    EXPECT_EQ(1, parse(std::string("btl_smx_eager_limit_l3=4096\0junk\n", 33)).line);
}

TEST(CalibKey, EveryPartMustBeThisNodes)
{
    const struct smx_calib_key k = node_key();
    auto mismatch = [&k](const std::string &text) {
        const Parsed p = parse(text);
        return smx_calib_key_mismatch(&p.c, &k);
    };
    EXPECT_EQ(-1, mismatch(key_lines(k)));
    for (int p = 0; p < SMX_KEY_COUNT; ++p) {
        struct smx_calib_key other = k;
        snprintf(other.part[p], SMX_KEY_LEN, "%s", "something else");
        EXPECT_EQ(p, mismatch(key_lines(other))) << "changed " << p;
        std::string lines = key_lines(k), drop = std::string("# key ") + smx_key_part_name(p);
        size_t at = lines.find(drop);
        lines.erase(at, lines.find('\n', at) + 1 - at);
        EXPECT_EQ(p, mismatch(lines)) << "without " << p;
    }
}

TEST(CalibKey, UnknownKeyPartsAreComments)
{
    const struct smx_calib_key k = node_key();
    Parsed p = parse(key_lines(k) + "# key colour: blue\n");
    ASSERT_EQ(0, p.line);
    EXPECT_EQ(-1, smx_calib_key_mismatch(&p.c, &k));
}

TEST(CpuModel, X86FamilyAndModelOfTheFirstProcessor)
{
    char out[128];
    smx_calib_cpu_model("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
                        "model\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n\n"
                        "processor\t: 1\ncpu family\t: 6\nmodel\t\t: 85\n"
                        "model name\t: Another CPU\n\n",
                        out, sizeof(out));
    EXPECT_STREQ("AMD EPYC (family 25, model 17)", out);
}

TEST(CpuModel, ArmImplementerAndPart)
{
    char out[128];
    smx_calib_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n"
                        "CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n\n",
                        out, sizeof(out));
    EXPECT_STREQ("? (implementer 0x41, part 0xd0c)", out);
}

TEST(CpuModel, PowerNameAloneAndNothing)
{
    char out[128];
    smx_calib_cpu_model("processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\n\n", out,
                        sizeof(out));
    EXPECT_STREQ("POWER9 (raw), altivec supported", out);
    smx_calib_cpu_model("", out, sizeof(out));
    EXPECT_STREQ("unknown", out);
}

TEST(ParseCount, DigitsWithASuffixUpToIntMax)
{
    int v = -1;
    EXPECT_EQ(0, smx_parse_count("0", &v));
    EXPECT_EQ(0, v);
    EXPECT_EQ(0, smx_parse_count("64K", &v));
    EXPECT_EQ(65536, v);
    EXPECT_EQ(0, smx_parse_count("1g", &v));
    EXPECT_EQ(1 << 30, v);
    EXPECT_EQ(0, smx_parse_count("2147483647", &v));
    EXPECT_EQ(INT_MAX, v);
    const char *bad[] = {"", "-1", "+1", " 1", "2g", "2147483648", "1kb", "k",
                         "999999999999999999999"};
    for (const char *text : bad) {
        EXPECT_EQ(-1, smx_parse_count(text, &v)) << "'" << text << "'";
    }
}

class CalibTopology : public ::testing::Test {
protected:
    hwloc_topology_t load(const char *name)
    {
        hwloc_topology_t t = nullptr;
        EXPECT_EQ(0, hwloc_topology_init(&t));
        EXPECT_EQ(0, hwloc_topology_set_xml(t, topology_path(name).c_str())) << name;
        EXPECT_EQ(0, hwloc_topology_load(t));
        loaded.push_back(t);
        return t;
    }
    void TearDown() override
    {
        for (hwloc_topology_t t : loaded) {
            hwloc_topology_destroy(t);
        }
    }
    std::vector<hwloc_topology_t> loaded;
};

TEST_F(CalibTopology, OneMachineOneDigestAndEachOtherAnother)
{
    const char *names[] = {"dev-vm-2core.xml", "numa-per-l3.xml", "shared-l2.xml",
                           "two-packages-one-numa.xml", "two-sockets-smt.xml"};
    std::vector<uint64_t> digests;
    for (const char *name : names) {
        uint64_t d = smx_calib_topology_digest(load(name));
        EXPECT_EQ(d, smx_calib_topology_digest(load(name))) << name << " loaded again";
        for (uint64_t other : digests) {
            EXPECT_NE(other, d) << name;
        }
        digests.push_back(d);
    }
}

} // namespace
