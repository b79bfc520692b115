// One parser of port devices for `twinlane check` and `twinlane run` (conf/device_name.h): a
// device the policy accepts is one the dataplane can name, and the other way round.
#include "conf/device_name.h"

#include <gtest/gtest.h>

#include "conf/load_policy.h"

namespace twinlane::conf {
namespace {

TEST(DeviceName, PciAddressesInBothSpellings) {
    auto short_form = parse_device("3b:00.0");
    ASSERT_TRUE(short_form);
    EXPECT_EQ(short_form->kind, DeviceName::Kind::pci);
    EXPECT_EQ(short_form->ethdev_name, "0000:3b:00.0");
    auto long_form = parse_device("0000:3B:00.7");
    ASSERT_TRUE(long_form);
    EXPECT_EQ(long_form->ethdev_name, "0000:3b:00.7");
    EXPECT_EQ(long_form->head, "0000:3B:00.7");
}

TEST(DeviceName, PciFunctionIsThreeBits) {
    // PCI functions are 0-7: 3b:00.8 is neither a PCI address nor a vdev, for check and run.
    EXPECT_FALSE(parse_device("3b:00.8"));
    EXPECT_FALSE(parse_device("0000:3b:00.f"));
    EXPECT_FALSE(parse_device("3b:00.10"));
}

TEST(DeviceName, PciWithDevargs) {
    auto device = parse_device("0000:17:00.1,txq_inline_max=128");
    ASSERT_TRUE(device);
    EXPECT_EQ(device->kind, DeviceName::Kind::pci);
    EXPECT_EQ(device->ethdev_name, "0000:17:00.1");
    EXPECT_EQ(device->text, "0000:17:00.1,txq_inline_max=128");
}

TEST(DeviceName, Vdevs) {
    auto pcap = parse_device("net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap");
    ASSERT_TRUE(pcap);
    EXPECT_EQ(pcap->kind, DeviceName::Kind::vdev);
    EXPECT_EQ(pcap->ethdev_name, "net_pcap0");
    EXPECT_FALSE(parse_device("net_"));
    EXPECT_FALSE(parse_device("eth0"));
    EXPECT_FALSE(parse_device(""));
    EXPECT_FALSE(parse_device("3b:00"));
    EXPECT_FALSE(parse_device("g3:00.0"));
}

TEST(DeviceName, CheckRefusesWhatRunCannotProbe) {
    const std::string text =
        "ports:\n"
        "  - {name: a, device: '3b:00.8', rate: 10G}\n"
        "  - {name: b, device: net_null0, rate: 10G}\n"
        "classes: [x]\n"
        "forwarding: [{from: a, to: b}]\n"
        "scheduler: {name: root, kind: fifo, class: x}\n";
    const PolicyResult result = parse_policy(text, "p.yaml");
    ASSERT_FALSE(result.ok());
    ASSERT_EQ(result.errors.size(), 1u);
    EXPECT_EQ(result.errors[0].key_path, "ports[0].device");
    EXPECT_NE(result.errors[0].reason.find("function 0-7"), std::string::npos);
}

TEST(DeviceName, PcapInputFilesAreTheRxPcapArguments) {
    EXPECT_EQ(pcap_input_files("net_pcap0,rx_pcap=a.pcap,tx_pcap=out.pcap,rx_pcap=/d/b.pcap"),
              (std::vector<std::string>{"a.pcap", "/d/b.pcap"}));
    EXPECT_TRUE(pcap_input_files("net_pcap0,tx_pcap=out.pcap").empty());
    EXPECT_TRUE(pcap_input_files("net_pcap0").empty());
    EXPECT_TRUE(pcap_input_files("net_ring0,rx_pcap=a.pcap").empty());  // not a pcap device
    EXPECT_TRUE(pcap_input_files("net_pcap0,rx_iface=eth0").empty());
}

}  // namespace
}  // namespace twinlane::conf
