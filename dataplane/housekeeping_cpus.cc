#include "dataplane/housekeeping_cpus.h"

#include <pthread.h>
#include <rte_lcore.h>

#include <cstring>

namespace twinlane::dataplane {

cpu_set_t housekeeping_cpus(const cpu_set_t& process) {
    cpu_set_t lcores;
    CPU_ZERO(&lcores);
    unsigned lcore = 0;
    RTE_LCORE_FOREACH(lcore) {
        const rte_cpuset_t set = rte_lcore_cpuset(lcore);
        CPU_OR(&lcores, &lcores, &set);
    }
    cpu_set_t free;
    CPU_ZERO(&free);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &process) && !CPU_ISSET(cpu, &lcores)) CPU_SET(cpu, &free);
    if (CPU_COUNT(&free) == 0) return rte_lcore_cpuset(rte_get_main_lcore());
    return free;
}

bool move_calling_thread(const cpu_set_t& cpus, std::string& error) {
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
    if (rc == 0) return true;
    error = "cannot move the daemon's threads to CPUs " + cpu_list(cpus) + ": " + std::strerror(rc);
    return false;
}

void pin_to_main_lcore() {
    // pthread's call, not rte_thread_set_affinity: the main lcore's record in EAL is unchanged.
    const rte_cpuset_t set = rte_lcore_cpuset(rte_get_main_lcore());
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

std::string cpu_list(const cpu_set_t& cpus) {
    std::string list;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &cpus)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &cpus))
            ++last;
        if (!list.empty()) list += ',';
        list += std::to_string(cpu);
        if (last != cpu) list += '-' + std::to_string(last);
        cpu = last;
    }
    return list;
}

}  // namespace twinlane::dataplane
