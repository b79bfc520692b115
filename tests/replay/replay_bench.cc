// Replay speed: input packets per second through the replay engine (classifier, scheduler,
// virtual link, report) for the default policy and the default generated AI mix, held in
// memory so that the number measures the engine rather than the disk. Compare disciplines
// side by side in one run: twinlane's tree against a single FIFO.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy.h"
#include "replay/fifo_discipline.h"
#include "replay/replay_engine.h"
#include "replay/scheduler_discipline.h"
#include "replay/traffic_gen.h"

namespace twinlane::replay {
namespace {

struct Trace {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint64_t> timestamps;
};

const Trace& trace() {
    static const Trace t = [] {
        Trace trace;
        GenOptions options;
        options.duration_ns = 20'000'000;
        TrafficGenerator gen(options);
        GeneratedFrame frame;
        while (gen.next(frame)) {
            trace.frames.emplace_back(frame.bytes.begin(), frame.bytes.end());
            trace.timestamps.push_back(frame.timestamp_ns);
        }
        return trace;
    }();
    return t;
}

const conf::CompiledPolicy& compiled() {
    static const conf::CompiledPolicy c = [] {
        auto loaded = conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
        if (!loaded.ok()) std::abort();
        return conf::compile_policy(*loaded.policy);
    }();
    return c;
}

// One long replay: each iteration offers the trace again, 20 ms later, to the same engine, so
// the number is the steady-state cost per input packet (set-up is paid once per replay). The
// records are offered in bursts of 32, as a reader hands them out, to the engine instantiated
// for the concrete discipline (as `twinlane replay` does through replay_pcap()).
template <class D>
void replay_steady_state(benchmark::State& state, D& discipline, const char* name) {
    const Trace& t = trace();
    classifier::Classifier classifier(compiled().classifier);
    ReplayReport report(name, 10'000'000'000ULL, compiled().classifier.class_names, 1, 1'000'000);
    ReplayOptions options;
    options.keep_payload = false;
    BasicReplayEngine<D> engine(options, classifier, discipline, report, nullptr);
    const uint64_t span = t.timestamps.back() - t.timestamps.front() + 1'000'000;
    uint64_t offset = 0;
    constexpr size_t kBurst = 32;
    PcapRecord burst[kBurst];
    for (auto _ : state) {
        for (size_t i = 0; i < t.frames.size(); i += kBurst) {
            const size_t n = std::min(kBurst, t.frames.size() - i);
            for (size_t k = 0; k < n; ++k) {
                burst[k].timestamp_ns = t.timestamps[i + k] + offset;
                burst[k].wire_length = static_cast<uint32_t>(t.frames[i + k].size());
                burst[k].captured = t.frames[i + k];
            }
            engine.offer_burst(burst, n);
        }
        offset += span;
    }
    benchmark::DoNotOptimize(engine.finish());
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.frames.size()));
    state.counters["packets_per_run"] = static_cast<double>(t.frames.size());
}

void BM_ReplayTwinlane(benchmark::State& state) {
    const conf::CompiledEgress& egress = compiled().egress.at(0);
    auto built = SchedulerDiscipline::build(egress.tree, egress.leaves, egress.slo);
    replay_steady_state(state, *built.discipline, "twinlane");
}
void BM_ReplayFifo(benchmark::State& state) {
    FifoDiscipline discipline(20'000, 64u << 20);
    replay_steady_state(state, discipline, "fifo");
}
BENCHMARK(BM_ReplayTwinlane)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayFifo)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinlane::replay

BENCHMARK_MAIN();
