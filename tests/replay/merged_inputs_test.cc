// Replay of several captures at once (BasicReplayEngine::run(inputs), `twinlane replay -i A -i
// B`): merged by arrival on one clock, each through an ingress link of its own, each seen by
// the classifier on its own ingress port.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "replay/fifo_discipline.h"
#include "replay/replay_engine.h"
#include "tests/classifier/packet_builder.h"
#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

using classifier::testing::PacketBuilder;

// Two edge ports into one 100G egress; a rule sends what arrives on `gpu` to training, the
// rest is `other`: the class tells which ingress port the classifier saw. Each class is one
// fifo, so within a class packets leave in arrival order.
constexpr const char* kPolicy = R"(version: 1
ports:
  - {name: gpu, device: net_null0, rate: 10G}
  - {name: edge, device: net_null1, rate: 10G}
  - {name: out, device: net_null2, rate: 100G}
forwarding:
  - {from: gpu, to: out}
  - {from: edge, to: out}
classes: [training, other]
scheduler:
  name: root
  kind: strict
  children:
    - {name: training, kind: fifo, class: training}
    - {name: other, kind: fifo, class: other}
classifier:
  rules:
    - {name: from-gpu, priority: 1, match: {ingress_port: gpu}, action: {class: training}}
  heuristics: {default_class: other}
)";

// 1226 bytes: 1250 on the wire, 1000 ns at 10G, 100 ns at 100G.
std::vector<uint8_t> frame(uint16_t src_port) {
    return PacketBuilder()
        .ethernet()
        .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 17)
        .udp(src_port, 5201)
        .payload(1226 - 42)
        .build();
}

class MergedInputs : public testing::TempDirTest {
  protected:
    void SetUp() override {
        TempDirTest::SetUp();
        std::ofstream(path("policy.yaml")) << kPolicy;
        auto loaded = conf::load_policy(path("policy.yaml"));
        ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
        compiled_ = conf::compile_policy(*loaded.policy);
        ASSERT_TRUE(compiled_.ok());
    }

    void write(const std::string& name, const std::vector<uint64_t>& stamps, uint16_t src_port) {
        PcapWriter writer(path(name));
        for (const uint64_t t : stamps)
            writer.write(t, frame(src_port));
        writer.close();
    }

    struct Result {
        std::vector<uint64_t> departures;  // from the output pcap, in order
        std::vector<uint64_t> src_ports;   // of each departure
        uint64_t training_rx = 0;
        uint64_t other_rx = 0;
    };

    // Replays `files` (each on its port) through a FIFO at 100G.
    Result replay(const std::vector<std::pair<std::string, uint16_t>>& files,
                  uint64_t ingress_bps) {
        ReplayOptions options;
        options.link_rate_bps = 100'000'000'000ULL;
        options.ingress_rate_bps = ingress_bps;
        classifier::Classifier classifier(compiled_.classifier);
        ReplayReport report("fifo", options.link_rate_bps, compiled_.classifier.class_names, 0,
                            1'000'000);
        FifoDiscipline fifo(1024, 1 << 20);
        std::vector<std::unique_ptr<PcapReader>> readers;
        std::vector<ReplayInput> inputs;
        for (const auto& [name, port] : files) {
            readers.push_back(std::make_unique<PcapReader>(path(name)));
            inputs.push_back({readers.back().get(), port});
        }
        {
            PcapWriter out(path("out.pcap"));
            replay_pcaps(options, classifier, fifo, report, &out, inputs);
            out.close();
        }
        EXPECT_EQ(report.rx_packets(),
                  report.tx_packets() + report.dropped_packets() + report.queued_at_end());
        Result r;
        r.training_rx = report.classes()[0].rx_packets;
        r.other_rx = report.classes()[1].rx_packets;
        PcapReader departed(path("out.pcap"));
        PcapRecord record;
        while (departed.next(record)) {
            r.departures.push_back(record.timestamp_ns);
            r.src_ports.push_back(uint16_t((record.captured[34] << 8) | record.captured[35]));
        }
        return r;
    }

    conf::CompiledPolicy compiled_;
};

// Three frames stamped together on each of two links: at 10G each link delivers its own
// three at 6, 7 and 8 us (the egress at 100G sends each 100 ns after it, the second link's
// right behind the first's); the same six frames in one capture share one link and arrive
// a microsecond apart, the last at 11 us.
TEST_F(MergedInputs, EachInputHasAnIngressLinkOfItsOwn) {
    write("a.pcap", {5'000, 5'000, 5'000}, 1000);
    write("b.pcap", {5'000, 5'000, 5'000}, 2000);
    write("ab.pcap", {5'000, 5'000, 5'000, 5'000, 5'000, 5'000}, 1000);
    const Result merged = replay({{"a.pcap", 1}, {"b.pcap", 1}}, 10'000'000'000ULL);
    EXPECT_EQ(merged.departures, (std::vector<uint64_t>{6'100, 6'200, 7'100, 7'200, 8'100, 8'200}));
    // On equal arrivals the earlier input goes first.
    EXPECT_EQ(merged.src_ports, (std::vector<uint64_t>{1000, 2000, 1000, 2000, 1000, 2000}));
    const Result one = replay({{"ab.pcap", 1}}, 10'000'000'000ULL);
    EXPECT_EQ(one.departures, (std::vector<uint64_t>{6'100, 7'100, 8'100, 9'100, 10'100, 11'100}));
}

// The inputs share one clock: the earliest first record of them all is time zero of every
// ingress link, so a capture that starts later keeps its offset (here 3 us).
TEST_F(MergedInputs, InputsKeepTheirRelativeTiming) {
    write("a.pcap", {1'000'000, 1'000'000}, 1000);
    write("b.pcap", {1'003'000}, 2000);
    const Result r = replay({{"b.pcap", 1}, {"a.pcap", 0}}, 10'000'000'000ULL);
    EXPECT_EQ(r.departures, (std::vector<uint64_t>{1'001'100, 1'002'100, 1'004'100}));
    EXPECT_EQ(r.src_ports, (std::vector<uint64_t>{1000, 1000, 2000}));
}

// Without ingress links the records arrive at their timestamps, merged in time order: the same
// departures as one capture holding them all in order.
TEST_F(MergedInputs, WithoutIngressLinksTheMergeIsInTimeOrder) {
    write("a.pcap", {1'000, 4'000, 9'000}, 1000);
    write("b.pcap", {2'000, 3'000, 10'000}, 1000);
    write("ab.pcap", {1'000, 2'000, 3'000, 4'000, 9'000, 10'000}, 1000);
    const Result merged = replay({{"a.pcap", 1}, {"b.pcap", 1}}, 0);
    const Result one = replay({{"ab.pcap", 1}}, 0);
    EXPECT_EQ(merged.departures, one.departures);
    EXPECT_EQ(merged.departures.size(), 6u);
}

// The classifier sees each input's ingress port: the rule on `gpu` takes only its records.
TEST_F(MergedInputs, EachInputArrivesOnItsPort) {
    write("a.pcap", {1'000, 2'000}, 1000);
    write("b.pcap", {1'500, 2'500, 3'500}, 2000);
    const Result r = replay({{"a.pcap", 0}, {"b.pcap", 1}}, 0);
    EXPECT_EQ(r.training_rx, 2u);
    EXPECT_EQ(r.other_rx, 3u);
    const Result swapped = replay({{"a.pcap", 1}, {"b.pcap", 0}}, 0);
    EXPECT_EQ(swapped.training_rx, 3u);
    EXPECT_EQ(swapped.other_rx, 2u);
}

// An empty capture among the inputs takes nothing away from the others.
TEST_F(MergedInputs, AnEmptyInputIsNoInput) {
    write("a.pcap", {1'000, 2'000}, 1000);
    write("empty.pcap", {}, 2000);
    const Result r = replay({{"empty.pcap", 1}, {"a.pcap", 0}}, 10'000'000'000ULL);
    EXPECT_EQ(r.departures, (std::vector<uint64_t>{2'100, 3'100}));
}

}  // namespace
}  // namespace twinlane::replay
