#include "dataplane/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>

namespace twinlane::dataplane {

Eal::Eal(const std::vector<std::string>& args) {
    std::vector<std::string> owned;
    owned.reserve(args.size() + 1);
    owned.emplace_back("twinlane");
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(owned.size() + 1);
    for (auto& a : owned)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    CPU_ZERO(&process_cpus_);
    sched_getaffinity(0, sizeof(process_cpus_), &process_cpus_);
    int rc = rte_eal_init(static_cast<int>(owned.size()), argv.data());
    if (rc < 0) {
        error_ = std::string("EAL initialisation failed: ") + rte_strerror(rte_errno);
        return;
    }
    ok_ = true;
}

Eal::~Eal() {
    if (ok_) rte_eal_cleanup();
}

}  // namespace twinlane::dataplane
