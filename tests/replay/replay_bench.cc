// Replay speed: input packets per second through the replay engine (classifier, scheduler,
// virtual link, report) for the default policy and the default generated AI mix, held in
// memory so that the number measures the engine rather than the disk. Compare disciplines
// side by side in one run: twinlane's tree against a single FIFO.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "control/compile.h"
#include "control/policy.h"
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

const control::CompiledPolicy& compiled() {
    static const control::CompiledPolicy c = [] {
        auto loaded = control::load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
        if (!loaded.ok()) std::abort();
        return control::compile_policy(*loaded.policy);
    }();
    return c;
}

// One long replay: each iteration offers the trace again, 20 ms later, to the same engine, so
// the number is the steady-state cost per input packet (set-up is paid once per replay).
void replay_steady_state(benchmark::State& state, bool fifo) {
    const Trace& t = trace();
    const control::CompiledEgress& egress = compiled().egress.at(0);
    classifier::Classifier classifier(compiled().classifier);
    std::unique_ptr<Discipline> discipline;
    if (fifo) {
        discipline = std::make_unique<FifoDiscipline>(20'000, 64u << 20);
    } else {
        discipline = std::make_unique<SchedulerDiscipline>(
            sched::Scheduler::build(egress.tree).scheduler,
            [&egress](uint8_t c, uint32_t j) { return egress.leaf_for(c, j); });
    }
    ReplayReport report(fifo ? "fifo" : "twinlane", 10'000'000'000ULL,
                        compiled().classifier.class_names, 1, 1'000'000);
    ReplayOptions options;
    options.keep_payload = false;
    ReplayEngine engine(options, classifier, *discipline, report, nullptr);
    const uint64_t span = t.timestamps.back() - t.timestamps.front() + 1'000'000;
    uint64_t offset = 0;
    PcapRecord record;
    for (auto _ : state) {
        for (size_t i = 0; i < t.frames.size(); ++i) {
            record.timestamp_ns = t.timestamps[i] + offset;
            record.wire_length = static_cast<uint32_t>(t.frames[i].size());
            record.captured = t.frames[i];
            engine.offer(record);
        }
        offset += span;
    }
    benchmark::DoNotOptimize(engine.finish());
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.frames.size()));
    state.counters["packets_per_run"] = static_cast<double>(t.frames.size());
}

void BM_ReplayTwinlane(benchmark::State& state) { replay_steady_state(state, false); }
void BM_ReplayFifo(benchmark::State& state) { replay_steady_state(state, true); }
BENCHMARK(BM_ReplayTwinlane)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayFifo)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinlane::replay

BENCHMARK_MAIN();
