// pfc/: frames as 802.1Qbb lays them out, pause times at 10/100/400G, the headroom formula on a
// worked example, when a sender is paused and resumed (hysteresis, refresh), how long a
// received pause holds, and the watchdog.
#include <gtest/gtest.h>

#include <vector>

#include "pfc/frame.h"
#include "pfc/headroom.h"
#include "pfc/pause_generator.h"
#include "pfc/pause_receiver.h"
#include "pfc/priority.h"

namespace twinlane::pfc {
namespace {

const std::array<uint8_t, 6> kMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};

TEST(PfcFrame, LayoutAsTheStandardHasIt) {
    PauseFrame f;
    f.class_enable = 0x08 | 0x01;  // priorities 3 and 0
    f.quanta[3] = 0xFFFF;
    f.quanta[0] = 0x1234;
    f.quanta[5] = 0x7777;  // not enabled: written as 0
    uint8_t out[kFrameBytes];
    encode(f, kMac, out);
    const std::vector<uint8_t> expected = {
        0x01, 0x80, 0xC2, 0x00, 0x00, 0x01,              // destination
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a,              // source
        0x88, 0x08,                                      // MAC control
        0x01, 0x01,                                      // PFC opcode
        0x00, 0x09,                                      // class-enable vector
        0x12, 0x34, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF,  // time[0..3]
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // time[4..7]
    };
    EXPECT_EQ(std::vector<uint8_t>(out, out + expected.size()), expected);
    for (uint32_t i = expected.size(); i < kFrameBytes; ++i)
        EXPECT_EQ(out[i], 0) << i;
    const auto back = decode(out, kFrameBytes);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->class_enable, 0x09);
    EXPECT_EQ(back->quanta[3], 0xFFFF);
    EXPECT_EQ(back->quanta[0], 0x1234);
    EXPECT_EQ(back->quanta[5], 0);
}

TEST(PfcFrame, LinkPauseAndOtherFrames) {
    uint8_t pause[kFrameBytes] = {0x01, 0x80, 0xC2, 0,    0,    0x01, 2,    0,    0,
                                  0,    0,    1,    0x88, 0x08, 0x00, 0x01, 0x00, 0x40};
    ASSERT_TRUE(is_mac_control(pause, kFrameBytes));
    const auto link = decode(pause, kFrameBytes);
    ASSERT_TRUE(link);
    EXPECT_EQ(link->class_enable, 0xFF);
    EXPECT_EQ(link->quanta[7], 0x40);
    pause[15] = 0x02;  // another MAC control opcode: consumed, no pause
    EXPECT_TRUE(is_mac_control(pause, kFrameBytes));
    EXPECT_FALSE(decode(pause, kFrameBytes));
    EXPECT_FALSE(decode(pause, 15));  // truncated
    uint8_t ip[20] = {};
    ip[12] = 0x08;
    EXPECT_FALSE(is_mac_control(ip, 20));
}

TEST(PfcQuanta, PauseTimeAtPortRates) {
    // One quantum is 512 bit times: 51.2 ns at 10G, 5.12 ns at 100G, 1.28 ns at 400G.
    EXPECT_EQ(pause_ns(1, 10'000'000'000ULL), 52u);  // rounded up
    EXPECT_EQ(pause_ns(10, 10'000'000'000ULL), 512u);
    EXPECT_EQ(pause_ns(0xFFFF, 10'000'000'000ULL), 3'355'392u);
    EXPECT_EQ(pause_ns(0xFFFF, 100'000'000'000ULL), 335'540u);  // 335539.2
    EXPECT_EQ(pause_ns(0xFFFF, 400'000'000'000ULL), 83'885u);   // 83884.8
    EXPECT_EQ(pause_ns(0, 400'000'000'000ULL), 0u);
}

TEST(PfcHeadroom, WorkedExample) {
    // 10G, 9000-byte MTU (9018-byte frames), 100 m of cable, 4 KiB of peer response, a 20 us
    // loop, a 20 us TX budget (25000 bytes at 10G):
    //   cable    2 x 100 m / 1.98e8 m/s = 1.0101 us = 1262.6 -> 1263 bytes
    //   peer     4096
    //   frames   2 x 9018 = 18036
    //   software 20 us x 10G = 25000, + 25000 = 50000
    const Headroom h = compute_headroom({.rate_bits_per_sec = 10'000'000'000ULL,
                                         .max_frame_bytes = 9018,
                                         .cable_metres = 100,
                                         .peer_response_bytes = 4096,
                                         .poll_ns = 20'000,
                                         .tx_budget_bytes = 25'000});
    EXPECT_EQ(h.cable_bytes, 1263u);
    EXPECT_EQ(h.peer_bytes, 4096u);
    EXPECT_EQ(h.frame_bytes, 18036u);
    EXPECT_EQ(h.software_bytes, 50000u);
    EXPECT_EQ(h.total_bytes(), 73395u);
    EXPECT_EQ(h.to_string(), "73395 B (cable 1263 + peer 4096 + frames 18036 + software 50000)");
    // 400G, 1 km: the cable term grows with rate and length.
    const Headroom far = compute_headroom({.rate_bits_per_sec = 400'000'000'000ULL,
                                           .max_frame_bytes = 9018,
                                           .cable_metres = 1000,
                                           .peer_response_bytes = 0,
                                           .poll_ns = 0,
                                           .tx_budget_bytes = 0});
    EXPECT_EQ(far.cable_bytes, 505051u);  // 2 km / 1.98e8 m/s = 10.101 us x 50 GB/s
}

TEST(PfcPriority, PcpElseDscpMap) {
    DscpPriorityMap map;
    map.fill(kNoPriority);
    map[26] = 3;
    uint8_t tagged[18] = {};
    tagged[12] = 0x81;
    tagged[14] = 0x60 | 0x01;  // PCP 3, VLAN 0x1xx
    EXPECT_EQ(packet_priority(tagged, 18, map), 3);
    tagged[12] = 0x88;
    tagged[13] = 0xA8;  // 802.1ad outer tag
    tagged[14] = 0xE0;
    EXPECT_EQ(packet_priority(tagged, 18, map), 7);
    uint8_t ipv4[18] = {};
    ipv4[12] = 0x08;
    ipv4[15] = 26 << 2 | 0x2;  // DSCP 26, ECT(0)
    EXPECT_EQ(packet_priority(ipv4, 18, map), 3);
    ipv4[15] = 46 << 2;
    EXPECT_EQ(packet_priority(ipv4, 18, map), kNoPriority);
    uint8_t ipv6[18] = {};
    ipv6[12] = 0x86;
    ipv6[13] = 0xDD;
    ipv6[14] = 0x60 | (26 >> 2);  // version 6, traffic class 26 << 2
    ipv6[15] = (26 & 3) << 6;
    EXPECT_EQ(packet_priority(ipv6, 18, map), 3);
    EXPECT_EQ(packet_priority(ipv6, 15, map), kNoPriority);  // too short to read
}

std::array<PriorityThresholds, kPriorities> prio3(uint64_t xoff, uint64_t xon) {
    std::array<PriorityThresholds, kPriorities> t{};
    t[3] = {true, xoff, xon};
    return t;
}

TEST(PfcGenerator, HysteresisAndRefresh) {
    PauseGenerator g(prio3(1000, 500), 10'000'000'000ULL);  // refresh: 3355392 / 2 ns
    std::array<uint64_t, kPriorities> occ{};
    occ[3] = 1000;
    EXPECT_FALSE(g.update(occ, 0));  // at xoff: not above
    occ[3] = 1001;
    auto xoff = g.update(occ, 10);
    ASSERT_TRUE(xoff);
    EXPECT_EQ(xoff->class_enable, 0x08);
    EXPECT_EQ(xoff->quanta[3], kMaxQuanta);
    EXPECT_FALSE(g.update(occ, 20));  // paused, no refresh yet
    occ[3] = 600;                     // between xon and xoff: stays paused
    EXPECT_FALSE(g.update(occ, 1000));
    auto refresh = g.update(occ, 10 + 3'355'392 / 2);
    ASSERT_TRUE(refresh);
    EXPECT_EQ(refresh->quanta[3], kMaxQuanta);
    occ[3] = 500;
    auto xon = g.update(occ, 2'000'000);
    ASSERT_TRUE(xon);
    EXPECT_EQ(xon->class_enable, 0x08);
    EXPECT_EQ(xon->quanta[3], 0);
    EXPECT_FALSE(g.paused(3));
    // Lossy priorities never get a frame, whatever their bytes.
    occ.fill(1'000'000);
    occ[3] = 0;
    EXPECT_FALSE(g.update(occ, 3'000'000));
}

TEST(PfcGenerator, NoOscillationOnAConstantLoad) {
    PauseGenerator g(prio3(1000, 500), 10'000'000'000ULL);
    std::array<uint64_t, kPriorities> occ{};
    occ[3] = 800;  // between the thresholds: never a frame
    for (uint64_t t = 0; t < 10'000'000; t += 1000)
        EXPECT_FALSE(g.update(occ, t));
}

TEST(PfcGenerator, AnUnsentFrameIsAskedForAgain) {
    PauseGenerator g(prio3(1000, 500), 10'000'000'000ULL);
    std::array<uint64_t, kPriorities> occ{};
    occ[3] = 2000;
    auto xoff = g.update(occ, 0);
    ASSERT_TRUE(xoff);
    g.unsent(*xoff);
    ASSERT_TRUE(g.update(occ, 1));
    occ[3] = 0;
    auto xon = g.update(occ, 2);
    ASSERT_TRUE(xon);
    g.unsent(*xon);
    auto again = g.update(occ, 3);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->quanta[3], 0);
}

PauseFrame pause(uint32_t priority, uint16_t quanta) {
    PauseFrame f;
    f.class_enable = static_cast<uint8_t>(1u << priority);
    f.quanta[priority] = quanta;
    return f;
}

TEST(PfcReceiver, PauseForQuantaOrUntilXon) {
    PauseReceiver r(10'000'000'000ULL, Watchdog{});
    r.on_frame(pause(3, 1000), 100);  // 1000 quanta at 10G: 51200 ns
    EXPECT_EQ(r.paused_until(3), 100u + 51'200);
    EXPECT_EQ(r.paused_until(2), 0u);
    r.on_frame(pause(3, 1000), 10'000);  // refreshed
    EXPECT_EQ(r.paused_until(3), 10'000u + 51'200);
    EXPECT_FALSE(r.tick(20'000));
    EXPECT_TRUE(r.tick(61'200));  // expired
    EXPECT_EQ(r.paused_until(3), 0u);
    EXPECT_EQ(r.paused_ns(3, 100'000), 61'100u);
    r.on_frame(pause(3, 0xFFFF), 200'000);
    r.on_frame(pause(3, 0), 250'000);  // XON
    EXPECT_EQ(r.paused_until(3), 0u);
    EXPECT_EQ(r.paused_ns(3, 300'000), 61'100u + 50'000);
    EXPECT_EQ(r.frames(3), 4u);
}

TEST(PfcReceiver, WatchdogDetectsAStormAndRestores) {
    PauseReceiver r(10'000'000'000ULL, Watchdog{.storm_detect_ns = 50'000'000,
                                                .storm_restore_ns = 200'000'000,
                                                .action = StormAction::drop});
    // A peer stuck sending XOFF every 1 ms: paused without a break.
    uint64_t t = 0;
    for (; t < 50'000'000; t += 1'000'000) {
        r.on_frame(pause(3, 0xFFFF), t);
        r.tick(t);
        ASSERT_FALSE(r.storm(3)) << t;
    }
    r.on_frame(pause(3, 0xFFFF), t);
    EXPECT_TRUE(r.tick(t));
    EXPECT_TRUE(r.storm(3));
    EXPECT_EQ(r.paused_until(3), 0u);  // pauses ignored: the leaves are released
    EXPECT_EQ(r.storms(3), 1u);
    // Still storming: restore only after 200 ms without a pause.
    r.on_frame(pause(3, 0xFFFF), t + 100'000'000);
    EXPECT_EQ(r.paused_until(3), 0u);
    r.tick(t + 250'000'000);
    EXPECT_TRUE(r.storm(3));
    EXPECT_TRUE(r.tick(t + 300'000'000));
    EXPECT_FALSE(r.storm(3));
    // A congested peer that pauses and resumes is no storm.
    PauseReceiver ok(10'000'000'000ULL, Watchdog{50'000'000, 200'000'000, StormAction::drop});
    for (uint64_t u = 0; u < 1'000'000'000; u += 10'000'000) {
        ok.on_frame(pause(3, 0xFFFF), u);
        ok.on_frame(pause(3, 0), u + 5'000'000);
        ok.tick(u + 5'000'000);
    }
    EXPECT_FALSE(ok.storm(3));
    EXPECT_EQ(ok.storms(3), 0u);
}

// Realtime: the RX lcore stamps a frame after the egress lcore read the time it ticks with, so
// a tick can come earlier than the frame it follows. That is no storm (the span wrapped once:
// a 102 ms pause became a storm at once and its priority's packets were dropped), and a storm
// does not end early either.
TEST(PfcReceiver, ATickBeforeTheFramesTimeIsNoStorm) {
    PauseReceiver r(100'000'000ULL, Watchdog{50'000'000, 200'000'000, StormAction::drop});
    r.on_frame(pause(3, 20000), 1'000'500);  // 102.4 ms at 100 Mbit/s
    EXPECT_FALSE(r.tick(1'000'000));
    EXPECT_FALSE(r.storm(3));
    EXPECT_EQ(r.paused_until(3), 1'000'500u + 102'400'000);
    EXPECT_EQ(r.paused_ns(3, 1'000'000), 0u);
    EXPECT_TRUE(r.tick(1'000'500 + 50'000'000));  // a storm after 50 ms without a break
    EXPECT_TRUE(r.storm(3));
    const uint64_t stormed_at = 1'000'500 + 50'000'000;
    r.on_frame(pause(3, 20000), stormed_at + 10'000'000);
    EXPECT_FALSE(r.tick(stormed_at + 9'000'000));  // earlier than that frame: still storming
    EXPECT_TRUE(r.storm(3));
}

}  // namespace
}  // namespace twinlane::pfc
