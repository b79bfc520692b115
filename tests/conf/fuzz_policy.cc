// libFuzzer harness over the policy language: any text in, and three properties checked.
//   1. parse_policy() returns a policy or errors, never crashes or throws, and every error
//      names the file and says why;
//   2. a policy it accepts compiles (compile_policy()'s errors are the loader's bugs: see
//      conf/compile.h);
//   3. the policy written back as a document (what `twinlanectl policy show` prints and every
//      runtime change re-parses) parses to the same policy (conf/policy_document.h);
//   4. a fixed mixed trace replayed through each of its egress trees (as `twinlane replay`
//      does, at the port's rate) accounts for every packet (tests/replay/checked_replay.h).
//      A tree whose scheduler would take more than kMaxTreeBytes is skipped: its packet pool
//      is sized by its limits, which may be large and are the operator's choice.
// Built with -Dfuzz=true under clang; see tests/conf/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy_document.h"
#include "tests/classifier/packet_builder.h"
#include "tests/fuzz_failure.h"
#include "tests/replay/checked_replay.h"

namespace {

using namespace twinlane;
using namespace twinlane::conf;

using twinlane::testing::fuzz_failure;

constexpr uint64_t kMaxTreeBytes = 64 << 20;

// 200 frames of every kind the classifier tells apart (a serving port's RPC responses, RoCEv2
// with DSCP 26, TCP bulk, other UDP, IPv6, a VLAN tag, a fragment), over 20 flows, 100 ns
// apart (far above any port), then 60 more after a 5 ms gap.
std::vector<std::vector<uint8_t>> trace_frames() {
    using classifier::testing::PacketBuilder;
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t i = 0; i < 260; ++i) {
        const uint8_t flow = static_cast<uint8_t>(i % 20);
        const classifier::testing::Ipv4Address a{198, 18, 0, flow}, b{198, 19, 0, 1};
        PacketBuilder frame;
        switch (flow % 7) {
            case 0:
                frame.ethernet()
                    .ipv4(a, b, 17)
                    .udp(50051, 40000 + flow)
                    .payload(100 + 9 * (i % 100));
                break;
            case 1:
                frame.ethernet()
                    .ipv4(a, b, 17, 26 << 2 | 2)
                    .udp(49152 + flow, 4791)
                    .bth(0x04, 17 + flow)
                    .payload(1024);
                break;
            case 2:
                frame.ethernet().ipv4(a, b, 6).tcp(5201, 40100 + flow).payload(1448);
                break;
            case 3:
                frame.ethernet().ipv4(a, b, 17).udp(7000, 7001).payload(300);
                break;
            case 4:
                frame.ethernet()
                    .ipv6(classifier::testing::ipv6(0x2001, flow),
                          classifier::testing::ipv6(0x2001, 1), 17)
                    .udp(8000, 40200)
                    .payload(200);
                break;
            case 5:
                frame.ethernet().vlan(100 | 3 << 13).ipv4(a, b, 6).tcp(40300, 50051).payload(64);
                break;
            default:
                frame.ethernet().ipv4(a, b, 17, 0, 0, 0x1234, 0, true).udp(7002, 7003).payload(500);
                break;
        }
        frames.push_back(frame.build());
    }
    return frames;
}

void replay_trace(const conf::CompiledPolicy& compiled, const conf::CompiledEgress& egress,
                  uint64_t rate_bps) {
    static const std::vector<std::vector<uint8_t>> frames = trace_frames();
    replay::testing::replay_checked(compiled, egress, rate_bps, 0, [&](auto& engine) {
        for (size_t i = 0; i < frames.size(); ++i) {
            replay::PcapRecord record;
            record.timestamp_ns = 100 * i + (i >= 200 ? 5'000'000 : 0);
            record.wire_length = static_cast<uint32_t>(frames[i].size());
            record.captured = frames[i];
            engine.offer(record);
        }
        engine.finish();
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const PolicyResult result = parse_policy(text, "fuzz.yaml");
    if (!result.ok()) {
        if (result.errors.empty()) fuzz_failure("no policy and no error", "");
        for (const PolicyError& error : result.errors) {
            if (error.file != "fuzz.yaml" || error.reason.empty())
                fuzz_failure("an error without its file or reason", error.to_string());
        }
        return 0;
    }
    const CompiledPolicy compiled = compile_policy(*result.policy);
    if (!compiled.ok())
        fuzz_failure("a policy the loader accepted does not compile", compiled.errors[0]);
    for (const conf::CompiledEgress& egress : compiled.egress) {
        if (sched::Scheduler::memory_bytes(egress.tree) > kMaxTreeBytes) continue;
        replay_trace(compiled, egress, result.policy->ports.at(egress.port).rate_bits_per_sec);
    }

    const nlohmann::json document = policy_document(*result.policy);
    const std::string rendered = render_yaml(document);
    const PolicyResult again = parse_policy(rendered, "rendered.yaml");
    if (!again.ok())
        fuzz_failure("the written-back policy does not load",
                     again.errors[0].to_string() + "\n" + rendered);
    const nlohmann::json document_again = policy_document(*again.policy);
    if (document_again != document)
        fuzz_failure("the written-back policy loads as another policy",
                     document.dump(1) + "\n---\n" + document_again.dump(1));
    return 0;
}
