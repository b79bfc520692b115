// The replay's lossless senders on two PFC ingress ports: each port's bytes pause its own
// senders only, held packets come back on their own port, and the report sums the ports.
#include "replay/lossless_model.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace twinlane::replay {
namespace {

constexpr uint8_t kTraining = 1;  // class 1 is lossless on priority 3
constexpr uint8_t kPriority = 3;
constexpr uint16_t kWest = 0;
constexpr uint16_t kNorth = 2;
constexpr uint16_t kLossyPort = 1;

// An 802.1Q priority-tagged frame of `pcp` (what packet_priority reads).
std::array<uint8_t, 64> frame_of(uint8_t pcp) {
    std::array<uint8_t, 64> f{};
    f[12] = 0x81;
    f[13] = 0x00;
    f[14] = static_cast<uint8_t>(pcp << 5);
    return f;
}

LosslessOptions two_ports() {
    LosslessOptions o;
    o.enabled = true;
    o.class_priority[kTraining] = kPriority;
    o.egress_rate_bps = 10'000'000'000ULL;
    uint8_t tag = 1;
    for (const uint16_t port : {kWest, kNorth}) {
        LosslessIngress in;
        in.port = port;
        in.name = port == kWest ? "west" : "north";
        in.thresholds[kPriority] = {true, 10'000, 5'000};
        in.rate_bps = 25'000'000'000ULL;
        in.sender_reaction_ns = 1'000;
        in.class_tag[kTraining] = tag++;
        o.ingress.push_back(in);
    }
    return o;
}

TEST(LosslessModel, EachPortsBytesPauseItsOwnSendersOnly) {
    LosslessModel model(two_ports());
    const auto training = frame_of(kPriority);
    const auto lossy = frame_of(1);
    const uint8_t west = model.tag(kTraining, kWest, training.data(), training.size());
    const uint8_t north = model.tag(kTraining, kNorth, training.data(), training.size());
    EXPECT_NE(west, 0);
    EXPECT_NE(north, 0);
    EXPECT_NE(west, north);
    // Not counted: a lossy class, another priority, a port without PFC.
    EXPECT_EQ(model.tag(0, kWest, training.data(), training.size()), 0);
    EXPECT_EQ(model.tag(kTraining, kWest, lossy.data(), lossy.size()), 0);
    EXPECT_EQ(model.tag(kTraining, kLossyPort, training.data(), training.size()), 0);

    // West goes above its xoff; north's 8 KB stay below it.
    model.enter(west, 6'000, 100);
    model.enter(north, 8'000, 100);
    model.enter(west, 6'000, 200);
    const uint64_t after_reaction = 200 + 1'000;
    auto hold = [&](uint16_t port, uint64_t sent_ns) {
        return model.hold_if_paused(training.data(), training.size(), 1'000, port, sent_ns);
    };
    // Before the sender reacts, its packets still come.
    EXPECT_FALSE(hold(kWest, 1'199));
    EXPECT_FALSE(hold(kNorth, after_reaction));
    EXPECT_FALSE(hold(kLossyPort, after_reaction));
    EXPECT_EQ(model.still_held(), 0u);
    EXPECT_TRUE(hold(kWest, after_reaction));
    EXPECT_EQ(model.still_held(), 1u);
    EXPECT_EQ(model.next_release_ns(), UINT64_MAX);  // paused: nothing leaves the sender

    // West drains to its xon: resumed after the reaction, the held packet comes back on west.
    model.leave(west, 7'000, 5'000);
    EXPECT_TRUE(model.take_resumed());
    EXPECT_EQ(model.next_release_ns(), 6'000u);
    const LosslessModel::Held held = model.release(6'000);
    EXPECT_EQ(held.port, kWest);
    EXPECT_EQ(held.wire_length, 1'000u);
    EXPECT_EQ(model.still_held(), 0u);

    const nlohmann::json report = model.report(10'000);
    ASSERT_EQ(report.size(), 1u);
    const nlohmann::json& p = report[0];
    EXPECT_EQ(p["priority"], kPriority);
    ASSERT_EQ(p["ingress"].size(), 2u);
    EXPECT_EQ(p["ingress"][0]["port"], "west");
    EXPECT_EQ(p["ingress"][0]["pause_frames_sent"], 2u);  // XOFF, XON
    EXPECT_EQ(p["ingress"][0]["packets_held"], 1u);
    EXPECT_EQ(p["ingress"][1]["port"], "north");
    EXPECT_EQ(p["ingress"][1]["pause_frames_sent"], 0u);
    EXPECT_EQ(p["pause_frames_sent"], 2u);
    EXPECT_EQ(p["packets_held"], 1u);
    EXPECT_DOUBLE_EQ(p["sender_paused_ms"].get<double>(), (5'000 - 200) / 1e6);
}

TEST(LosslessModel, HeldPacketsOfTwoPortsLeaveEachAtItsPortsRate) {
    LosslessModel model(two_ports());
    const auto training = frame_of(kPriority);
    const uint8_t west = model.tag(kTraining, kWest, training.data(), training.size());
    const uint8_t north = model.tag(kTraining, kNorth, training.data(), training.size());
    model.enter(west, 11'000, 0);
    model.enter(north, 11'000, 0);
    for (const uint16_t port : {kWest, kNorth})
        for (int i = 0; i < 2; ++i)
            ASSERT_TRUE(model.hold_if_paused(training.data(), training.size(), 1'226, port, 2'000));
    model.leave(west, 11'000, 3'000);
    model.leave(north, 11'000, 3'000);
    // Resumed at 4000: the first of each port leaves then; each port's second follows one
    // frame time later on its own 25G link (1250 bytes on the wire: 400 ns).
    std::array<int, 3> per_port{};
    for (const uint64_t at : {4'000u, 4'000u, 4'400u, 4'400u}) {
        ASSERT_EQ(model.next_release_ns(), at);
        ++per_port[model.release(at).port];
    }
    EXPECT_EQ(per_port[kWest], 2);
    EXPECT_EQ(per_port[kNorth], 2);
    EXPECT_EQ(model.next_release_ns(), UINT64_MAX);
}

}  // namespace
}  // namespace twinlane::replay
