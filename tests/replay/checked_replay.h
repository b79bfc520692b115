// For the fuzz harnesses: one egress tree of a compiled policy replayed in virtual time as
// `twinlane replay` sets it up (the policy's classifier, twinlane's scheduler, its SLOs
// governed), fed by the caller, then checked: every record accounted for (rx = tx + dropped +
// queued at the end) and the report, with the SLO governor's part, written as JSON. A failed
// check aborts (libFuzzer reports it). Test-only.
#pragma once

#include <algorithm>
#include <string>

#include "conf/compile.h"
#include "replay/replay_engine.h"
#include "replay/replay_report.h"
#include "replay/scheduler_discipline.h"
#include "tests/fuzz_failure.h"

namespace twinlane::replay::testing {

// `feed(engine)` offers the records and finishes (or runs a reader, which finishes); a
// PcapError it throws passes through, unchecked (the input was refused).
template <class Feed>
void replay_checked(const conf::CompiledPolicy& policy, const conf::CompiledEgress& egress,
                    uint64_t link_rate_bps, uint64_t ingress_rate_bps, Feed feed) {
    // Small flow and fragment tables: zeroing the policy's per input would be most of the
    // run, and full tables (eviction) are paths worth fuzzing too.
    classifier::ClassifierConfig classifier_config = policy.classifier;
    classifier_config.flow_table_capacity =
        std::min<uint32_t>(classifier_config.flow_table_capacity, 256);
    classifier_config.fragment_cache_capacity = 16;
    classifier::Classifier classifier(classifier_config);
    auto built = SchedulerDiscipline::build(egress.tree, egress.leaves, egress.slo);
    if (!built.discipline)
        twinlane::testing::fuzz_failure("a compiled tree does not replay", built.error);
    SchedulerDiscipline& discipline = *built.discipline;
    classifier.set_held_flows(discipline.held_flows());

    const auto& classes = policy.classifier.class_names;
    ReplayReport report("twinlane", link_rate_bps, classes,
                        static_cast<uint8_t>(std::min<size_t>(1, classes.size() - 1)), 1'000'000);
    if (!egress.slo.empty()) report.track_shares_by_class();
    ReplayOptions options;
    options.link_rate_bps = link_rate_bps;
    options.ingress_rate_bps = ingress_rate_bps;
    options.keep_payload = false;
    options.max_frame_bytes = egress.tree.max_packet_bytes;
    BasicReplayEngine<SchedulerDiscipline> engine(options, classifier, discipline, report, nullptr);
    feed(engine);
    if (discipline.governor() != nullptr) report.set_slo(SloReport::from(*discipline.governor()));

    if (!report.accounts_for_every_packet()) {
        twinlane::testing::fuzz_failure("a packet not accounted for",
                                        report.to_json()["totals"].dump());
    }
    if (report.to_json().dump().empty()) twinlane::testing::fuzz_failure("an empty report", "");
}

}  // namespace twinlane::replay::testing
