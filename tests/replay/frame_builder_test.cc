// build_frame and the RoCE encoder against an independent decoder of the wire formats.
#include "replay/frame_builder.h"

#include <gtest/gtest.h>

#include <vector>

#include "replay/roce.h"
#include "tests/replay/trace_inspect.h"

namespace twinlane::replay {
namespace {

using testing::decode;
using testing::read16;
using testing::read32;

FrameHeaders tcp_headers(uint8_t version) {
    FrameHeaders headers;
    if (version == 4) {
        headers.src_ip = IpAddress::v4(0xC6120001);  // 198.18.0.1
        headers.dst_ip = IpAddress::v4(0xC6130102);  // 198.19.1.2
    } else {
        headers.src_ip = IpAddress::v6({0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7});
        headers.dst_ip = IpAddress::v6({0x20, 0x01, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9});
    }
    headers.protocol = L4Protocol::tcp;
    headers.src_port = 49152;
    headers.dst_port = 8001;
    headers.tcp_seq = 0xFFFFFF00;
    headers.tcp_ack = 77;
    headers.tcp_flags = tcp_flags::kPsh | tcp_flags::kAck;
    headers.traffic_class = 0x2E << 2 | kEcnEct0;
    return headers;
}

TEST(FrameBuilder, Ipv4TcpFrameHasValidChecksumsAndFields) {
    std::vector<uint8_t> frame;
    const uint8_t prefix[] = {'G', 'E', 'T'};
    build_frame(tcp_headers(4), prefix, 1001, 0xAB, frame);
    ASSERT_EQ(frame.size(), header_bytes(4, L4Protocol::tcp) + 1001);
    const auto decoded = decode(frame);
    ASSERT_TRUE(decoded.valid);
    EXPECT_EQ(decoded.ip_version, 4);
    EXPECT_TRUE(decoded.ipv4_checksum_ok);
    EXPECT_TRUE(decoded.l4_checksum_ok);
    EXPECT_EQ(decoded.traffic_class, 0x2E << 2 | kEcnEct0);
    EXPECT_EQ(decoded.dst_port, 8001);
    EXPECT_EQ(decoded.tcp_seq, 0xFFFFFF00U);
    EXPECT_EQ(decoded.tcp_flags, tcp_flags::kPsh | tcp_flags::kAck);
    EXPECT_EQ(frame[decoded.l4_payload_offset], 'G');
    EXPECT_EQ(frame[decoded.l4_payload_offset + 3], 0xAB);
    EXPECT_EQ(frame.back(), 0xAB);
    // Corrupting one payload byte must break the TCP checksum: the check is not vacuous.
    frame[decoded.l4_payload_offset + 500] ^= 0x01;
    EXPECT_FALSE(decode(frame).l4_checksum_ok);
}

TEST(FrameBuilder, Ipv6UdpChecksumIsAlwaysComputed) {
    FrameHeaders headers = tcp_headers(6);
    headers.protocol = L4Protocol::udp;
    headers.udp_checksum_ipv4 = false;  // irrelevant for IPv6: the checksum is mandatory
    std::vector<uint8_t> frame;
    build_frame(headers, {}, 333, 0, frame);
    const auto decoded = decode(frame);
    ASSERT_TRUE(decoded.valid);
    EXPECT_EQ(decoded.ip_version, 6);
    EXPECT_FALSE(decoded.udp_checksum_zero);
    EXPECT_TRUE(decoded.l4_checksum_ok);
    EXPECT_EQ(decoded.traffic_class, 0x2E << 2 | kEcnEct0);
}

TEST(FrameBuilder, Ipv4UdpChecksumCanBeOmittedAndShortFramesArePadded) {
    FrameHeaders headers = tcp_headers(4);
    headers.protocol = L4Protocol::udp;
    headers.udp_checksum_ipv4 = false;
    std::vector<uint8_t> frame;
    build_frame(headers, {}, 4, 0x11, frame);
    EXPECT_EQ(frame.size(), kMinimumFrameBytes);
    const auto decoded = decode(frame);
    ASSERT_TRUE(decoded.valid);
    EXPECT_TRUE(decoded.udp_checksum_zero);
    EXPECT_EQ(read16(frame.data() + 14 + 2), 20 + 8 + 4);  // IP length excludes the padding
}

TEST(FrameBuilder, MacsAreLocallyAdministeredUnicast) {
    std::vector<uint8_t> frame;
    build_frame(tcp_headers(4), {}, 10, 0, frame);
    for (size_t offset : {0, 6}) {
        EXPECT_EQ(frame[offset] & 0x02, 0x02);  // locally administered
        EXPECT_EQ(frame[offset] & 0x01, 0x00);  // unicast
    }
    EXPECT_NE(read32(frame.data() + 2), read32(frame.data() + 8));  // src and dst differ
}

TEST(Roce, FirstPacketCarriesBthAndReth) {
    BthFields bth;
    bth.opcode = bth_opcode::kRcRdmaWriteFirst;
    bth.dest_qp = 0x123456;
    bth.psn = 0xABCDEF;
    RethFields reth{0x1122334455667788ULL, 0xCAFEF00D, 65536};
    std::array<uint8_t, kBthBytes + kRethBytes> out{};
    ASSERT_EQ(encode_roce_headers(bth, reth, out), kBthBytes + kRethBytes);
    EXPECT_EQ(out[0], 0x06);
    EXPECT_EQ(read16(&out[2]), 0xFFFF);                // default partition key
    EXPECT_EQ(read32(&out[4]) & 0xFFFFFF, 0x123456U);  // dest QP
    EXPECT_EQ(read32(&out[8]) & 0xFFFFFF, 0xABCDEFU);  // PSN
    EXPECT_EQ(read32(&out[12]), 0x11223344U);          // RETH virtual address
    EXPECT_EQ(read32(&out[20]), 0xCAFEF00DU);          // R_Key
    EXPECT_EQ(read32(&out[24]), 65536U);               // DMA length
    bth.opcode = bth_opcode::kRcRdmaWriteMiddle;
    EXPECT_EQ(encode_roce_headers(bth, reth, out), kBthBytes);
}

TEST(Roce, IcrcIgnoresMutableFieldsButCoversPayload) {
    FrameHeaders headers = tcp_headers(4);
    headers.protocol = L4Protocol::udp;
    headers.udp_checksum_ipv4 = false;
    headers.dst_port = kRoceV2UdpPort;
    std::array<uint8_t, kBthBytes + kRethBytes> transport{};
    BthFields bth;
    bth.dest_qp = 5;
    const size_t transport_bytes = encode_roce_headers(bth, {}, transport);
    std::vector<uint8_t> frame;
    build_frame(headers, std::span<const uint8_t>(transport.data(), transport_bytes),
                transport_bytes + 256 + kIcrcBytes, 0x42, frame);
    store_icrc(frame);
    const uint32_t icrc = compute_icrc(frame);
    EXPECT_EQ(frame[frame.size() - 4], static_cast<uint8_t>(icrc));

    std::vector<uint8_t> marked = frame;
    marked[14 + 1] |= 0x3;  // a switch sets ECN CE
    marked[14 + 8] -= 1;    // and decrements TTL
    EXPECT_EQ(compute_icrc(marked), icrc);
    std::vector<uint8_t> corrupted = frame;
    corrupted[corrupted.size() - 10] ^= 0x80;
    EXPECT_NE(compute_icrc(corrupted), icrc);
}

}  // namespace
}  // namespace twinlane::replay
