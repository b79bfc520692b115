// DSCP remark: the incremental IPv4 checksum update equals a full recomputation; ECN bits and
// the IPv6 flow label are preserved.
#include "classifier/dscp_rewrite.h"

#include <gtest/gtest.h>

#include "tests/classifier/packet_builder.h"

namespace twinlane::classifier {
namespace {

using testing::PacketBuilder;

TEST(DscpRewrite, Ipv4ChecksumMatchesFullRecomputeForAllValues) {
    for (uint32_t options : {0u, 8u, 40u}) {
        for (uint8_t tos : {uint8_t{0}, uint8_t{0x03}, uint8_t{0xB9}, uint8_t{0xFF}}) {
            auto frame = PacketBuilder()
                             .ethernet()
                             .ipv4({172, 16, 0, 9}, {10, 255, 0, 1}, 6, tos, options)
                             .tcp(1, 2)
                             .build();
            uint8_t* l3 = frame.data() + 14;
            const uint32_t header = 20 + options;
            for (uint8_t dscp = 0; dscp < 64; ++dscp) {
                ASSERT_TRUE(rewrite_dscp(l3, 4, dscp));
                EXPECT_EQ(read_dscp(l3, 4), dscp);
                EXPECT_EQ(l3[1] & 3, tos & 3);  // ECN untouched
                const uint16_t stored = uint16_t((l3[10] << 8) | l3[11]);
                EXPECT_EQ(stored, ipv4_header_checksum(l3, header)) << int(dscp);
            }
        }
    }
}

TEST(DscpRewrite, Ipv6KeepsVersionEcnAndFlowLabel) {
    auto frame = PacketBuilder()
                     .ethernet()
                     .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 17, 0x02)
                     .udp(1, 2)
                     .build();
    uint8_t* l3 = frame.data() + 14;
    l3[1] |= 0x0A;  // flow label bits
    l3[2] = 0xBC;
    l3[3] = 0xDE;
    ASSERT_TRUE(rewrite_dscp(l3, 6, 46));
    EXPECT_EQ(l3[0] >> 4, 6);
    EXPECT_EQ(read_dscp(l3, 6), 46);
    EXPECT_EQ((l3[1] >> 4) & 3, 2);  // ECN = ECT(0)
    EXPECT_EQ(l3[1] & 0x0F, 0x0A);
    EXPECT_EQ(l3[2], 0xBC);
    EXPECT_EQ(l3[3], 0xDE);
}

TEST(DscpRewrite, RejectsBadArguments) {
    uint8_t header[40] = {0x45};
    EXPECT_FALSE(rewrite_dscp(header, 4, 64));
    EXPECT_FALSE(rewrite_dscp(header, 0, 1));
    EXPECT_EQ(header[1], 0);
}

}  // namespace
}  // namespace twinlane::classifier
