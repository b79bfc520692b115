// A port's `device` string, parsed once for both `twinlane check` and `twinlane run`: a PCI
// address or a DPDK virtual device, each optionally followed by ",devargs".
//
//   PCI   [dddd:]bb:dd.f     hex domain (4 digits, 0000 when left out), bus (2), device (2),
//                            function 0-7 (3 bits in PCI; 3b:00.8 is no PCI address)
//   vdev  net_<name>[,args]  e.g. net_null0, net_pcap0,rx_pcap=in.pcap, net_af_xdp0,iface=eth1
//
// Pure functions, no DPDK: the dataplane passes `eal_allow` (PCI) to the EAL, probes a vdev by
// `text`, and looks both up by `ethdev_name`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinlane::conf {

struct DeviceName {
    enum class Kind { pci, vdev };
    Kind kind = Kind::vdev;
    std::string text;  // as written, devargs included
    std::string head;  // before the first ',': the address or the vdev name
    // What identifies the device: a PCI address in one spelling (domain filled in, lowercase
    // hex), so 3b:00.0 and 0000:3B:00.0 are one device; a vdev name as written. DPDK names a
    // PCI ethdev by this full address and a vdev by its name.
    std::string ethdev_name;
};

// The parsed device, or nothing when `text` is neither a PCI address nor a vdev.
std::optional<DeviceName> parse_device(std::string_view text);

// The capture files a pcap vdev reads (its `rx_pcap=` arguments, one per RX queue, in order);
// none for any other device.
std::vector<std::string> pcap_input_files(std::string_view device);

}  // namespace twinlane::conf
