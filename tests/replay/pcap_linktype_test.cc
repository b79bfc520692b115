// PcapReader on captures that are not Ethernet (Linux cooked SLL/SLL2, raw IP, BSD loopback):
// every record comes out as an Ethernet frame, byte for byte, with its wire length; cut link
// headers and non-IP protocols become frames the classifier counts, and other link types are
// refused by name. The pcaps are written here byte by byte, in both byte orders and both
// timestamp resolutions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy.h"
#include "replay/pcap_io.h"
#include "tests/replay/capture_bytes.h"
#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

using namespace testing::capture;

const Bytes kDestinationMac = {0x02, 0, 0, 0, 0, 0x01};
const Bytes kDefaultSourceMac = {0x02, 0, 0, 0, 0, 0x02};
const Bytes kSenderMac = {0x3c, 0xfd, 0xfe, 0x12, 0x34, 0x56};

// IPv6 + UDP from fd00::1 to fd00::2, port 50051, with `payload_bytes` of pattern.
Bytes ipv6_udp(size_t payload_bytes) {
    Bytes source(16, 0), destination(16, 0);
    source[0] = destination[0] = 0xfd;
    source[15] = 1;
    destination[15] = 2;
    const auto udp_length = static_cast<uint16_t>(8 + payload_bytes);
    return concat({{0x60, 0, 0, 0},
                   big16(udp_length),
                   {17, 64},
                   source,
                   destination,
                   big16(40000),
                   big16(50051),
                   big16(udp_length),
                   {0, 0},
                   pattern(payload_bytes, 9)});
}

// Linux cooked v1: packet type, ARPHRD, address length, address (8 bytes), protocol.
Bytes sll_header(uint16_t protocol, const Bytes& address, uint16_t arphrd = 1) {
    Bytes padded = address;
    padded.resize(8, 0);
    return concat({big16(0), big16(arphrd), big16(static_cast<uint16_t>(address.size())), padded,
                   big16(protocol)});
}

// Linux cooked v2: protocol, reserved, interface index, ARPHRD, packet type, address length,
// address (8 bytes).
Bytes sll2_header(uint16_t protocol, const Bytes& address, uint16_t arphrd = 1) {
    Bytes padded = address;
    padded.resize(8, 0);
    return concat({big16(protocol),
                   big16(0),
                   big32(3),
                   big16(arphrd),
                   {4, static_cast<uint8_t>(address.size())},
                   padded});
}

Bytes ethernet(const Bytes& source_mac, uint16_t ethertype, const Bytes& payload) {
    return concat({kDestinationMac, source_mac, big16(ethertype), payload});
}

Bytes bytes_of(const PcapRecord& record) {
    return {record.captured.begin(), record.captured.end()};
}

class PcapLinkTypeTest : public testing::TempDirTest {
  protected:
    // Reads every record of `file` as (frame bytes, wire length), checking that converted
    // records are never declared to outlive next().
    static std::vector<std::pair<Bytes, uint32_t>> read_all(PcapReader& reader) {
        std::vector<std::pair<Bytes, uint32_t>> frames;
        PcapRecord record;
        while (reader.next(record)) {
            EXPECT_FALSE(reader.record_outlives_next());
            frames.emplace_back(bytes_of(record), record.wire_length);
        }
        return frames;
    }
};

TEST_F(PcapLinkTypeTest, LinuxSllLittleEndianMicrosecondsBecomesEthernet) {
    const Bytes v4 = ipv4_udp(50051, 100);
    const Bytes v6 = ipv6_udp(200);
    PcapFileBytes(kLinktypeLinuxSll, ByteOrder::little, Resolution::microsecond)
        .record(1, 500, concat({sll_header(0x0800, kSenderMac), v4}))
        // Snapped after 60 bytes of the IPv6 packet, 16 + 248 on the wire.
        .record(2, 999'999,
                concat({sll_header(0x86DD, kSenderMac), Bytes(v6.begin(), v6.begin() + 60)}),
                16 + static_cast<uint32_t>(v6.size()))
        .write(path("sll.pcap"));

    PcapReader reader(path("sll.pcap"));
    EXPECT_EQ(reader.link_type(), 113);
    PcapRecord record;
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record.timestamp_ns, 1'000'500'000u);
    EXPECT_EQ(bytes_of(record), ethernet(kSenderMac, 0x0800, v4));
    EXPECT_EQ(record.wire_length, 14 + v4.size());
    EXPECT_FALSE(reader.record_outlives_next());
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record.timestamp_ns, 2'999'999'000u);
    EXPECT_EQ(bytes_of(record), ethernet(kSenderMac, 0x86DD, Bytes(v6.begin(), v6.begin() + 60)));
    EXPECT_EQ(record.wire_length, 14 + v6.size());
    EXPECT_FALSE(reader.next(record));
    EXPECT_EQ(reader.records_read(), 2u);
}

TEST_F(PcapLinkTypeTest, LinuxSll2BigEndianNanosecondsBecomesEthernet) {
    const Bytes v4 = ipv4_udp(8080, 30);
    const Bytes v6 = ipv6_udp(0);
    PcapFileBytes(kLinktypeLinuxSll2, ByteOrder::big, Resolution::nanosecond)
        .record(7, 123'456'789, concat({sll2_header(0x0800, kSenderMac), v4}))
        // A tun interface: no link-layer address, so the default source MAC.
        .record(7, 123'456'790, concat({sll2_header(0x86DD, {}, 0xFFFE), v6}), 20 + 1500)
        .write(path("sll2.pcap"));

    PcapReader reader(path("sll2.pcap"));
    EXPECT_EQ(reader.link_type(), 276);
    const auto frames = read_all(reader);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].first, ethernet(kSenderMac, 0x0800, v4));
    EXPECT_EQ(frames[0].second, 14 + v4.size());
    EXPECT_EQ(frames[1].first, ethernet(kDefaultSourceMac, 0x86DD, v6));
    EXPECT_EQ(frames[1].second, 14u + 1500u);

    PcapReader again(path("sll2.pcap"));
    PcapRecord record;
    ASSERT_TRUE(again.next(record));
    EXPECT_EQ(record.timestamp_ns, 7'123'456'789u);
}

// Linux puts non-Ethernet framing numbers (ETH_P_802_3 1, ETH_P_802_2 4, ...) in the protocol
// field: not ethertypes, so non-IP frames (ethertype 0) that keep the bytes.
TEST_F(PcapLinkTypeTest, SllProtocolBelowEthertypeRangeIsNonIp) {
    const Bytes llc = {0x42, 0x42, 0x03, 0, 0, 0, 0};
    PcapFileBytes(kLinktypeLinuxSll, ByteOrder::little, Resolution::nanosecond)
        .record(0, 1, concat({sll_header(0x0004, kSenderMac), llc}))
        .record(0, 2, concat({sll_header(0x0001, kSenderMac), ipv4_udp(53, 4)}))
        .write(path("llc.pcap"));
    PcapFileBytes(kLinktypeLinuxSll2, ByteOrder::big, Resolution::microsecond)
        .record(0, 1, concat({sll2_header(0x0004, kSenderMac), llc}))
        .write(path("llc2.pcap"));

    PcapReader reader(path("llc.pcap"));
    const auto frames = read_all(reader);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].first, ethernet(kSenderMac, 0, llc));
    EXPECT_EQ(frames[1].first, ethernet(kSenderMac, 0, ipv4_udp(53, 4)));
    PcapReader reader2(path("llc2.pcap"));
    const auto frames2 = read_all(reader2);
    ASSERT_EQ(frames2.size(), 1u);
    EXPECT_EQ(frames2[0].first, ethernet(kSenderMac, 0, llc));
}

TEST_F(PcapLinkTypeTest, RawIpTakesTheEthertypeFromTheIpVersion) {
    const Bytes v4 = ipv4_udp(50051, 10);
    const Bytes v6 = ipv6_udp(10);
    const Bytes not_ip = {0x00, 0x11, 0x22, 0x33};
    // 101 is what files say; 12 (Linux) and 14 (OpenBSD) are DLT_RAW values found in files.
    for (uint32_t link_type : {kLinktypeRaw, 12u, 14u}) {
        const std::string file = path("raw" + std::to_string(link_type) + ".pcap");
        PcapFileBytes(link_type, ByteOrder::little, Resolution::nanosecond)
            .record(0, 1, v4)
            .record(0, 2, v6, static_cast<uint32_t>(v6.size()) + 100)
            .record(0, 3, not_ip)
            .record(0, 4, {})
            .write(file);
        PcapReader reader(file);
        if (link_type == kLinktypeRaw) {
            EXPECT_EQ(reader.link_type(), kDltRaw);
        }
        const auto frames = read_all(reader);
        ASSERT_EQ(frames.size(), 4u) << link_type;
        EXPECT_EQ(frames[0].first, ethernet(kDefaultSourceMac, 0x0800, v4)) << link_type;
        EXPECT_EQ(frames[0].second, 14 + v4.size());
        EXPECT_EQ(frames[1].first, ethernet(kDefaultSourceMac, 0x86DD, v6)) << link_type;
        EXPECT_EQ(frames[1].second, 14 + v6.size() + 100);
        EXPECT_EQ(frames[2].first, ethernet(kDefaultSourceMac, 0, not_ip)) << link_type;
        EXPECT_EQ(frames[3].first, ethernet(kDefaultSourceMac, 0, {})) << link_type;
        EXPECT_EQ(frames[3].second, 14u);
    }
}

TEST_F(PcapLinkTypeTest, Ipv4AndIpv6LinkTypesReadTheIpVersion) {
    const Bytes v4 = ipv4_udp(50051, 10);
    const Bytes v6 = ipv6_udp(10);
    PcapFileBytes(kLinktypeIpv4, ByteOrder::big, Resolution::microsecond)
        .record(0, 1, v4)
        .write(path("ipv4.pcap"));
    PcapFileBytes(kLinktypeIpv6, ByteOrder::little, Resolution::microsecond)
        .record(0, 1, v6)
        .write(path("ipv6.pcap"));
    PcapReader ipv4(path("ipv4.pcap"));
    EXPECT_EQ(ipv4.link_type(), 228);
    auto frames = read_all(ipv4);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].first, ethernet(kDefaultSourceMac, 0x0800, v4));
    PcapReader ipv6(path("ipv6.pcap"));
    EXPECT_EQ(ipv6.link_type(), 229);
    frames = read_all(ipv6);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].first, ethernet(kDefaultSourceMac, 0x86DD, v6));
}

// NULL's 4-byte address family is in the capturing host's (= the file's) byte order; AF_INET6
// is 10 (Linux), 24 (NetBSD, OpenBSD), 28 (FreeBSD) or 30 (macOS).
TEST_F(PcapLinkTypeTest, NullFamilyInTheFilesByteOrder) {
    const Bytes v4 = ipv4_udp(50051, 10);
    const Bytes v6 = ipv6_udp(10);
    PcapFileBytes(kLinktypeNull, ByteOrder::little, Resolution::microsecond)
        .record(0, 1, concat({little32(2), v4}), 4 + static_cast<uint32_t>(v4.size()) + 50)
        .record(0, 2, concat({little32(10), v6}))
        .record(0, 3, concat({little32(24), v6}))
        .record(0, 4, concat({little32(28), v6}))
        .record(0, 5, concat({little32(30), v6}))
        .record(0, 6, concat({little32(7), v4}))  // AF_IPX-ish: not IP
        .record(0, 7, concat({big32(2), v4}))     // written on a host of the other order
        .record(0, 8, concat({little32(2), v4}), UINT32_MAX)  // wire length saturates
        .write(path("null.pcap"));
    PcapFileBytes(kLinktypeNull, ByteOrder::big, Resolution::nanosecond)
        .record(0, 1, concat({big32(30), v6}))
        .write(path("null_big.pcap"));

    PcapReader reader(path("null.pcap"));
    EXPECT_EQ(reader.link_type(), 0);
    const auto frames = read_all(reader);
    ASSERT_EQ(frames.size(), 8u);
    EXPECT_EQ(frames[0].first, ethernet(kDefaultSourceMac, 0x0800, v4));
    EXPECT_EQ(frames[0].second, 14 + v4.size() + 50);
    for (size_t i = 1; i <= 4; ++i)
        EXPECT_EQ(frames[i].first, ethernet(kDefaultSourceMac, 0x86DD, v6)) << i;
    EXPECT_EQ(frames[5].first, ethernet(kDefaultSourceMac, 0, v4));
    EXPECT_EQ(frames[6].first, ethernet(kDefaultSourceMac, 0x0800, v4));
    EXPECT_EQ(frames[7].second, UINT32_MAX);

    PcapReader big(path("null_big.pcap"));
    const auto big_frames = read_all(big);
    ASSERT_EQ(big_frames.size(), 1u);
    EXPECT_EQ(big_frames[0].first, ethernet(kDefaultSourceMac, 0x86DD, v6));
}

// LOOP's family is in network byte order whatever the file's.
TEST_F(PcapLinkTypeTest, LoopFamilyInNetworkOrder) {
    const Bytes v4 = ipv4_udp(50051, 10);
    const Bytes v6 = ipv6_udp(10);
    PcapFileBytes(kLinktypeLoop, ByteOrder::little, Resolution::nanosecond)
        .record(0, 1, concat({big32(2), v4}))
        .record(0, 2, concat({big32(24), v6}))
        .record(0, 3, concat({big32(99), v6}))
        .write(path("loop.pcap"));
    PcapReader reader(path("loop.pcap"));
    EXPECT_EQ(reader.link_type(), 108);
    const auto frames = read_all(reader);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0].first, ethernet(kDefaultSourceMac, 0x0800, v4));
    EXPECT_EQ(frames[1].first, ethernet(kDefaultSourceMac, 0x86DD, v6));
    EXPECT_EQ(frames[2].first, ethernet(kDefaultSourceMac, 0, v6));
}

// A record cut inside its link header: a 12-byte frame (the MACs), a truncated Ethernet frame
// to the classifier; the records after it read normally.
TEST_F(PcapLinkTypeTest, RecordCutInsideTheLinkHeaderIsATwelveByteFrame) {
    const Bytes header = sll_header(0x0800, kSenderMac);
    const Bytes v4 = ipv4_udp(50051, 10);
    PcapFileBytes(kLinktypeLinuxSll, ByteOrder::big, Resolution::microsecond, 10)
        .record(0, 1, Bytes(header.begin(), header.begin() + 10), 16 + 100)
        .record(0, 2, Bytes(header.begin(), header.begin() + 3), 3)
        .record(0, 3, {}, 0)
        .write(path("cut.pcap"));
    PcapFileBytes(kLinktypeNull, ByteOrder::little, Resolution::nanosecond)
        .record(0, 1, {2, 0})
        .record(0, 2, concat({little32(2), v4}))
        .write(path("cut_null.pcap"));

    PcapReader reader(path("cut.pcap"));
    auto frames = read_all(reader);
    ASSERT_EQ(frames.size(), 3u);
    const Bytes macs = concat({kDestinationMac, kDefaultSourceMac});
    EXPECT_EQ(frames[0].first, macs);
    EXPECT_EQ(frames[0].second, 14u + 100u);
    EXPECT_EQ(frames[1].first, macs);
    EXPECT_EQ(frames[1].second, 12u);
    EXPECT_EQ(frames[2].first, macs);
    EXPECT_EQ(frames[2].second, 12u);

    PcapReader null_reader(path("cut_null.pcap"));
    frames = read_all(null_reader);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].first, macs);
    EXPECT_EQ(frames[1].first, ethernet(kDefaultSourceMac, 0x0800, v4));
}

// A record above the file's snap length: libpcap cuts it there (1.10); whatever it hands out
// is converted in bounds, with the wire length kept.
TEST_F(PcapLinkTypeTest, RecordAboveTheSnapLengthIsConvertedInBounds) {
    const Bytes v4 = ipv4_udp(50051, 300);
    PcapFileBytes(kLinktypeRaw, ByteOrder::little, Resolution::nanosecond, 64)
        .record(0, 1, v4)
        .record(0, 2, Bytes(v4.begin(), v4.begin() + 40), static_cast<uint32_t>(v4.size()))
        .write(path("snap.pcap"));
    PcapReader reader(path("snap.pcap"));
    PcapRecord record;
    size_t count = 0;
    while (reader.next(record)) {
        ++count;
        EXPECT_EQ(record.wire_length, 14 + v4.size());
        EXPECT_LE(record.captured.size(), record.wire_length);
        EXPECT_TRUE(std::equal(record.captured.begin() + 14, record.captured.end(), v4.begin()));
    }
    EXPECT_EQ(count, 2u);
}

TEST_F(PcapLinkTypeTest, UnsupportedLinkTypeNamesItAndTheSupportedOnes) {
    PcapFileBytes(kLinktypeIeee80211, ByteOrder::little, Resolution::microsecond)
        .record(0, 1, pattern(40, 1))
        .write(path("wifi.pcap"));
    try {
        PcapReader reader(path("wifi.pcap"));
        FAIL() << "expected PcapError";
    } catch (const PcapError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("wifi.pcap"), std::string::npos) << message;
        EXPECT_NE(message.find("IEEE802_11"), std::string::npos) << message;
        EXPECT_NE(message.find("105"), std::string::npos) << message;
        EXPECT_NE(message.find("LINUX_SLL2"), std::string::npos) << message;
    }
}

// A pcapng file whose second interface has another link type (tcpdump -i any next to -i eth0):
// libpcap cannot read it as one stream; the error says so and how to split it, not "corrupt".
TEST_F(PcapLinkTypeTest, PcapngInterfacesOfTwoLinkTypesAreALimitNotDamage) {
    PcapngFileBytes()
        .interface(1, 65535)  // interface 0: Ethernet
        .packet(0, 1, pattern(60, 3))
        .interface(kLinktypeLinuxSll, 65535)  // interface 1: Linux cooked
        .packet(1, 1, pattern(60, 3))
        .write(path("two.pcapng"));
    PcapReader reader(path("two.pcapng"));
    PcapRecord record;
    ASSERT_TRUE(reader.next(record));
    try {
        reader.next(record);
        FAIL() << "expected PcapError";
    } catch (const PcapError& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.find("corrupt"), std::string::npos) << message;
        EXPECT_NE(message.find("two.pcapng"), std::string::npos) << message;
        EXPECT_NE(message.find("share one link type"), std::string::npos) << message;
    }
}

// Two raw IP interfaces (a tun and a WireGuard interface) share one link type, but libpcap 1.10
// compares the first one's DLT value (12) with the second one's LINKTYPE value (101) and
// refuses the file. The error must not tell the user the types differ or to split the file:
// the file is fine, and a classic pcap (editcap -F pcap) holds it.
TEST_F(PcapLinkTypeTest, PcapngWithTwoRawInterfacesIsRefusedWithTheRightAdvice) {
    const Bytes v4 = ipv4_udp(50051, 20);
    PcapngFileBytes()
        .interface(kLinktypeRaw, 65535)
        .packet(0, 1, v4)
        .interface(kLinktypeRaw, 65535)
        .packet(1, 2, v4)
        .write(path("tun.pcapng"));
    PcapReader reader(path("tun.pcapng"));
    EXPECT_EQ(reader.link_type(), kDltRaw);
    PcapRecord record;
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(bytes_of(record), ethernet(kDefaultSourceMac, 0x0800, v4));
    try {
        while (reader.next(record)) {
        }
        // A libpcap that reads it is as good: then the second record came through.
        EXPECT_EQ(reader.records_read(), 2u);
    } catch (const PcapError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("tun.pcapng"), std::string::npos) << message;
        EXPECT_NE(message.find("all raw IP"), std::string::npos) << message;
        EXPECT_NE(message.find("editcap -F pcap"), std::string::npos) << message;
        EXPECT_EQ(message.find("split"), std::string::npos) << message;
        EXPECT_EQ(message.find("corrupt"), std::string::npos) << message;
    }
}

// ---- Through the replay command's stages: policy, classifier, Ethernet output pcap ----

// conf/default.yaml, found from this source file's path (relative to the build directory,
// which is two levels above this test's executable).
std::filesystem::path default_policy_path() {
    std::filesystem::path source(__FILE__);
    if (source.is_relative()) {
        const auto executable = std::filesystem::read_symlink("/proc/self/exe");
        source = executable.parent_path() / "../.." / source;
    }
    return source.parent_path() / "../../conf/default.yaml";
}

struct DefaultPolicyClassifier {
    conf::CompiledPolicy compiled;
    std::unique_ptr<classifier::Classifier> classifier;
    uint8_t class_id(const std::string& name) const {
        const auto& names = compiled.classifier.class_names;
        return static_cast<uint8_t>(std::find(names.begin(), names.end(), name) - names.begin());
    }
};

std::optional<DefaultPolicyClassifier> default_policy_classifier() {
    const auto policy_path = default_policy_path();
    if (!std::filesystem::exists(policy_path)) return std::nullopt;
    conf::PolicyResult loaded = conf::load_policy(policy_path.string());
    if (!loaded.ok()) return std::nullopt;
    DefaultPolicyClassifier result;
    result.compiled = conf::compile_policy(*loaded.policy);
    if (!result.compiled.ok()) return std::nullopt;
    result.classifier = std::make_unique<classifier::Classifier>(result.compiled.classifier);
    return result;
}

// What `twinlane replay` does with each record before the discipline (the engine's
// classifier call, dataplane/replay_command.cc's policy set-up): an SLL2 capture (`tcpdump -i
// any`) of gRPC serving traffic to 50051 lands in the inference class, and the frames written
// to the Ethernet output pcap read back as they were handed out.
// (The replay engine itself, replay_pcap(), is in twinlane_replay_engine, which this test
// executable does not link.)
TEST_F(PcapLinkTypeTest, Sll2ServingTrafficClassifiesAsInferenceAndWritesEthernet) {
    auto setup = default_policy_classifier();
    ASSERT_TRUE(setup) << "cannot load " << default_policy_path();
    PcapFileBytes capture(kLinktypeLinuxSll2, ByteOrder::little, Resolution::nanosecond);
    constexpr uint32_t kPackets = 50;
    for (uint32_t i = 0; i < kPackets; ++i)
        capture.record(1, i * 10'000,
                       concat({sll2_header(0x0800, kSenderMac), ipv4_udp(50051, 100 + i)}));
    // and what the classifier must not take for IP: an SLL2 802.2 frame and a cut record
    capture.record(1, 900'000, concat({sll2_header(0x0004, kSenderMac), pattern(60, 3)}));
    capture.record(1, 900'001, {0x08, 0x00, 0, 0}, 20 + 64);
    capture.write(path("any.pcap"));

    PcapReader reader(path("any.pcap"));
    PcapWriter writer(path("out.pcap"));
    PcapRecord record;
    std::vector<Bytes> written;
    std::vector<classifier::Result> results;
    while (reader.next(record)) {
        const auto captured = static_cast<uint32_t>(record.captured.size());
        results.push_back(setup->classifier->classify(record.captured.data(), captured,
                                                      record.wire_length, 0, record.timestamp_ns));
        writer.write(record.timestamp_ns, record.captured, record.wire_length);
        written.push_back(bytes_of(record));
    }
    writer.close();
    ASSERT_EQ(results.size(), kPackets + 2);
    const uint8_t inference = setup->class_id("inference");
    for (uint32_t i = 0; i < kPackets; ++i) {
        EXPECT_EQ(results[i].class_id, inference) << i;
        EXPECT_EQ(results[i].ip_version, 4) << i;
        EXPECT_EQ(results[i].malformed, classifier::MalformedReason::none) << i;
        EXPECT_EQ(results[i].l3_offset, 14) << i;
    }
    EXPECT_EQ(results[kPackets].ip_version, 0);
    EXPECT_EQ(results[kPackets].malformed, classifier::MalformedReason::none);
    EXPECT_EQ(results[kPackets + 1].malformed, classifier::MalformedReason::ethernet_truncated);

    PcapReader output(path("out.pcap"));
    EXPECT_EQ(output.link_type(), 1);
    size_t index = 0;
    while (output.next(record)) {
        ASSERT_LT(index, written.size());
        EXPECT_TRUE(output.record_outlives_next());
        EXPECT_EQ(bytes_of(record), written[index]) << index;
        ++index;
    }
    EXPECT_EQ(index, written.size());
}

}  // namespace
}  // namespace twinlane::replay
