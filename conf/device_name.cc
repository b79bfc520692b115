#include "conf/device_name.h"

#include <algorithm>
#include <cctype>

namespace twinlane::conf {
namespace {

bool is_hex(std::string_view part, size_t width) {
    return part.size() == width && std::all_of(part.begin(), part.end(), [](char c) {
               return std::isxdigit(static_cast<unsigned char>(c));
           });
}

// [dddd:]bb:dd.f with f in 0-7.
bool is_pci_address(std::string_view head) {
    const size_t dot = head.rfind('.');
    if (dot == std::string_view::npos || dot + 2 != head.size()) return false;
    if (head[dot + 1] < '0' || head[dot + 1] > '7') return false;
    std::string_view rest = head.substr(0, dot);
    const size_t last_colon = rest.rfind(':');
    if (last_colon == std::string_view::npos || !is_hex(rest.substr(last_colon + 1), 2))
        return false;
    rest = rest.substr(0, last_colon);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return is_hex(rest, 2);
    return is_hex(rest.substr(colon + 1), 2) && is_hex(rest.substr(0, colon), 4);
}

}  // namespace

std::optional<DeviceName> parse_device(std::string_view text) {
    DeviceName device;
    device.text = std::string(text);
    device.head = std::string(text.substr(0, text.find(',')));
    if (device.head.starts_with("net_") && device.head.size() > 4) {
        device.kind = DeviceName::Kind::vdev;
        device.ethdev_name = device.head;
        return device;
    }
    if (!is_pci_address(device.head)) return std::nullopt;
    device.kind = DeviceName::Kind::pci;
    std::string pci = device.head;
    std::transform(pci.begin(), pci.end(), pci.begin(),
                   [](char c) { return static_cast<char>(std::tolower(c)); });
    if (std::count(pci.begin(), pci.end(), ':') == 1) pci = "0000:" + pci;
    device.ethdev_name = std::move(pci);
    return device;
}

std::vector<std::string> pcap_input_files(std::string_view device) {
    std::vector<std::string> files;
    if (!device.starts_with("net_pcap")) return files;
    size_t start = device.find(',');
    while (start != std::string_view::npos) {
        const size_t end = device.find(',', start + 1);
        const std::string_view arg = device.substr(start + 1, end - start - 1);
        if (arg.starts_with("rx_pcap=")) files.emplace_back(arg.substr(8));
        start = end;
    }
    return files;
}

}  // namespace twinlane::conf
