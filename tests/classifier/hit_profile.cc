// Instruction counts of the flow-table hit path, for callgrind (the 2-vCPU VM is too noisy for
// timings to tell small changes apart):
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*run_bursts*'
//       build-cls/tests/classifier/classifier_hit_profile 4096 2000     (flows, bursts)
//   instructions per hit = Ir / (bursts * 32)
// Same traffic as classifier_bench's BM_HitPath_Burst: `flows` 64-byte UDP flows inserted in one
// order, then looked up in another; ageing off.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "classifier/classifier.h"
#include "tests/classifier/packet_builder.h"

namespace twinlane::classifier {
namespace {

constexpr uint32_t kFrameBytes = 64;

std::vector<uint8_t> frames(uint32_t count, uint32_t seed) {
    std::vector<uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    std::vector<uint8_t> bytes(size_t{count} * kFrameBytes);
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t flow = order[i];
        auto frame = testing::PacketBuilder()
                         .ethernet()
                         .ipv4({10, uint8_t(flow >> 16), uint8_t(flow >> 8), uint8_t(flow)},
                               {10, 200, uint8_t(flow % 7), uint8_t(flow % 251)}, 17)
                         .udp(uint16_t(1024 + flow % 50000), uint16_t(flow % 3 ? 8000 : 9999))
                         .payload(kFrameBytes - 42)
                         .build();
        std::copy(frame.begin(), frame.end(), bytes.begin() + ptrdiff_t(size_t{i} * kFrameBytes));
    }
    return bytes;
}

__attribute__((noinline)) uint64_t run_bursts(Classifier& classifier,
                                              const std::vector<const uint8_t*>& pointers,
                                              const std::vector<uint32_t>& lengths,
                                              uint32_t bursts) {
    Result out[kMaxBurst];
    uint64_t sum = 0;
    uint32_t next = 0;
    for (uint32_t b = 0; b < bursts; ++b) {
        classifier.classify_burst(&pointers[next], &lengths[next], kMaxBurst, 0, 1 + b, out);
        for (const Result& r : out)
            sum += r.class_id;
        next += kMaxBurst;
        if (next + kMaxBurst > pointers.size()) next = 0;
    }
    return sum;
}

}  // namespace
}  // namespace twinlane::classifier

int main(int argc, char** argv) {
    using namespace twinlane::classifier;
    const uint32_t flows = argc > 1 ? uint32_t(std::atoi(argv[1])) : 4096;
    const uint32_t bursts = argc > 2 ? uint32_t(std::atoi(argv[2])) : 2000;
    ClassifierConfig config = ClassifierConfig::defaults();
    config.flow_table_capacity = flows;
    config.aging_scan_per_burst = 0;
    Classifier classifier(config);
    const std::vector<uint8_t> warm = frames(flows, 1);
    const std::vector<uint8_t> hot = frames(flows, 2);
    std::vector<const uint8_t*> warm_pointers, pointers;
    for (uint32_t i = 0; i < flows; ++i) {
        warm_pointers.push_back(warm.data() + size_t{i} * kFrameBytes);
        pointers.push_back(hot.data() + size_t{i} * kFrameBytes);
    }
    const std::vector<uint32_t> lengths(flows, kFrameBytes);
    std::vector<Result> out(flows);
    classifier.classify_burst(warm_pointers.data(), lengths.data(), flows, 0, 0, out.data());
    const uint64_t sum = run_bursts(classifier, pointers, lengths, bursts);
    if (classifier.counters().flow_inserts != flows) {
        std::fprintf(stderr, "flows missed the cache\n");
        return 1;
    }
    std::printf("%u flows, %u bursts, checksum %llu\n", flows, bursts, (unsigned long long)sum);
    return 0;
}
