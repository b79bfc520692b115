#include "dataplane/device_probe.h"

#include <pcap/pcap.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "conf/device_name.h"
#include "dataplane/port.h"

namespace twinlane::dataplane {

std::vector<std::string> eal_arguments(const conf::Policy& policy,
                                       const std::vector<std::string>& user) {
    std::vector<std::string> args = user;
    for (const conf::PortPolicy& port : policy.ports) {
        const std::optional<conf::DeviceName> device = conf::parse_device(port.device);
        if (!device || device->kind != conf::DeviceName::Kind::pci) continue;
        const bool given = std::any_of(user.begin(), user.end(), [&](const std::string& a) {
            return a.find(device->head) != std::string::npos;
        });
        if (given) continue;
        args.push_back("-a");
        args.push_back(device->text);
    }
    return args;
}

namespace {

// DPDK's pcap device hands a capture's bytes to the pipeline as Ethernet frames whatever the
// file's link type, so a `tcpdump -i any` capture (Linux cooked) would be classified as
// garbage. Refused up front with what to do instead; unreadable files and pipes are left to
// the PMD, which reports them.
bool check_pcap_input(const conf::PortPolicy& port, std::string& error) {
    for (const std::string& path : conf::pcap_input_files(port.device)) {
        // Regular files only: reading a FIFO's header here would take it from the PMD.
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        char errbuf[PCAP_ERRBUF_SIZE] = {};
        pcap_t* handle = pcap_open_offline(path.c_str(), errbuf);
        if (handle == nullptr) continue;
        const int link_type = pcap_datalink(handle);
        if (link_type == DLT_EN10MB) {
            // Said before the run, from a glance at the capture's start: frames cut at a snap
            // length, and a record libpcap cannot read (on a pcapng interface of another link
            // type, cut short), which never reaches the pipeline (the PMD skips it: rx_errors).
            constexpr int kRecordsLooked = 10'000;
            pcap_pkthdr* header = nullptr;
            const u_char* data = nullptr;
            int rc = 1;
            int read = 0;
            int cut = 0;
            while (read < kRecordsLooked && (rc = pcap_next_ex(handle, &header, &data)) == 1) {
                ++read;
                cut += header->caplen < header->len;
            }
            if (cut != 0)
                spdlog::warn(
                    "port '{}': rx_pcap '{}' cuts frames (a snap length): the port hands "
                    "over only their captured bytes, which the scheduler and "
                    "--pace-input count; --preload-input paces them at their recorded "
                    "lengths",
                    port.name, path);
            if (rc == PCAP_ERROR)
                spdlog::warn(
                    "port '{}': rx_pcap '{}': libpcap cannot read the record after "
                    "frame {} ({}): the port skips such records, counted in its "
                    "rx_errors, not received",
                    port.name, path, read, pcap_geterr(handle));
            pcap_close(handle);
            continue;
        }
        pcap_close(handle);
        const char* link_name = pcap_datalink_val_to_name(link_type);
        error = "port '" + port.name + "': rx_pcap '" + path + "' has link type " +
                (link_name ? link_name : "?") + " (" + std::to_string(link_type) +
                "); the pcap device reads only Ethernet captures (capture with tcpdump -i "
                "IFACE, not -i any; `twinlane replay` reads this file as it is)";
        return false;
    }
    return true;
}

// The DPDK port of a policy port: already probed (PCI, or a --vdev the user passed), else
// hot-plugged from the policy's vdev string.
}  // namespace

bool resolve_port(const conf::PortPolicy& port, uint16_t& id, std::string& error) {
    const std::optional<conf::DeviceName> device = conf::parse_device(port.device);
    if (!device) {  // the policy loader refuses these: a policy object built another way
        error = "port '" + port.name + "': '" + port.device + "' is not a device name";
        return false;
    }
    const std::string& name = device->ethdev_name;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) return true;
    if (device->kind == conf::DeviceName::Kind::vdev) {
        if (!check_pcap_input(port, error)) return false;
        const int rc = rte_dev_probe(port.device.c_str());
        if (rc != 0) {
            error = "port '" + port.name + "': cannot probe device '" + port.device +
                    "': " + rte_strerror(-rc);
            return false;
        }
    }
    if (find_port(name, id, error)) return true;
    error = "port '" + port.name + "': " + error;
    return false;
}

}  // namespace twinlane::dataplane
