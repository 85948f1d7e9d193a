// Where this process's cgroup v2 files are: its own cgroup's folder ("0::/path" in
// /proc/self/cgroup), then the root of the hierarchy it sees (where a container's
// limits usually are).
#pragma once

#include <fstream>
#include <string>
#include <vector>

namespace nytro::detail {

inline std::vector<std::string> cgroup_v2_dirs() {
    std::string own;
    std::ifstream file("/proc/self/cgroup");
    std::string line;
    while (std::getline(file, line))
        if (line.rfind("0::", 0) == 0) own = line.substr(3);
    return {"/sys/fs/cgroup" + own, "/sys/fs/cgroup"};
}

}  // namespace nytro::detail
