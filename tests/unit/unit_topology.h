// What the unit tests that load the hwloc XML topologies of tests/topologies share.
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SMX_UNIT_TOPOLOGY_H
#define SMX_UNIT_TOPOLOGY_H

#include <cstdlib>
#include <string>

// The path of a topology of tests/topologies: under $SMX_TOP, else beside this file.
inline std::string topology_path(const char *name)
{
    const char *top = std::getenv("SMX_TOP");
    std::string dir;
    if (top != nullptr && *top != '\0') {
        dir = std::string(top) + "/tests/topologies";
    } else {
        std::string self(__FILE__);
        dir = self.substr(0, self.rfind('/')) + "/../topologies";
    }
    return dir + "/" + name;
}

#endif
